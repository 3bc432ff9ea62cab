"""Which instruction set the GEMM micro-kernel is written for: AVX-512, AVX2 with FMA, or plain C.

The choice follows what the current :class:`~tesched.target.Target` offers (its features and SIMD width;
the host by default). ``TESCHED_INTRIN_ISA=avx512|avx2|c`` or the ``isa=`` argument of the intrinsic
constructors picks a path explicitly (to test a fallback); asking for an instruction set the target lacks
is a ValueError, since the kernel could not run. This module does not generate any C.
"""
from __future__ import annotations

from tesched.config import settings
from tesched.target import current_target

#: The instruction sets of the micro-kernels, widest first (``TESCHED_INTRIN_ISA`` picks one).
ISAS = ("avx512", "avx2", "c")
"""Instruction sets of the micro-kernel, widest first."""

_REQUIRED_FLAGS = {"avx512": {"avx512f"}, "avx2": {"avx2", "fma"}, "c": set()}
_VECTOR_BYTES = {"avx512": 64, "avx2": 32, "c": 0}


def supported_isas() -> list[str]:
    """The instruction sets the current target can run, widest first."""
    flags = current_target().features
    return [isa for isa in ISAS if _REQUIRED_FLAGS[isa] <= flags]


def select_isa(isa: str | None = None) -> str:
    """The instruction set to use: ``isa`` if given, else ``TESCHED_INTRIN_ISA``, else the widest one the
    target supports within its vector width."""
    requested = isa or settings().intrin_isa
    available = supported_isas()
    if requested is None:
        width = current_target().vector_bytes
        return next(name for name in available if _VECTOR_BYTES[name] <= width)
    if requested not in ISAS:
        raise ValueError(f"unknown micro-kernel instruction set {requested!r}; choose one of {ISAS}")
    if requested not in available:
        raise ValueError(f"the target does not support {requested} (it supports {available})")
    return requested
