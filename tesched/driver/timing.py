"""Timing a callable: the median and minimum seconds per call over repeated, warmed-up runs.

Used by ``Kernel.benchmark`` and the graph executors' ``benchmark``. It measures one callable in
isolation; comparisons between libraries (interleaved, with spreads) live in :mod:`tesched.tools.bench`.
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
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - t0) / number)
    return BenchmarkResult(statistics.median(times), min(times), repeat)
