"""Cold and cached build times, in a private, empty kernel cache (``TESCHED_CACHE_DIR``).

For two kernels, the tiny add of the call-overhead row and the default-scheduled GEMM, it times
``ts.build`` from declaration on: cold (the compiler runs), cached in the same process (lowering runs
again, the compiled module is reused), and cached in a new process (``python -m
tesched.tools.bench.build_times PROBE NAME SIZE`` rebuilds it from the disk cache, for the same target,
and prints the seconds). Kernel names carry a fresh suffix, so no module loaded earlier in the process is reused.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from unittest import mock

import tesched as ts
import tesched.nn as nn
from tesched.driver.kernel import Kernel
from tesched.target import current_target


@dataclass(frozen=True)
class BuildTime:
    """Seconds to declare, schedule and build one kernel."""

    kernel: str
    cold: float
    cached_same_process: float
    cached_new_process: float


def build_probe(kind: str, name: str, size: int) -> Kernel:
    """The probe kernel ``kind`` (``"add"``: ``C = A + B``; ``"gemm"``: ``nn.matmul``) of ``size``."""
    if kind == "add":
        a, b = ts.placeholder((size,), name="A"), ts.placeholder((size,), name="B")
        c = ts.compute((size,), lambda i: a[i] + b[i], name="C")
        return ts.build(ts.create_schedule(c.op), [a, b, c], name=name)
    if kind == "gemm":
        a, b = ts.placeholder((size, size), name="A"), ts.placeholder((size, size), name="B")
        c = nn.matmul(a, b)
        return ts.build(nn.default_schedule(c), [a, b, c], name=name)
    raise ValueError(f"unknown probe kernel {kind!r}")


def _timed_build(kind: str, name: str, size: int) -> tuple[float, bool]:
    start = time.perf_counter()
    kernel = build_probe(kind, name, size)
    return time.perf_counter() - start, kernel.compiled


def measure_build_times(probes: list[tuple[str, int]]) -> list[BuildTime]:
    """Build times of each ``(kind, size)`` probe in a fresh cache directory."""
    results = []
    with tempfile.TemporaryDirectory(prefix="tesched-build-") as cache, \
            mock.patch.dict(os.environ, {"TESCHED_CACHE_DIR": cache}):
        for kind, size in probes:
            name = f"probe_{kind}_{uuid.uuid4().hex[:8]}"
            cold, compiled = _timed_build(kind, name, size)
            warm, recompiled = _timed_build(kind, name, size)
            if not compiled or recompiled:
                raise RuntimeError(f"build probe {name}: the cold build must compile and the cached one not")
            child = subprocess.run([sys.executable, "-m", __name__, kind, name, str(size)], capture_output=True,
                                   text=True, check=True, env=dict(os.environ, TESCHED_TARGET=current_target().name))
            fresh = json.loads(child.stdout.strip().splitlines()[-1])
            if fresh["compiled"]:
                raise RuntimeError(f"build probe {name}: a new process did not find the kernel on disk")
            results.append(BuildTime(f"{kind} {size}", cold, warm, fresh["seconds"]))
    return results


if __name__ == "__main__":
    seconds, was_compiled = _timed_build(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    print(json.dumps({"seconds": seconds, "compiled": was_compiled}))
