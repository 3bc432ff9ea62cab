"""The instruction sets NumPy and PyTorch may use when the suite runs for a narrower target than the host.

``python -m tesched.bench --target x86-64-avx2`` builds every tesched kernel for AVX2. On an AVX-512 host
the peers would still run their AVX-512 kernels, so the comparison would not be what an AVX2 machine sees.
Their libraries pick their kernels when they load, from environment variables: OpenBLAS
(``OPENBLAS_CORETYPE``, NumPy's BLAS here), MKL (``MKL_ENABLE_INSTRUCTIONS``, PyTorch's BLAS), ATen
(``ATEN_CPU_CAPABILITY``), oneDNN (``ONEDNN_MAX_CPU_ISA``, PyTorch's convolutions) and NumPy's own loops
(``NPY_DISABLE_CPU_FEATURES``). :func:`peer_environment` gives the variables for a target, and the command
line re-runs itself in a child process with them (they must be set before NumPy is imported).
:func:`describe_peers` reads back what the loaded libraries chose.

This module sets nothing in its own process and imports neither NumPy nor PyTorch at import.
"""
from __future__ import annotations

import importlib
import os
from typing import Mapping

from tesched.config import variables_set
from tesched.target import Target

RESTRICTED = "TESCHED_BENCH_PEERS_RESTRICTED"
"""Set in the child process, whose peers are already restricted (so it does not re-run itself)."""

# the widest x86 instruction set a target's code uses -> the variables that hold the peers to it
_LIMITS: dict[str, dict[str, str]] = {
    "avx2": {"OPENBLAS_CORETYPE": "Haswell", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
             "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "sse4_2": {"OPENBLAS_CORETYPE": "Nehalem", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
               "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def _widest(features: frozenset[str]) -> str:
    return "avx512f" if "avx512f" in features else "avx2" if "avx2" in features else "sse4_2"


def _numpy_features_above(widest: str) -> list[str]:
    """NumPy's dispatched CPU features wider than ``widest`` (the names NPY_DISABLE_CPU_FEATURES takes)."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")        # NumPy 2
    except ImportError:
        umath = importlib.import_module("numpy.core._multiarray_umath")
    dispatch = getattr(umath, "__cpu_dispatch__", [])
    wider = ("AVX512", "X86_V4") if widest == "avx2" else ("AVX", "FMA", "F16C", "X86_V3", "X86_V4")
    return [f for f in dispatch if f.startswith(wider)]


def peer_environment(target: Target, host: Target | None = None) -> dict[str, str]:
    """The variables that hold NumPy and PyTorch to ``target``'s widest instruction set, empty when the
    host's is no wider (nothing to restrict) or ``target`` is not x86 SIMD code."""
    host = host or Target("host")
    mine, theirs = _widest(target.features), _widest(host.features)
    order = ["sse4_2", "avx2", "avx512f"]
    if target.backend != "c" or order.index(mine) >= order.index(theirs):
        return {}
    env = dict(_LIMITS[mine])
    disabled = _numpy_features_above(mine)
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    return env


def child_environment(target: Target, base: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The environment to re-run the suite in for ``target`` (``base`` plus :func:`peer_environment`), or
    None when this process needs no restriction or already is the restricted child."""
    base = dict(os.environ if base is None else base)
    extra = peer_environment(target)
    if not extra or base.get(RESTRICTED) == "1":
        return None
    return {**base, **extra, RESTRICTED: "1"}


def describe_target(environment: Mapping[str, object]) -> str:
    """One line: the target a suite's ``environment`` built tesched's kernels for, and what the peers used."""
    return f"tesched target: {environment.get('target', 'host')} | {environment.get('peers', 'peers: not recorded')}"


def describe_peers(torch: object | None = None) -> str:
    """What the loaded peers chose: the restricting variables set, OpenBLAS's core type, PyTorch's CPU
    capability."""
    names = [*_LIMITS["avx2"], "NPY_DISABLE_CPU_FEATURES"]
    set_here = variables_set(names)
    parts = [("peers restricted: " + ", ".join(f"{k}={v}" for k, v in set_here.items())) if set_here
             else "peers unrestricted (they use every instruction set of this CPU)"]
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
        cores = {str(info.get("architecture")) for info in threadpoolctl.threadpool_info()
                 if info.get("internal_api") == "openblas"}
        if cores:
            parts.append(f"OpenBLAS core {', '.join(sorted(cores))}")
    except ImportError:
        pass
    backends = getattr(torch, "backends", None)
    if backends is not None:
        parts.append(f"PyTorch CPU capability {backends.cpu.get_cpu_capability()}")
    return "; ".join(parts)
