"""Timing a callable: seconds per call over repeated runs (:func:`sample`, the one timing loop of a single
callable), and their median and minimum after warm-up calls (:func:`time_calls`).

Used by ``Kernel.benchmark``, the graph executors' ``benchmark``, the autoscheduler's measurements and the
demo. It measures one callable in isolation; comparisons between libraries (interleaved rounds of several
callables, with spreads) live in :mod:`tesched.tools.bench.timing`.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per call: the median and the minimum over ``repeat`` timings."""

    median: float
    min: float
    repeat: int

    def __str__(self) -> str:
        return f"median {self.median * 1e6:.1f} us, min {self.min * 1e6:.1f} us over {self.repeat} runs"


def sample(call: Callable[[], object], repeat: int, number: int = 1, budget: float = 0.0,
           limit: int = 1000) -> list[float]:
    """Seconds per call of ``call``: ``repeat`` timings of ``number`` calls each, then more while ``budget``
    seconds have not passed since the first, at most ``limit`` timings in all. No warm-up: call it first."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < limit and (len(times) < repeat or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - t0) / number)
    return times


def time_calls(call: Callable[[], object], repeat: int, number: int = 1, warmup: int = 1) -> BenchmarkResult:
    """Median and minimum seconds per call of ``call`` over ``repeat`` timings of ``number`` calls each,
    after ``warmup`` untimed calls.

    Parameters
    ----------
    call : callable
        What to time, called without arguments.
    repeat, number, warmup : int
        Timings, calls per timing, untimed calls first.

    Returns
    -------
    BenchmarkResult
    """
    for _ in range(warmup):
        call()
    times = sample(call, repeat, number, limit=repeat)
    return BenchmarkResult(statistics.median(times), min(times), repeat)
