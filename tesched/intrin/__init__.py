"""Tensor intrinsics for the host CPU, and schedules that use them.

- :func:`gemm_microkernel` / :func:`gemm_bias_relu_microkernel`: a GEMM micro-tile (optionally with a
  bias + relu epilogue) written with C intrinsics for AVX-512, AVX2 + FMA, or plain C
  (:mod:`tesched.intrin.isa` picks the path: the host's, or ``TESCHED_INTRIN_ISA``);
- :func:`dense_schedule`: a blocked, packed, parallel matrix-product schedule whose inner tile is the
  micro-kernel (or, to compare, tesched's own register tile);
- :func:`amx_dense_microkernel`: an Intel AMX tile (bfloat16 -> float32, uint8/int8 x int8 -> int32) of
  ``nn.dense_packed`` on packed weights; ``nn.default_schedule`` uses it where :func:`amx_usable` says the
  target (and, for the host, the OS: :func:`os_permits_amx`) runs it.
"""
from tesched.intrin.amx import amx_dense_microkernel, amx_usable, os_permits_amx
from tesched.intrin.dense import INNER, default_tile, dense_schedule
from tesched.intrin.gemm import gemm_bias_relu_microkernel, gemm_microkernel
from tesched.intrin.isa import ISAS, select_isa, supported_isas

__all__ = ["INNER", "ISAS", "amx_dense_microkernel", "amx_usable", "default_tile", "dense_schedule",
           "gemm_bias_relu_microkernel", "gemm_microkernel", "os_permits_amx", "select_isa", "supported_isas"]
