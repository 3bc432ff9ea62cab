"""Tensor intrinsics for the host CPU, and schedules that use them.

- :func:`gemm_microkernel` / :func:`gemm_bias_relu_microkernel`: a GEMM micro-tile (optionally with a
  bias + relu epilogue) written with C intrinsics for AVX-512, AVX2 + FMA, or plain C
  (:mod:`tesched.intrin.isa` picks the path: the host's, or ``TESCHED_INTRIN_ISA``);
- :func:`dense_schedule`: a blocked, packed, parallel matrix-product schedule whose inner tile is the
  micro-kernel (or, to compare, tesched's own register tile).
"""
from tesched.intrin.dense import INNER, default_tile, dense_schedule
from tesched.intrin.gemm import gemm_bias_relu_microkernel, gemm_microkernel
from tesched.intrin.isa import ISAS, select_isa, supported_isas

__all__ = ["INNER", "ISAS", "default_tile", "dense_schedule", "gemm_bias_relu_microkernel", "gemm_microkernel",
           "select_isa", "supported_isas"]
