"""Run the suite: set one thread count everywhere, measure the peak, time the build, then check and time
each workload's variants (interleaved). Returns a :class:`SuiteResult`; printing is :mod:`.report`'s job.
"""
from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tesched as ts
from tesched.target import current_target
from tesched.tools.bench.build_times import BuildTime, measure_build_times
from tesched.tools.bench.catalog import workloads
from tesched.tools.bench.peak import NATIVE, Peak, measure_peak
from tesched.tools.bench.peers import describe_peers
from tesched.tools.bench.threads import optional_module, set_all_threads
from tesched.driver.timing import SETTLE_SECONDS, Timing, time_interleaved


@dataclass
class Row:
    """One workload's results: timings per variant label, kernels per tesched variant."""

    key: str
    name: str
    flops: float
    timings: dict[str, Timing]
    kernels: dict[str, int]
    note: str = ""


@dataclass
class SuiteResult:
    threads: int
    repeat: int
    quick: bool
    environment: dict[str, object]
    peak: dict[int, Peak] | None
    build_times: list[BuildTime]
    rows: list[Row] = field(default_factory=list)


def cpu_model() -> str:
    """The processor's name (``model name`` of /proc/cpuinfo; else what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def run_suite(threads: int | None = None, repeat: int = 50, quick: bool = False, only: list[str] | None = None,
              peak: bool = True, build: bool = True, use_torch: bool = True,
              progress: Callable[[str], None] = lambda _: None) -> SuiteResult:
    """Check and time every workload (or those whose key is in ``only``) with ``threads`` threads
    (default: all cores) and ``repeat`` interleaved rounds; ``quick`` uses tiny sizes."""
    threads = threads or os.cpu_count() or 1
    torch = optional_module("torch") if use_torch else None
    set_threads = set_all_threads(threads, torch)
    target = current_target()
    environment = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                   "numpy": np.__version__, "tesched": ts.__version__,
                   "torch": getattr(torch, "__version__", None), "threads_set": set_threads,
                   "target": target.name, "peers": describe_peers(torch), "load_average_start": _load()}
    peaks = None
    if peak:
        progress("peak FMA throughput")
        march = tuple(f for f in target.flags if f.startswith("-march")) if target.name != "host" else NATIVE
        peaks = measure_peak((1, threads), quick=quick, march=march)
    build_results = []
    if build:
        progress("build times")
        build_results = measure_build_times([("add", 4), ("gemm", 64 if quick else 1024)])
    result = SuiteResult(threads, repeat, quick, environment, peaks, build_results)
    for workload in workloads():
        if only and workload.key not in only:
            continue
        started = time.perf_counter()
        case = workload.make(quick, torch)
        case.check()
        progress(f"{case.name}: built and checked in {time.perf_counter() - started:.1f} s, timing")
        timings = time_interleaved(case.variants, repeat, settle=0.0 if quick else SETTLE_SECONDS)
        result.rows.append(Row(workload.key, case.name, case.flops, timings, case.kernels, case.note))
    environment["load_average_end"] = _load()
    return result
