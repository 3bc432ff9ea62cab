"""The one timing module: every timing loop of tesched, its benchmarks and tools.

A single callable (:func:`sample`, the loop; :func:`time_calls`, its median and minimum after warm-up
calls) for ``Kernel.benchmark``, the graph executors' ``benchmark``, the autoscheduler's measurements and
the demo; and interleaved timing of several callables (:func:`time_interleaved`) for comparisons between
libraries, with spreads (:func:`spread`) and the warning that the machine was busy (:func:`busy_warning`).
Its loop, :func:`round_robin`, is also what the benchmarks with their own policy (no settling, one call a
block, their own warm-up) call: no benchmark keeps a timing loop of its own.

Interleaved timing: the variants of one workload are timed round after round, one block of calls each
per round, so that load from other processes falls on all of them alike. The order of the variants
turns by one every round, so no variant always runs right after the same other one (a library's thread
pool may still be spinning when the next variant starts).

A block holds enough calls to last about :data:`BLOCK_SECONDS` (measured once per variant), so that
microsecond-scale calls are not drowned by the timer, and each block starts with one untimed call that
wakes the variant's thread pool. Before each block the process waits :data:`SETTLE_SECONDS` (busy, so
the cores keep their clock): worker
threads of the library that ran before keep spinning for a while after their call (OpenBLAS's for about
0.1 s), and with two cores a spinning thread takes half of the machine from the next variant (a 2-thread
GEMM measured 9.6 ms right after a NumPy matmul, 5.4 ms after a 0.2 s pause). Per variant the result is the median and the minimum, over rounds, of
the seconds per call, and their spread (the interquartile range). This module knows nothing of workloads.

Before the first round every variant is warmed up (:func:`warm_up`): called until its first-call costs
(PyTorch's and OpenBLAS's initialisation, a thread pool starting, pages touched for the first time) are
paid, so that they do not land in a timed block (a quick run once reported 71833x against PyTorch from one
such call). :func:`busy` says which timings vary too much for their ratios to be trusted.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping


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


BLOCK_SECONDS = 2e-3
SETTLE_SECONDS = 0.2
MAX_CALLS_PER_BLOCK = 10_000
WARMUP_MIN_CALLS = 3
WARMUP_MAX_SECONDS = 2.0
BUSY_SPREAD = 0.25         # an interquartile range above this fraction of the median: the machine was busy


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one variant: median and minimum over ``rounds`` blocks of ``calls`` calls, and
    ``spread``, the interquartile range of the blocks (0 for fewer than two rounds), and the median
    processor time per call (all threads of the process; on a loaded machine it shows the work done where
    the wall clock also counts the waits)."""

    median: float
    min: float
    rounds: int
    calls: int
    spread: float = 0.0
    cpu_median: float = 0.0


def warm_up(call: Callable[[], object], max_seconds: float = WARMUP_MAX_SECONDS) -> int:
    """Call ``call`` until its cost has settled: at least :data:`WARMUP_MIN_CALLS` calls, and until the
    last two calls each took less than twice the fastest one (or ``max_seconds`` passed). Returns the
    number of calls made."""
    times: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while True:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        settled = len(times) >= WARMUP_MIN_CALLS and max(times[-2:]) < 2 * min(times)
        if settled or time.perf_counter() > deadline:
            return len(times)


def busy(timings: Mapping[str, Timing]) -> list[str]:
    """The labels whose spread exceeds :data:`BUSY_SPREAD` of their median (only timings of at least four
    rounds say so): other processes took the cores while they ran."""
    return [label for label, t in timings.items() if t.rounds >= 4 and t.spread > BUSY_SPREAD * t.median]


def busy_warning(groups: Mapping[str, Mapping[str, Timing]], load: object = None) -> list[str]:
    """Lines warning that the machine was busy when any timing of ``groups`` (name -> label -> timing)
    varies too much (:func:`busy`); empty when none does. ``load`` (the load averages) is quoted."""
    noisy = [f"{name}, {label}" for name, timings in groups.items() for label in busy(timings)]
    if not noisy:
        return []
    shown = "; ".join(noisy[:6]) + (f"; and {len(noisy) - 6} more" if len(noisy) > 6 else "")
    return [f"WARNING: the machine was busy: {len(noisy)} measurement(s) vary by more than {BUSY_SPREAD:.0%} of "
            f"their median (interquartile range){f', load average {load}' if load else ''}: {shown}.",
            "Their ratios are not reliable; rerun when the machine is quiet (OMP_WAIT_POLICY=passive helps "
            "when it cannot be)."]


def calls_per_block(call: Callable[[], object]) -> int:
    """How many calls of ``call`` take about :data:`BLOCK_SECONDS` (at least one), timed after a
    warm-up call."""
    call()
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, min(MAX_CALLS_PER_BLOCK, int(BLOCK_SECONDS / once)))


def _busy_wait(seconds: float) -> None:
    """Wait without sleeping: an idle core would clock down and wake the next variant slowly."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass(frozen=True)
class Samples:
    """Seconds per call of one variant, one entry per round: wall clock, and processor time (all threads)."""

    wall: list[float]
    cpu: list[float]


def round_robin(variants: Mapping[str, Callable[[], object]], rounds: int, number: int | Mapping[str, int] = 1,
                warmup: int = 0, rotate: bool = False, settle: float = 0.0, wake: bool = False) -> dict[str, Samples]:
    """The loop of interleaved timing: ``warmup`` untimed calls of every variant, then ``rounds`` rounds, in
    each of which every variant in turn times one block of ``number`` calls (its own count, for a mapping).

    ``rotate`` turns the order of the variants by one every round; ``settle`` seconds of busy waiting
    precede every block, and with ``wake`` one untimed call starts it. :func:`time_interleaved` uses all
    three; a benchmark with its own policy calls this loop directly."""
    for call in variants.values():
        for _ in range(warmup):
            call()
    samples = {label: Samples([], []) for label in variants}
    labels = list(variants)
    for round_ in range(rounds):
        turn = round_ % len(labels) if rotate and labels else 0
        for label in labels[turn:] + labels[:turn]:
            call = variants[label]
            if settle:
                _busy_wait(settle)
            if wake:
                call()
            n = number if isinstance(number, int) else number[label]
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(n):
                call()
            samples[label].wall.append((time.perf_counter() - start) / n)
            samples[label].cpu.append((time.process_time() - cpu_start) / n)
    return samples


def time_interleaved(variants: Mapping[str, Callable[[], object]], rounds: int,
                     settle: float = SETTLE_SECONDS) -> dict[str, Timing]:
    """Time each variant over ``rounds`` rounds; in every round each variant runs one block in turn."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    for call in variants.values():
        warm_up(call)
    calls = {label: calls_per_block(call) for label, call in variants.items()}
    samples = round_robin(variants, rounds, calls, rotate=True, settle=settle, wake=True)
    return {label: Timing(statistics.median(s.wall), min(s.wall), rounds, calls[label], spread(s.wall),
                          statistics.median(s.cpu))
            for label, s in samples.items()}


def spread(times: list[float]) -> float:
    """The interquartile range of ``times`` (0 for fewer than two)."""
    if len(times) < 2:
        return 0.0
    low, _, high = statistics.quantiles(times, n=4)
    return high - low
