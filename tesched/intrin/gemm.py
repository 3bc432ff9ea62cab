"""GEMM micro-kernels declared as tensor intrinsics, for the host's instruction set.

``gemm_microkernel(mr, nr, kc)`` computes ``C[mr x nr] = A[mr x kc] @ B[kc x nr]`` with the three-part
protocol (``reset`` / ``update`` / ``body``), so it can stand for the innermost tile of a matmul whose
reduction is split (``update`` per ``kc`` slice) or whole (``body``). ``gemm_bias_relu_microkernel`` computes
``max(A @ B + bias, 0)`` in one call; it has only a ``body``, since a fused epilogue must see the whole
reduction. Both take ``isa=`` (see :mod:`tesched.intrin.isa`). The same arguments give the same intrinsic
object, so a kernel that uses it twice pastes its C source once. Schedules that use them live in
:mod:`tesched.intrin.dense`.
"""
from __future__ import annotations

import functools

import tesched as ts
from tesched.intrin.gemm_source import gemm_source, lanes
from tesched.intrin.isa import select_isa
from tesched.te.intrinsic import TensorIntrin

DTYPES = ("float32", "float64")


def _check(mr: int, nr: int, kc: int, dtype: str, isa: str) -> None:
    for label, value in (("mr", mr), ("nr", nr), ("kc", kc)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"gemm micro-kernel: {label} must be a positive int, got {value!r}")
    if dtype not in DTYPES:
        raise TypeError(f"gemm micro-kernel: dtype must be one of {DTYPES}, got {dtype!r}")
    width = lanes(isa, dtype)
    if nr % width:
        raise ValueError(f"gemm micro-kernel: nr={nr} must be a multiple of {width} ({dtype} lanes of {isa})")


def _gemm_tensors(mr: int, nr: int, kc: int, dtype: str):
    a = ts.placeholder((mr, kc), name="a", dtype=dtype)
    b = ts.placeholder((kc, nr), name="b", dtype=dtype)
    k = ts.reduce_axis((0, kc), name="k")
    c = ts.compute((mr, nr), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="c")
    return a, b, c


def gemm_microkernel(mr: int, nr: int, kc: int, dtype: str = "float32", isa: str | None = None) -> TensorIntrin:
    """``C[mr x nr] = A[mr x kc] @ B[kc x nr]``; ``nr`` must be a multiple of the vector lanes."""
    return _gemm(mr, nr, kc, dtype, select_isa(isa))


def gemm_bias_relu_microkernel(mr: int, nr: int, kc: int, dtype: str = "float32",
                               isa: str | None = None) -> TensorIntrin:
    """``O[mr x nr] = max(A[mr x kc] @ B[kc x nr] + bias[nr], 0)`` in one call."""
    return _gemm_bias_relu(mr, nr, kc, dtype, select_isa(isa))


@functools.lru_cache(maxsize=None)
def _gemm(mr: int, nr: int, kc: int, dtype: str, isa: str) -> TensorIntrin:
    _check(mr, nr, kc, dtype, isa)
    name = f"tesched_gemm_{isa}_{dtype}_{mr}x{nr}x{kc}"
    _, _, c = _gemm_tensors(mr, nr, kc, dtype)
    impl = ts.CIntrinsic(source=gemm_source(name, isa, dtype, mr, nr, kc, epilogue=False),
                         body=f"{name}_body", reset=f"{name}_reset", update=f"{name}_update")
    return ts.decl_tensor_intrin(c.op, impl, name=name)


@functools.lru_cache(maxsize=None)
def _gemm_bias_relu(mr: int, nr: int, kc: int, dtype: str, isa: str) -> TensorIntrin:
    _check(mr, nr, kc, dtype, isa)
    name = f"tesched_gemm_bias_relu_{isa}_{dtype}_{mr}x{nr}x{kc}"
    _, _, c = _gemm_tensors(mr, nr, kc, dtype)
    bias = ts.placeholder((nr,), name="bias", dtype=dtype)
    out = ts.compute((mr, nr), lambda i, j: ts.maximum(c[i, j] + bias[j], ts.const(0, dtype)), name="o")
    impl = ts.CIntrinsic(source=gemm_source(name, isa, dtype, mr, nr, kc, epilogue=True), body=f"{name}_body")
    return ts.decl_tensor_intrin(out.op, impl, name=name)
