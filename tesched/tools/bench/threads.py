"""One thread count for every library the suite compares: tesched's OpenMP loops, PyTorch's intra-op
pool, and NumPy's BLAS (through ``threadpoolctl``, which finds the BLAS and OpenMP runtimes loaded in the
process and sets their thread counts). Also the optional imports, and the report of which thread pools
the process has loaded (library, version, threads), printed by the suite and the benchmarks.

``threadpoolctl`` is in the ``bench`` extra (``pip install tesched[bench]``); without it NumPy's BLAS
keeps its own thread count, and the suite says so before it starts.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Mapping

import tesched as ts

BENCH_EXTRA = "pip install tesched[bench]"
_limits: list[Any] = []          # the active threadpool_limits (kept so that the limits stay applied)


def optional_module(name: str) -> ModuleType | None:
    """``import name``, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def set_blas_threads(n: int) -> bool:
    """Use ``n`` threads in the BLAS library NumPy loaded; False when threadpoolctl is not installed or
    finds no BLAS."""
    threadpoolctl = optional_module("threadpoolctl")
    if threadpoolctl is None:
        return False
    limits = threadpoolctl.threadpool_limits(limits=n, user_api="blas")
    _limits[:] = [limits]
    return any(info.get("user_api") == "blas" for info in threadpoolctl.threadpool_info())


def thread_pools() -> list[dict[str, object]]:
    """The BLAS and OpenMP libraries loaded in this process, with their version and thread count (empty
    without threadpoolctl)."""
    threadpoolctl = optional_module("threadpoolctl")
    if threadpoolctl is None:
        return []
    return [{key: info.get(key) for key in ("user_api", "internal_api", "version", "num_threads", "filepath")}
            for info in threadpoolctl.threadpool_info()]


def describe_thread_pools(pools: list[dict[str, object]]) -> str:
    """One line per loaded thread pool (``blas openblas 0.3.27: 2 threads``), or why there is none."""
    if not pools:
        return f"thread pools: unknown (threadpoolctl is not installed: {BENCH_EXTRA})"
    return "\n".join(f"thread pool: {p['user_api']} {p['internal_api']} {p['version']}: {p['num_threads']} threads"
                     for p in pools)


def recorded_pools(environment: Mapping[str, object]) -> list[dict[str, object]]:
    """The thread pools a suite's ``environment`` recorded (``threads_set["pools"]``, see
    :func:`set_all_threads`); empty when it recorded none."""
    threads_set = environment.get("threads_set", {})
    pools = threads_set.get("pools", []) if isinstance(threads_set, dict) else []
    return pools if isinstance(pools, list) else []


def set_all_threads(n: int, torch: ModuleType | None) -> dict[str, object]:
    """Use ``n`` threads in tesched, PyTorch (when given) and NumPy's BLAS; returns what was set."""
    ts.set_num_threads(n)
    done: dict[str, object] = {"tesched": ts.get_num_threads(), "numpy_blas": n if set_blas_threads(n) else "unknown"}
    if torch is not None:
        torch.set_num_threads(n)
        done["torch"] = torch.get_num_threads()
    done["pools"] = thread_pools()
    return done
