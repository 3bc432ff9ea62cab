"""One thread count for every library the suite compares: tesched's OpenMP loops, PyTorch's intra-op
pool, and NumPy's BLAS (OpenBLAS, found among the loaded libraries and set through its own
``*_set_num_threads`` function, since NumPy has no API for it). Also the optional imports.
"""
from __future__ import annotations

import ctypes
import importlib
from types import ModuleType

import tesched as ts

_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
                 "openblas_set_num_threads")


def optional_module(name: str) -> ModuleType | None:
    """``import name``, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _loaded_blas_paths() -> list[str]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    return sorted(paths)


def set_blas_threads(n: int) -> bool:
    """Set the thread count of the OpenBLAS NumPy uses; False when it cannot be found."""
    for path in _loaded_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _BLAS_SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                return True
    return False


def set_all_threads(n: int, torch: ModuleType | None) -> dict[str, object]:
    """Use ``n`` threads in tesched, PyTorch (when given) and NumPy's BLAS; returns what was set."""
    ts.set_num_threads(n)
    done: dict[str, object] = {"tesched": ts.get_num_threads(), "numpy_blas": n if set_blas_threads(n) else "unknown"}
    if torch is not None:
        torch.set_num_threads(n)
        done["torch"] = torch.get_num_threads()
    return done
