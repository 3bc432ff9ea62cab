"""How many threads ``parallel`` loops use: ``set_num_threads`` / ``get_num_threads``.

Kernels run their parallel loops with OpenMP (libgomp, which they link). ``set_num_threads(n)`` sets the
thread count through that runtime; ``TESCHED_NUM_THREADS`` (see :mod:`tesched.config`) is applied when the
first kernel is built, not at import. Nested parallel loops run on one thread (OpenMP's default), so they
never oversubscribe the machine. A :class:`~tesched.target.Target` with ``threads=`` fixes the count in
the generated code instead.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

from tesched.config import settings


@functools.lru_cache(maxsize=None)
def _openmp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in the ``parallel`` loops of every kernel.

    Parameters
    ----------
    n : int
        A positive number of threads.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of threads must be a positive int, got {n!r}")
    lib = _openmp()
    if lib is None:
        raise RuntimeError("the OpenMP runtime (libgomp) was not found")
    lib.omp_set_num_threads(n)


def get_num_threads() -> int:
    """How many threads a ``parallel`` loop uses."""
    lib = _openmp()
    return int(lib.omp_get_max_threads()) if lib is not None else 1


@functools.lru_cache(maxsize=None)
def apply_configured_threads() -> None:
    """Apply ``TESCHED_NUM_THREADS`` once (called before the first kernel is built)."""
    n = settings().num_threads
    if n is not None:
        set_num_threads(n)
