"""Kernels built while the caller goes on: :func:`build_later` lowers a schedule and generates its C in the
calling thread, then hands the C compiler's run to a pool of threads, one per core, each waiting on its own
compiler process; :meth:`PendingKernel.result` waits for it and gives the :class:`~.kernel.Kernel`.

A graph's build lowers its next group while the compiler compiles the groups before it, and on two cores
two compilers run at once. Lowering stays in the calling thread: it holds the process's isl lock and
Python's interpreter lock, so more threads would only take turns. A C source (with its target) that is
already being compiled is not compiled again: the second request waits for the first compile, as a
source already loaded in this process or found in the kernel cache compiles never (:mod:`.build`).

This module schedules compiles; lowering, code generation, compiling and caching are the other modules'.
"""
from __future__ import annotations

import json
import os
import resource
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import Any, Callable, Sequence

from tesched.codegen.c import CSource
from tesched.config import settings
from tesched.driver.build import cache_key, compile_c, finished_source, lowered_function, make_kernel
from tesched.driver.kernel import Kernel
from tesched.lower.func import LoweredFunc
from tesched.schedule.schedule import Schedule
from tesched.target import Target, as_target
from tesched.te.tensor import Tensor

MakeKernel = Callable[[ModuleType, bool], Kernel]
"""``make(module, compiled)``: the kernel of a compiled module (and whether the compiler ran for it)."""

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_in_flight: dict[str, Future[tuple[ModuleType, bool]]] = {}


def compile_workers() -> int:
    """Compilers run at once: one per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compile_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(compile_workers(), thread_name_prefix="tesched-cc")
    return _pool


def _timed_compile(src_key: str, compile_job: "_CompileJob") -> tuple[ModuleType, bool]:
    started, children = time.perf_counter(), _children_seconds()
    try:
        return compile_c(compile_job.src, compile_job.target)
    finally:
        compile_job.seconds = time.perf_counter() - started
        compile_job.cpu = _children_seconds() - children
        with _lock:
            _in_flight.pop(src_key, None)


def _children_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


class _CompileJob:
    """One compile of a C source for a target, and its wall and compiler seconds once it ran."""

    def __init__(self, src: CSource, target: Target):
        self.src, self.target = src, target
        self.seconds = self.cpu = 0.0


class PendingKernel:
    """A kernel whose C is being compiled: :meth:`result` waits for the compiler and returns the kernel
    (raising the build's error, e.g. :class:`~tesched.errors.BuildError`, if it failed)."""

    def __init__(self, make: MakeKernel, job: _CompileJob | None, future: Future[Any],
                 lower_seconds: float, own_cpu: float, joined: bool):
        self._make, self._job, self._future, self._joined = make, job, future, joined
        self._lower_seconds, self._own_cpu = lower_seconds, own_cpu
        self._kernel: Kernel | None = None

    def done(self) -> bool:
        """Whether the compiler has finished (``result`` then returns at once)."""
        return self._kernel is not None or self._future.done()

    def failed(self) -> bool:
        """Whether the compile has finished with an error."""
        return self._future.done() and self._future.exception() is not None

    def add_done_callback(self, callback: "Callable[[], None]") -> None:
        """Call ``callback()`` when the compile finishes (at once if it has; from the compiling thread)."""
        self._future.add_done_callback(lambda _: callback())

    def result(self) -> Kernel:
        """The kernel, once compiled (and loaded)."""
        if self._kernel is None:
            module, compiled = self._future.result()
            compiled = compiled and not self._joined       # another build's compile of the same C ran
            kernel = self._make(module, compiled)
            log = settings().build_log
            if log is not None and self._job is not None:            # (None: built, and logged, already)
                record = {"kernel": kernel.name, "target": self._job.target.name, "lower_seconds": self._lower_seconds,
                          "finish_compile_seconds": self._job.seconds, "cpu_seconds": self._own_cpu + self._job.cpu,
                          "compiled": compiled, "c_lines": kernel.c_source.count("\n"), "background": True}
                with open(log, "a") as out:
                    out.write(json.dumps(record) + "\n")
            self._kernel = kernel
        return self._kernel


def already_built(kernel: Kernel) -> PendingKernel:
    """A :class:`PendingKernel` of a kernel built already (by :func:`tesched.build`)."""
    future: Future[Any] = Future()
    future.set_result(None)
    pending = PendingKernel(lambda module, compiled: kernel, None, future, 0.0, 0.0, False)
    pending._kernel = kernel
    return pending


def build_later(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None,
                target: Target | str | None = None, name: str = "default_function") -> PendingKernel:
    """:func:`tesched.driver.build.build` (CPU targets, no profiling) with the compiler run in the background.

    The schedule is lowered and its C generated now, in this thread (lowering errors raise here); the
    compile starts on a pool thread, or joins the compile of the same C already running. With
    ``TESCHED_BUILD_LOG`` set, ``result()`` logs the build; its compiler CPU seconds are those of the
    compiles that finished while it ran (exact when one compile runs at a time)."""
    machine = as_target(target)
    if machine.backend != "c":
        raise ValueError(f"build_later compiles for CPU targets, not {machine.name}: use build")
    started, cpu = time.perf_counter(), time.process_time()
    func = lowered_function(inputs, args, name, "build_later")
    src = finished_source(func, machine)
    return compile_later(src, machine, lambda module, compiled: make_kernel(func, src, module, compiled, machine),
                         time.perf_counter() - started, time.process_time() - cpu)


def compile_later(src: CSource, target: Target, make: MakeKernel, lower_seconds: float = 0.0,
                  own_cpu: float = 0.0) -> PendingKernel:
    """Compile (or find in the cache) ``src`` for ``target`` on a pool thread, or join the compile of the
    same C already running; ``make(module, compiled)`` turns the module into the kernel ``result()`` gives.
    ``lower_seconds`` and ``own_cpu`` (what producing ``src`` took) go to the build log."""
    key = cache_key(src, target)
    job = _CompileJob(src, target)
    with _lock:
        future = _in_flight.get(key)
        joined = future is not None
        if future is None:
            future = _in_flight[key] = _compile_pool().submit(_timed_compile, key, job)
    return PendingKernel(make, job, future, lower_seconds, own_cpu, joined)
