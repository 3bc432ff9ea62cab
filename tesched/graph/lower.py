"""Compile one primitive function (a fused group) into one kernel, with one output per field when the
function returns a tuple.

The group's ops are declared with :mod:`tesched.nn` on placeholders named after the function's parameters,
scheduled with :func:`tesched.nn.default_schedule` (epilogue inlined, anchor computed inside the output's
loops; :func:`tesched.nn.gpu_default_schedule` for a GPU target, :func:`compile_gpu_primitive`), with ``ts.auto_schedule`` (``schedule="auto"``) or from a tuning database written by ``ts.tune``
(``schedule="tuned"``: the best record of the group's workload, else ``auto_schedule``), and built.
Kernels are memoised per process by the group's structure and types, so identical groups (the same conv
block repeated, or the same graph built twice) compile once; :func:`start_primitive` leaves the compiler
running in the background (:mod:`tesched.driver.background`) while the caller lowers the next group.
"""
from __future__ import annotations

import os
import time
from types import ModuleType

import tesched as ts
import tesched.nn as nn
from tesched.driver.background import PendingKernel, already_built, build_later, compile_later
from tesched.driver.build import cache_key, finished_source, make_kernel
from tesched.driver.threads import apply_configured_threads
from tesched.driver.gpu import GpuKernel
from tesched.driver.kernel import Kernel
from tesched.graph.dims import SizeVars
from tesched.graph.ir import Call, Function, Tuple, Var
from tesched.graph.kernel_index import RecalledKernel, group_key, recall, remember
from tesched.graph.visit import post_order
from tesched.lower.func import LoweredFunc
from tesched.nn.hints import size_hints
from tesched.target import Target, current_target
from tesched.te.tensor import ComputeOp, Tensor

_KERNELS: dict[str, PendingKernel] = {}
_GPU_KERNELS: dict[str, GpuKernel] = {}
SCHEDULES = ("default", "auto", "tuned")


def primitive_sizes(fn: Function) -> SizeVars:
    """The size variables of ``fn``'s dynamic dimensions (of its parameters and of its ops' attributes)."""
    calls = [n for n in post_order(fn.body) if isinstance(n, Call)]
    return SizeVars([p.tensor_type.extents for p in fn.params], [c.attrs for c in calls])


def declare_primitive(fn: Function, sizes: SizeVars | None = None) -> tuple[list[Tensor], list[Tensor]]:
    """Placeholders for ``fn``'s parameters and the tensors its body computes (one, or a tuple's fields);
    a dynamic dimension becomes the size variable ``sizes`` gives it (by default, one of its own)."""
    sizes = sizes or primitive_sizes(fn)
    placeholders = [ts.placeholder(sizes.extents(p.tensor_type.extents), p.tensor_type.dtype, name=p.name)
                    for p in fn.params]
    values = {id(p): t for p, t in zip(fn.params, placeholders)}
    for node in post_order(fn.body):
        if isinstance(node, Call) and not isinstance(node.op, Function):
            values[id(node)] = node.op.declare([values[id(a)] for a in node.args], sizes.attrs(node.attrs))
        elif not isinstance(node, (Var, Tuple)) or (isinstance(node, Tuple) and node is not fn.body):
            raise TypeError(f"{fn.name}: a primitive function holds only calls of ops on its parameters, "
                            f"found a {type(node).__name__}")
    fields = fn.body.fields if isinstance(fn.body, Tuple) else (fn.body,)
    outs = [values[id(f)] for f in fields]
    if not all(isinstance(out.op, ComputeOp) for out in outs) or len({id(o.op) for o in outs}) != len(outs):
        raise TypeError(f"{fn.name}: its body returns a parameter or one value twice")
    return placeholders, outs


def check_schedule_choice(schedule: str, tuning_db: str | os.PathLike | None) -> None:
    """Raise ``ValueError`` unless ``schedule`` is one of :data:`SCHEDULES` (``tuned`` needs a database)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(map(repr, SCHEDULES))}, got {schedule!r}")
    if schedule == "tuned" and tuning_db is None:
        raise ValueError("schedule='tuned' needs tuning_db= (a database written by ts.tune)")


def compile_primitive(fn: Function, schedule: str = "default", tuning_db: str | os.PathLike | None = None) -> Kernel:
    """The kernel computing primitive function ``fn`` (compiled once per structure, schedule choice and
    target)."""
    return start_primitive(fn, schedule, tuning_db).result()


def start_primitive(fn: Function, schedule: str = "default",
                    tuning_db: str | os.PathLike | None = None) -> PendingKernel:
    """:func:`compile_primitive` with the compiler run in the background (:mod:`tesched.driver.background`):
    ``fn`` is scheduled and lowered now; ``result()`` waits for its kernel. With the default schedules, a
    group whose C was remembered (:mod:`.kernel_index`) is not lowered at all. A build that failed is
    forgotten, so asking again retries it."""
    check_schedule_choice(schedule, tuning_db)
    machine = current_target()
    key = f"{schedule}:{tuning_db}:{machine.key}\n{fn.checked_type}\n{fn.body}"
    pending = _KERNELS.get(key)
    if pending is None:
        if schedule == "default":
            pending = _default_build(fn, key, machine)
        elif schedule == "auto":
            placeholders, outs = declare_primitive(fn)
            pending = build_later(ts.auto_schedule(outs[0] if len(outs) == 1 else outs), placeholders + outs,
                                  name=fn.name)
        else:                        # the tuning record is applied by ts.build, which compiles here
            placeholders, outs = declare_primitive(fn)
            chosen = outs[0] if len(outs) == 1 else [o.op for o in outs]
            pending = already_built(ts.build(ts.create_schedule(chosen), placeholders + outs, name=fn.name,
                                             tuned=tuning_db))
        _KERNELS[key] = pending
        pending.add_done_callback(lambda: _forget_failed(key, pending))
    return pending


def _lower_default(fn: Function) -> LoweredFunc:
    """``fn`` declared, scheduled with the default schedules and lowered. Dynamic dimensions are size
    variables whose schedule hints are their largest values (:mod:`tesched.nn.hints`)."""
    sizes = primitive_sizes(fn)
    placeholders, outs = declare_primitive(fn, sizes)
    with size_hints(sizes.hints()):
        return ts.lower(nn.default_schedule(outs), placeholders + outs, name=fn.name)


def _default_build(fn: Function, key: str, machine: Target) -> PendingKernel:
    """The default-schedule kernel of ``fn``: from the C remembered for it when there is some, else lowered
    (and its C remembered once it compiled)."""
    apply_configured_threads()
    index_key = group_key(key, machine)
    recalled = recall(index_key)
    if recalled is not None:
        src, signature = recalled

        def recalled_kernel(module: ModuleType, compiled: bool) -> Kernel:
            kernel = RecalledKernel(src, module, signature, lambda: _lower_default(fn))
            kernel.compiled, kernel.target, kernel.cache_key = compiled, machine, cache_key(src, machine)
            return kernel
        return compile_later(src, machine, recalled_kernel)
    started, cpu = time.perf_counter(), time.process_time()
    func = _lower_default(fn)
    built = finished_source(func, machine)

    def lowered_kernel(module: ModuleType, compiled: bool) -> Kernel:
        kernel = make_kernel(func, built, module, compiled, machine)
        remember(index_key, kernel, built.name, built.declaration, built.argv)
        return kernel
    return compile_later(built, machine, lowered_kernel, time.perf_counter() - started, time.process_time() - cpu)


def _forget_failed(key: str, pending: PendingKernel) -> None:
    if pending.failed() and _KERNELS.get(key) is pending:
        del _KERNELS[key]


def compile_gpu_primitive(fn: Function, target: Target, schedule: str = "default") -> GpuKernel:
    """The GPU kernel computing primitive function ``fn`` for ``target`` with the default GPU schedules
    (:func:`tesched.nn.gpu_default_schedule`) or, with ``schedule="auto"``, ``ts.auto_schedule``'s (sized for
    the device), compiled once per structure, target and kind of schedule."""
    key = f"{target.key}\n{schedule}\n{fn.checked_type}\n{fn.body}"
    kernel = _GPU_KERNELS.get(key)
    if kernel is None:
        placeholders, outs = declare_primitive(fn)
        s = ts.auto_schedule(outs, target=target) if schedule == "auto" else nn.gpu_default_schedule(outs, target)
        built = ts.build(s, placeholders + outs, target=target, name=fn.name)
        assert isinstance(built, GpuKernel), f"{target.name} is a GPU target"
        kernel = _GPU_KERNELS[key] = built
    return kernel
