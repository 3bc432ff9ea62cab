"""``build``: lower a schedule (or take a lowered function), finish it for a target, generate C, compile
it through the cache, and return a :class:`~tesched.driver.kernel.Kernel`.

This module orchestrates; the lowering, the C generator, the compiler and the cache do the work.
"""
from __future__ import annotations

import functools
import json
import resource
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Literal, Sequence, overload

from tesched.codegen.c import CSource, generate_c
from tesched.config import settings
from tesched.driver.cache import entry_key, entry_problem, module_path, remove_entry, store
from tesched.driver.compiler import (
    LINK_FLAGS,
    compile_module,
    compiler_id,
    load_module,
    reserved_identifiers,
    runtime_text,
)
from tesched.driver.gpu import GpuKernel, build_gpu
from tesched.driver.kernel import Kernel
from tesched.errors import BuildError
from tesched.driver.threads import apply_configured_threads
from tesched.lower.func import LoweredFunc
from tesched.lower.pipeline import lower, lower_for_target
from tesched.schedule.schedule import Schedule
from tesched.target import Target, as_target
from tesched.te.tensor import Tensor
from tesched.transform.profile import TimedRegion, instrument
from tesched.version import __version__

_loaded: dict[str, ModuleType] = {}


def cache_key(src: CSource, target: Target) -> str:
    """The cache key of a kernel's C source compiled for ``target``."""
    return entry_key(src.source, src.declaration, target.key, " ".join(LINK_FLAGS), compiler_id(target.compiler),
                     runtime_text(), __version__)


def compile_c(src: CSource, target: Target) -> tuple[ModuleType, bool]:
    """The loaded cffi module for ``src`` and whether the compiler ran."""
    key = cache_key(src, target)
    module_name = f"_tesched_{key[:24]}"
    if module_name in _loaded:
        return _loaded[module_name], False
    path = module_path(module_name)
    module = None
    if entry_problem(path) is None:
        try:
            module = load_module(module_name, path, src.name, src.name)
        except BuildError:
            module = None           # verified bytes that do not load: rebuilt below
    compiled = module is None
    if module is None:
        remove_entry(path)
        module = store(path, lambda tmp: compile_module(module_name, src.source, src.declaration, target, tmp,
                                                        src.name),
                       lambda built: load_module(module_name, built, src.name, src.name))
    _loaded[module_name] = module
    return module, compiled


def lowered_function(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None, name: str,
                     primitive: str) -> LoweredFunc:
    """``inputs`` itself when it is lowered already, else the schedule lowered with ``args`` (which
    ``primitive``, the caller, then requires)."""
    if isinstance(inputs, LoweredFunc):
        return inputs
    if args is None:
        raise TypeError(f"{primitive}(schedule, args): args (the kernel's tensors) are required")
    return lower(inputs, args, name=name)


# A GPU target named by its string gives a GpuKernel; given as a Target object it is typed as the CPU's
# Kernel (mypy cannot see the backend of a Target value), hence the one overlap accepted below.
@overload
def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None,  # type: ignore[overload-overlap]
          target: Literal["opencl", "cuda"], name: str = ..., profile: bool = ...) -> GpuKernel: ...


@overload
def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None, target: Target | str | None = None,
          name: str = ..., profile: bool = ...) -> Kernel: ...


def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None,
          target: Target | str | None = None, name: str = "default_function",
          profile: bool = False) -> Kernel | GpuKernel:
    """Compile a schedule (or a lowered function) into a callable kernel.

    Parameters
    ----------
    inputs : Schedule or LoweredFunc
        What to compile: a schedule (lowered here) or the result of :func:`tesched.lower`.
    args : sequence of Tensor
        The kernel's arguments in call order (inputs and outputs); required with a schedule.
    target : Target or str, optional
        What to compile for (``"host"``, ``"x86-64-avx2"``, ``"c"``, ...); default: the current target.
        ``"opencl"`` and ``"cuda"`` give a :class:`~tesched.driver.gpu.GpuKernel` (loops bound with
        ``Stage.bind`` become the GPU's blocks and threads).
    name : str
        The kernel's name (and its C function's, made a valid identifier).
    profile : bool
        Instrument the C with timers around the call and every stage's produce block; read them with
        ``kernel.profile(*arrays)`` (which also measures their overhead) or ``kernel.profile_counters()``.

    Returns
    -------
    Kernel or GpuKernel
        Call it with NumPy arrays: ``f(inputs..., outputs...)`` or ``f(inputs...)``.
    """
    machine = as_target(target)
    started, cpu = time.perf_counter(), _cpu_seconds()
    func = lowered_function(inputs, args, name, "build")
    if machine.backend != "c":
        if profile:
            raise BuildError(f"build(..., profile=True) is for CPU targets, not {machine.name}")
        return build_gpu(func, machine)
    lowered = time.perf_counter()
    kernel = _build_c(func, machine, profile)
    log = settings().build_log
    if log is not None:
        _log_build(log, kernel, lowered - started, time.perf_counter() - lowered, _cpu_seconds() - cpu)
    return kernel


def _cpu_seconds() -> float:
    """CPU seconds used so far by this process and its finished children (the compiler)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _log_build(log: Path, kernel: Kernel, lowering: float, rest: float, cpu: float) -> None:
    """Append one JSON line about ``kernel``'s build to ``log`` (``TESCHED_BUILD_LOG``): wall seconds of
    lowering and of the rest, and CPU seconds of the whole build, the compiler's included (a loaded machine
    stretches the wall time, not the CPU time)."""
    record = {"kernel": kernel.name, "target": kernel.target.name if kernel.target else "", "lower_seconds": lowering,
              "finish_compile_seconds": rest, "cpu_seconds": cpu, "compiled": kernel.compiled,
              "c_lines": kernel.c_source.count("\n")}
    with open(log, "a") as out:
        out.write(json.dumps(record) + "\n")


def finished_source(func: LoweredFunc, machine: Target, profile: bool = False) -> CSource:
    """The C of ``func`` finished for ``machine`` (with ``profile``, timers around every stage: then the
    regions are those of :func:`_profiled`)."""
    return _profiled(func, machine, profile)[0]


def _profiled(func: LoweredFunc, machine: Target, profile: bool) -> tuple[CSource, list[TimedRegion]]:
    apply_configured_threads()
    finished = lower_for_target(func, machine)
    regions: list[TimedRegion] = []
    if profile:
        body, regions = instrument(finished.body, finished.name)
        finished = replace(finished, body=body)
    return generate_c(finished, reserved_identifiers(machine), machine), regions


def make_kernel(func: LoweredFunc, src: CSource, module: ModuleType, compiled: bool, machine: Target) -> Kernel:
    """The kernel of ``func`` whose C ``src`` compiled into ``module`` for ``machine``."""
    kernel = Kernel(func, src, module)
    kernel.compiled = compiled
    kernel.target = machine
    kernel.cache_key = cache_key(src, machine)
    return kernel


def _build_c(func: LoweredFunc, machine: Target, profile: bool) -> Kernel:
    src, regions = _profiled(func, machine, profile)
    module, compiled = compile_c(src, machine)
    kernel = make_kernel(func, src, module, compiled, machine)
    if profile:
        kernel.timed_regions = tuple(regions)
        kernel.uninstrumented = functools.partial(_build_c, func, machine, False)
    return kernel
