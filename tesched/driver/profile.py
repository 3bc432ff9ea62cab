"""Reading and measuring the timers of a kernel built with ``build(..., profile=True)``.

The instrumented C keeps, per timed region (the whole call, and each stage's produce block; see
:mod:`tesched.transform.profile`), the seconds spent and the number of times it ran. :func:`read_profile`
turns those counters into a :class:`Profile` per kernel call; :func:`measure_profile` calls the kernel and
an uninstrumented build of the same function in turns on the same arrays, so the profile also reports
what the timers cost (the overhead of instrumentation), with the median of every region over the calls.
Regions with the same label (copies of an
unrolled loop's body) are added up. This module runs kernels; it does not build them.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tesched.transform.profile import TimedRegion


@dataclass(frozen=True)
class RegionTime:
    """Time of one timed region per kernel call: ``seconds`` and how many times it ran (``runs``).
    ``parallel``: the region runs inside a parallel loop and ``seconds`` sums the threads' times."""

    label: str
    stage: str
    seconds: float
    runs: float
    parallel: bool


@dataclass(frozen=True)
class Profile:
    """Per-call times of a profiled kernel.

    Attributes
    ----------
    calls : int
        Kernel calls the counters cover.
    total : float
        Seconds per call inside the C function (the whole-function timer).
    regions : tuple of RegionTime
        Every produce block, outermost first.
    instrumented, plain : float or None
        Median seconds per call of the instrumented kernel and of the same kernel built without timers,
        measured in turns by :func:`measure_profile` (None when the counters come from other calls).
    """

    calls: int
    total: float
    regions: tuple[RegionTime, ...]
    instrumented: float | None = None
    plain: float | None = None

    @property
    def overhead(self) -> float | None:
        """Relative cost of the timers: instrumented / plain - 1 (None when not measured)."""
        if self.instrumented is None or not self.plain:
            return None
        return self.instrumented / self.plain - 1.0

    def __str__(self) -> str:
        lines = [f"{self.calls} calls, {self.total * 1e6:.1f} us per call inside C"]
        if self.instrumented is not None and self.plain:
            lines.append(f"timers cost {(self.instrumented / self.plain - 1) * 100:+.1f}% (instrumented "
                         f"{self.instrumented * 1e6:.1f} us, plain {self.plain * 1e6:.1f} us per call, medians)")
        for r in self.regions:
            summed = " (summed over threads)" if r.parallel else ""
            lines.append(f"  {r.label}: {r.seconds * 1e6:.1f} us{summed}, {r.runs:g} runs per call")
        return "\n".join(lines)


def read_profile(reader: Callable[..., None], ffi: Any, regions: Sequence[TimedRegion], reset: bool = False) -> Profile:
    """The counters of a profiled kernel as a :class:`Profile` (``reset`` zeroes them after reading).

    Parameters
    ----------
    reader : callable
        The kernel module's counter reader ``(double *, int64_t *, int64_t)``.
    ffi : cffi.FFI
        The kernel module's FFI (to allocate the output arrays).
    regions : sequence of TimedRegion
        What each counter slot times (slot 0: the whole call).
    reset : bool
        Zero the counters after reading them.

    Returns
    -------
    Profile
        Seconds per call of every region (zero when the kernel has not run).
    """
    n = len(regions)
    seconds, runs = ffi.new("double[]", n), ffi.new("int64_t[]", n)
    reader(seconds, runs, 1 if reset else 0)
    calls = int(runs[0])
    per_call = max(calls, 1)
    merged: dict[str, list] = {}
    for region in regions[1:]:
        entry = merged.setdefault(region.label, [region, 0.0, 0])
        entry[1] += seconds[region.slot]
        entry[2] += runs[region.slot]
    times = tuple(RegionTime(r.label, r.stage, s / per_call, c / per_call, r.parallel) for r, s, c in merged.values())
    return Profile(calls, seconds[0] / per_call, times)


def measure_profile(profiled: Callable[[], Any], plain: Callable[[], Any], read: Callable[[bool], Profile],
                    repeat: int = 20, warmup: int = 2) -> Profile:
    """Run a profiled kernel and its uninstrumented twin in turns and return the medians of those runs.

    The counters are read after every profiled call, so each region's time is its median over the calls
    (one slow call on a busy machine does not skew it).

    Parameters
    ----------
    profiled, plain : callable
        The two kernels prepared on the same arrays (``Kernel.prepare``).
    read : callable
        ``read(reset)``: the profiled kernel's counters (see :func:`read_profile`).
    repeat : int
        Timed calls of each.
    warmup : int
        Untimed calls of each first.

    Returns
    -------
    Profile
        Median per-call times of every region over the ``repeat`` profiled calls, and the medians of
        both kernels' call times.
    """
    for _ in range(warmup):
        plain()
        profiled()
    read(True)
    with_timers: list[float] = []
    without: list[float] = []
    counted: list[Profile] = []
    for k in range(repeat):
        for run, times in ((profiled, with_timers), (plain, without))[::1 if k % 2 else -1]:
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
            if run is profiled:
                counted.append(read(True))
    regions = tuple(RegionTime(r.label, r.stage, statistics.median(p.regions[k].seconds for p in counted), r.runs,
                               r.parallel) for k, r in enumerate(counted[0].regions))
    return Profile(repeat, statistics.median(p.total for p in counted), regions, statistics.median(with_timers),
                   statistics.median(without))
