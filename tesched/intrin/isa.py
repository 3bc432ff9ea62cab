"""Which instruction set the GEMM micro-kernel is written for: AVX-512, AVX2 with FMA, or plain C.

The choice follows what the host offers (``tesched.target.cpu_flags``) and the SIMD width tesched uses
for its own code (``tesched.target.vector_bytes``, which honours ``TESCHED_VECTOR_BYTES``), since the C is
compiled with ``-march=native``. ``TESCHED_INTRIN_ISA=avx512|avx2|c`` or the ``isa=`` argument of the
intrinsic constructors picks a path explicitly (to test a fallback); asking for an instruction set the
host lacks is a ValueError, since the kernel could not run. This module does not generate any C.
"""
from __future__ import annotations

import os

from tesched.target import cpu_flags, vector_bytes

ISAS = ("avx512", "avx2", "c")
"""Instruction sets of the micro-kernel, widest first."""

_REQUIRED_FLAGS = {"avx512": {"avx512f"}, "avx2": {"avx2", "fma"}, "c": set()}
_VECTOR_BYTES = {"avx512": 64, "avx2": 32, "c": 0}


def supported_isas() -> list[str]:
    """The instruction sets the host can run, widest first."""
    flags = cpu_flags()
    return [isa for isa in ISAS if _REQUIRED_FLAGS[isa] <= flags]


def select_isa(isa: str | None = None) -> str:
    """The instruction set to use: ``isa`` if given, else ``TESCHED_INTRIN_ISA``, else the widest one the
    host supports within tesched's vector width."""
    requested = isa or os.environ.get("TESCHED_INTRIN_ISA") or None
    available = supported_isas()
    if requested is None:
        width = vector_bytes()
        return next(name for name in available if _VECTOR_BYTES[name] <= width)
    if requested not in ISAS:
        raise ValueError(f"unknown micro-kernel instruction set {requested!r}; choose one of {ISAS}")
    if requested not in available:
        raise ValueError(f"the host does not support {requested} (it supports {available})")
    return requested
