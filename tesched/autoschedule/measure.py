"""Building and timing candidate schedules, on this machine or on any executor's workers.

A :class:`MeasureTask` carries the pipeline's tensors and one plan; :func:`measure` (a plain function,
so it can be sent to a process pool or a Dask worker) applies the plan to a fresh schedule, builds the
kernel, and times it on seeded random inputs. Timed runs take the host's measurement lock exclusively,
builds take it shared: on one host no timed run overlaps another timed run or a build (of this library,
in any process), while builds of different processes run side by side. A failure of any kind is returned as an error, never
raised. :func:`submit` accepts a ``concurrent.futures.Executor`` or a ``dask.distributed.Client``.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import statistics
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tesched.autoschedule.plan import Plan, apply_plan
from tesched.driver.build import build
from tesched.driver.timing import sample
from tesched.schedule.schedule import create_schedule
from tesched.te.expr import Param, Var
from tesched.te.tensor import ComputeOp, Operation, Tensor

MIN_REPEATS = 5
_BUILD_LOCK = threading.Lock()
"""Builds of one process run one at a time: the compiler driver changes the working directory."""
MEASURE_SECONDS = 0.3


@dataclass(frozen=True)
class MeasureTask:
    """What a worker needs: the outputs, the kernel arguments, a plan, the input seed and the target."""

    outputs: tuple[Operation, ...]
    args: tuple[Tensor, ...]
    plan: Plan
    seed: int = 0
    target: str = "host"


@dataclass(frozen=True)
class MeasureResult:
    """Median seconds per call (None on failure, with ``error``), and where it was measured."""

    seconds: float | None
    error: str | None
    host: str
    build_seconds: float = 0.0


def lock_path() -> Path:
    """The per-host measurement lock file (shared by every process of the host)."""
    return Path(tempfile.gettempdir()) / f"tesched-measure-{socket.gethostname()}.lock"


@contextlib.contextmanager
def host_lock(exclusive: bool) -> Iterator[None]:
    """Hold the host's measurement lock: exclusive to time, shared to build."""
    fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def random_inputs(args: Sequence[Tensor], seed: int) -> list[np.ndarray]:
    """Seeded inputs in [-1, 1) (integers in [0, 8)) and empty outputs, in argument order (runtime
    parameters listed among the arguments are skipped: see :func:`param_values`)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in args:
        if isinstance(t, Param):
            continue
        shape = tuple(int(d) for d in t.shape)
        if isinstance(t.op, ComputeOp):
            arrays.append(np.empty(shape, t.dtype))
        elif t.dtype.startswith("int"):
            arrays.append(rng.integers(0, 8, shape).astype(t.dtype))
        else:
            arrays.append((rng.random(shape) * 2 - 1).astype(t.dtype))
    return arrays


def param_values(params: Sequence[Var]) -> dict[str, object]:
    """A value for each runtime parameter of a measured kernel: ``True`` for a bool (the branch it guards
    runs), else 1 (a gain, a sigma, a shift that stays in range)."""
    return {p.name: True if p.dtype == "bool" else 1 for p in params}


def time_call(run: Callable[[], object], min_repeats: int = MIN_REPEATS,
              budget: float = MEASURE_SECONDS) -> float:
    """Median seconds of ``run`` over at least ``min_repeats`` calls, more while ``budget`` lasts."""
    run()
    return statistics.median(sample(run, min_repeats, budget=budget))


def measure(task: MeasureTask) -> MeasureResult:
    """Build ``task.plan`` and time it; every failure becomes an error string."""
    host = socket.gethostname()
    try:
        t0 = time.perf_counter()
        with host_lock(exclusive=False), _BUILD_LOCK:
            sch = create_schedule(list(task.outputs))
            apply_plan(sch, task.plan)
            kernel = build(sch, list(task.args), target=task.target, name="candidate")
        built = time.perf_counter() - t0
        run = kernel.prepare(*random_inputs(task.args, task.seed), **param_values(kernel.signature.scalars))
        with host_lock(exclusive=True):
            seconds = time_call(run)
        return MeasureResult(seconds, None, host, built)
    except Exception as err:  # a candidate's failure is data, not a crash of the search
        last = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
        where = f" ({last[0].name})" if last else ""
        return MeasureResult(None, f"{type(err).__name__}: {err}{where}"[:2000], host)


def submit(executor: Any, fn: Callable[[MeasureTask], MeasureResult], task: MeasureTask) -> Any:
    """Submit to a ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` (``pure=False``)."""
    if type(executor).__module__.startswith("distributed"):
        return executor.submit(fn, task, pure=False)
    return executor.submit(fn, task)


def result(future: Any, timeout: float) -> MeasureResult:
    """The future's result, or a failed result after ``timeout`` seconds (the worker may go on)."""
    try:
        return future.result(timeout=timeout)
    except Exception as err:  # TimeoutError (any executor's), a cancelled or lost worker
        kind = "timed out" if "imeout" in type(err).__name__ else f"{type(err).__name__}: {err}"
        return MeasureResult(None, f"{kind} after {timeout:.0f} s" if kind == "timed out" else kind,
                             socket.gethostname())
