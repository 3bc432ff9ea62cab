"""How many threads ``parallel`` loops use: ``set_num_threads`` / ``get_num_threads``.

Kernels run their parallel loops with OpenMP (libgomp, which they link). OpenMP keeps the thread count
per calling thread, so a count set in one Python thread would not reach kernels called from another;
tesched keeps one process-wide count instead (like PyTorch's ``torch.set_num_threads``) and every
kernel call applies it in its calling thread when it changed (:func:`sync_thread`, one attribute read
when nothing changed). The count must lie in ``1..max_threads()``: libgomp aborts the process when asked
for tens of thousands of threads. ``TESCHED_NUM_THREADS`` (see :mod:`tesched.config`) is applied when
the first kernel is built, not at import. A :class:`~tesched.target.Target` with ``threads=`` fixes the
count in the generated code instead.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading

from tesched.config import settings


@functools.lru_cache(maxsize=None)
def _openmp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


class _Requested:
    """The process-wide thread count (None: OpenMP's default) and how often it was changed."""

    count: int | None = None
    generation = 0


_requested = _Requested()
_applied = threading.local()
_lock = threading.Lock()


def max_threads() -> int:
    """The largest thread count :func:`set_num_threads` accepts: 4 per core, at least 64."""
    return max(64, 4 * (os.cpu_count() or 1))


def _validated(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what}: the number of threads must be an int, got {type(n).__name__} {n!r}")
    if not 1 <= n <= max_threads():
        raise ValueError(f"{what}: the number of threads must be between 1 and {max_threads()} "
                         f"(4 per core), got {n}")
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in the ``parallel`` loops of every kernel, called from any thread.

    Parameters
    ----------
    n : int
        A number of threads between 1 and ``tesched.driver.threads.max_threads()`` (4 per core, at least 64).

    Example
    -------
    >>> import tesched as ts
    >>> ts.set_num_threads(2); ts.get_num_threads()
    2
    """
    n = _validated(n, "set_num_threads")
    if _openmp() is None:
        raise RuntimeError("set_num_threads: the OpenMP runtime (libgomp) was not found")
    with _lock:
        _requested.count = n
        _requested.generation += 1
    sync_thread()


def sync_thread() -> None:
    """Apply the process-wide count in the calling thread if it changed since this thread last ran a
    kernel (called before every kernel call)."""
    if getattr(_applied, "generation", 0) == _requested.generation:
        return
    count, generation = _requested.count, _requested.generation
    lib = _openmp()
    if count is not None and lib is not None:
        lib.omp_set_num_threads(count)
    _applied.generation = generation


def get_num_threads() -> int:
    """How many threads a ``parallel`` loop uses (in kernels called from any thread)."""
    sync_thread()
    lib = _openmp()
    return int(lib.omp_get_max_threads()) if lib is not None else 1


@functools.lru_cache(maxsize=None)
def apply_configured_threads() -> None:
    """Apply ``TESCHED_NUM_THREADS`` once (called before the first kernel is built)."""
    n = settings().num_threads
    if n is not None:
        set_num_threads(_validated(n, "TESCHED_NUM_THREADS"))
