"""What the host machine offers the generated code: SIMD width and thread count.

The SIMD width comes from the CPU flags (AVX-512: 64 bytes, AVX2: 32, otherwise 16) and can be forced
with ``TESCHED_VECTOR_BYTES``. Threads: ``set_num_threads(n)`` (or ``TESCHED_NUM_THREADS``/
``OMP_NUM_THREADS`` before the first kernel runs) sets how many threads ``parallel`` loops use, through
the OpenMP runtime the kernels link. Nested parallel loops run on one thread (OpenMP's default), so they
never oversubscribe the machine.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def vector_bytes() -> int:
    """Bytes in one SIMD register of the host."""
    forced = os.environ.get("TESCHED_VECTOR_BYTES")
    if forced:
        value = int(forced)
        if value not in (16, 32, 64):
            raise ValueError("TESCHED_VECTOR_BYTES must be 16, 32 or 64")
        return value
    flags = cpu_flags()
    if "avx512f" in flags:
        return 64
    if "avx2" in flags:
        return 32
    return 16


@functools.lru_cache(maxsize=None)
def _openmp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in ``parallel`` loops of every kernel (from the calling thread on)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of threads must be a positive int, got {n!r}")
    lib = _openmp()
    if lib is None:
        raise RuntimeError("the OpenMP runtime (libgomp) was not found")
    lib.omp_set_num_threads(n)


def get_num_threads() -> int:
    """How many threads a ``parallel`` loop uses."""
    lib = _openmp()
    return int(lib.omp_get_max_threads()) if lib is not None else 1


if os.environ.get("TESCHED_NUM_THREADS"):
    set_num_threads(int(os.environ["TESCHED_NUM_THREADS"]))
