"""Run the three fuzzers with a profile's case counts, and report the figures and the failures.

A failure is a case whose status is in :data:`.runner.FAILURES` (or a schedule that took longer than
:data:`.schedules.SLOW_LOWERING_S` CPU seconds to lower), unless the fuzzer lists it as open (an issue item still to
fix); an open case that passes is reported too, so the list is kept short and true.
"""
from __future__ import annotations

import math
import os
import shutil
import statistics
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import misuse, mutations
from .runner import Tally, run_cases
from .schedules import SLOW_LOWERING_S


@dataclass(frozen=True)
class Profile:
    schedules: int
    mutations: int
    misuse: int
    first: int = 0                  # first case number (another start draws other cases)
    target: str = ""                # TESCHED_TARGET of every kernel built ("": the default, this host)


QUICK = Profile(schedules=80, mutations=400, misuse=len(misuse.ROWS))
LONG = Profile(schedules=2400, mutations=12000, misuse=len(misuse.ROWS))
# gcc's code paths without AVX-512 (its vectorizer chooses other instructions, and was wrong there once)
QUICK_AVX2 = Profile(schedules=40, mutations=200, misuse=0, target="x86-64-avx2")


def open_reason(kind: str, record: dict) -> str | None:
    """The issue item a failing case is waiting for, or None if it is a new failure."""
    if kind == "misuse":
        return misuse.OPEN.get(record.get("label", ""))
    if kind == "mutations":
        return mutations.OPEN.get((record.get("target", ""), record.get("mutation", "")))
    return None


def _run(kind: str, count: int, first: int, jobs: int, env: dict, progress: bool) -> Tally:
    if count <= 0:
        return Tally(kind)
    first = 0 if kind == "misuse" else first
    bounds = [first + count * k // jobs for k in range(jobs + 1)]
    with ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda k: run_cases(kind, bounds[k], bounds[k + 1], env=env, progress=progress),
                              range(jobs)))
    total = Tally(kind)
    for part in parts:
        total.statuses.update(part.statuses)
        total.failures += part.failures
        total.lower_times += part.lower_times
        total.lower_cpu_times += part.lower_cpu_times
        total.rejections.update(part.rejections)
    return total


def run(profile: Profile, jobs: int = 1, progress: bool = False) -> dict[str, Tally]:
    """Run every fuzzer of ``profile`` with kernels cached in a temporary directory."""
    cache = tempfile.mkdtemp(prefix="tesched-fuzz-")
    env = {"TESCHED_CACHE_DIR": os.environ.get("TESCHED_FUZZ_CACHE_DIR", cache), "OMP_WAIT_POLICY": "passive"}
    if profile.target:
        env["TESCHED_TARGET"] = profile.target
    try:
        return {kind: _run(kind, getattr(profile, kind), profile.first, jobs, env, progress)
                for kind in ("schedules", "mutations", "misuse")}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def unexpected(tallies: dict[str, Tally], count_slow: bool = True) -> list[dict]:
    """Failures that no open issue item accounts for, and open cases that now pass. ``count_slow=False``
    leaves out cases that only took long to lower (the test suite reports those without failing: a
    wall-clock time depends on the machine; a hang still fails, by the child process' timeout)."""
    out = []
    for kind, tally in tallies.items():
        out += [{"kind": kind, **f} for f in tally.failures if open_reason(kind, f) is None
                and (count_slow or f["status"] != "ok")]
    passing_open = {row.label for row in misuse.ROWS if row.label in misuse.OPEN} - \
        {f.get("label") for f in tallies["misuse"].failures}
    if tallies["misuse"].total == len(misuse.ROWS):
        out += [{"kind": "misuse", "label": label, "status": "open row passes: remove it from OPEN"}
                for label in sorted(passing_open)]
    return out


def report(tallies: dict[str, Tally]) -> str:
    lines = []
    for kind, tally in tallies.items():
        counts = ", ".join(f"{n} {status}" for status, n in sorted(tally.statuses.items()))
        lines.append(f"{kind}: {tally.total} cases ({counts})")
        opened = [f for f in tally.failures if open_reason(kind, f)]
        if opened:
            lines.append(f"  {len(opened)} failing cases wait for open issue items: "
                         + "; ".join(sorted({open_reason(kind, f) or "" for f in opened})))
        for what, times in (("CPU", sorted(tally.lower_cpu_times)), ("wall", sorted(tally.lower_times))):
            if times:
                lines.append(f"  lowering {what} time: median {statistics.median(times):.3f} s, "
                             f"p99 {times[math.ceil(0.99 * len(times)) - 1]:.3f} s, max {times[-1]:.3f} s, "
                             f"{sum(t > SLOW_LOWERING_S for t in times)} over {SLOW_LOWERING_S:g} s")
        for message, n in tally.rejections.most_common(5):
            lines.append(f"  rejected {n}x: {message}")
    return "\n".join(lines)
