"""``optimize`` and ``build``: bind parameters, run the default passes (``passes.DEFAULT_PASSES`` minus
the disabled ones, printing the graph after each when traced), group ops with ``fuse_ops``, and make an
:class:`~.executor.Executable`.

With ``fuse_ops`` disabled every op still becomes a primitive function of its own, so fused and unfused
executables run the same way and compare like for like.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Mapping, overload

import numpy as np

from tesched.errors import BuildError
from tesched.graph.executor import Executable
from tesched.graph.gpu_executor import GpuExecutable
from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Function
from tesched.graph.lower import check_schedule_choice
from tesched.graph.params import bind_params
from tesched.graph.passes import default_sequence, fuse_ops_with_report, print_trace
from tesched.target import Target, as_target

Trace = Callable[[str, Function], None]

#: Passes that choose CPU data layouts (SIMD-width weight panels, Winograd tiles, channel blocks sized by
#: the register file) for kernels that only the CPU schedules read: a build for a GPU target skips them,
#: and its kernels read the weights as declared (one thread per output element).
CPU_LAYOUT_PASSES = frozenset({"alter_op_layout"})


def _trace_callback(trace: bool | Trace | None) -> Trace | None:
    return print_trace if trace is True else (trace or None)


def optimize(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
             disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None) -> Function:
    """``f`` (with ``params`` bound) after the default passes; ``trace=True`` prints the graph after each."""
    if not isinstance(f, Function):
        raise TypeError(f"expected a graph Function, got {type(f).__name__}")
    if params:
        f = bind_params(f, params)
    return default_sequence(rules, disabled_passes)(f, _trace_callback(trace))


@overload
def build(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
          disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None, schedule: str = "default",
          tuning_db: str | os.PathLike | None = None, target: None = None,
          progress: bool | None = None) -> Executable: ...


@overload
def build(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
          disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None, schedule: str = "default",
          tuning_db: str | os.PathLike | None = None,
          target: Target | str | None = None, progress: bool | None = None) -> Executable | GpuExecutable: ...


def build(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
          disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None, schedule: str = "default",
          tuning_db: str | os.PathLike | None = None,
          target: Target | str | None = None, progress: bool | None = None) -> Executable | GpuExecutable:
    """Optimise ``f`` and compile one kernel per fused group. ``params`` binds named parameters to
    constants; ``rules`` are the fusion rules; ``disabled_passes`` names passes to skip (with
    ``"fuse_ops"`` every op is its own kernel); ``trace=True`` prints the graph after each pass. The
    executable keeps the graph after each pass in ``pass_history`` (``exe.to_html`` shows it).
    ``schedule`` schedules each group's kernel: ``"default"`` (the operator library's schedules),
    ``"auto"`` (``ts.auto_schedule``) or ``"tuned"`` (the best record of ``tuning_db``, a database written
    by ``ts.tune``, for the group's workload; ``auto_schedule`` where it has none). ``target`` (default:
    the current one) compiles for another target; ``"opencl"`` or ``"cuda"`` gives a
    :class:`~.gpu_executor.GpuExecutable` whose kernels have the default GPU schedules, or
    ``auto_schedule``'s for the device with ``schedule="auto"`` (and whose pipeline skips the CPU layout
    passes, ``CPU_LAYOUT_PASSES``; without ``rules``, two convolutions in a row then share a group,
    ``FusionRules(conv_chains=True)``, computed in one kernel). A group's kernel
    compiles in the background while the next group is lowered, one compiler per core; identical groups
    (and identical C) compile once. ``progress`` draws a bar of the kernels built (with tqdm, ``pip install
    tesched[progress]``): ``None`` when standard error is a terminal and the build lasts over a second,
    ``True`` always, ``False`` never (:mod:`.progress`). A dynamic dimension of an input
    (:class:`~.types.Dim`) builds once for its whole range, with the default CPU schedules only."""
    check_schedule_choice(schedule, tuning_db)
    machine = as_target(target)
    if machine.backend != "c" and schedule == "tuned":
        raise BuildError(f"schedule={schedule!r} is for CPU targets; {machine.name} takes the default GPU "
                         "schedules (schedule='default') or ts.auto_schedule's (schedule='auto')")
    dynamic = [p for p in f.params if p.tensor_type.is_dynamic] if isinstance(f, Function) else []
    if dynamic and (schedule != "default" or machine.backend != "c"):
        raise BuildError(f"input {dynamic[0].name} has a dynamic shape {dynamic[0].tensor_type}: dynamic "
                         f"dimensions build with the default CPU schedules, not schedule={schedule!r} for "
                         f"{machine.name}")
    with machine:
        return _build(f, params, rules, disabled_passes, trace, schedule, tuning_db, machine, progress)


def _build(f: Function, params: Mapping[str, np.ndarray] | None, rules: FusionRules | None,
           disabled_passes: Iterable[str], trace: bool | Trace | None, schedule: str,
           tuning_db: str | os.PathLike | None, machine: Target, progress: bool | None) -> Executable | GpuExecutable:
    disabled = set(disabled_passes) | (CPU_LAYOUT_PASSES if machine.backend != "c" else set())
    callback = _trace_callback(trace)
    history: list[tuple[str, Function]] = [("input", f)]

    def record(name: str, result: Function) -> None:
        history.append((name, result))
        if callback is not None:
            callback(name, result)

    if rules is None and machine.backend != "c" and schedule == "auto":
        rules = FusionRules(conv_chains=True)      # two convolutions in one kernel (autoschedule.gpu_chain)
    optimized = optimize(f, params, rules, disabled | {"fuse_ops"}, record)
    if "fuse_ops" in disabled:
        fused, report = fuse_ops_with_report(optimized, FusionRules.no_fusion())[0], None
    else:
        fused, report = fuse_ops_with_report(optimized, rules)
        record("fuse_ops", fused)
    exe = Executable(fused, report, schedule, tuning_db, progress) if machine.backend == "c" else \
        GpuExecutable(fused, report, machine, schedule)
    exe.pass_history = tuple(history)
    return exe
