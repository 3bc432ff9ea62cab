"""Matrix-product schedules whose inner tile is the GEMM micro-kernel intrinsic, or tesched's own code.

``dense_schedule(out)`` schedules ``out = A @ B`` (a compute ``sum(A[i, k] * B[k, j])``), or an elementwise
epilogue of such a product (``out = f(A @ B, ...)``, e.g. ``max(A @ B + bias[j], 0)``; elementwise stages
between the product and ``out`` are inlined). It uses tesched primitives only, and always the same
blocking::

    parallel for j.outer                 (nr columns of out per iteration)
      B.packed = B[0:K, nr columns]      (cache_read at j.outer: a contiguous K x nr panel)
      for i.outer                        (mr rows)
        tile[mr x nr] = A @ B.packed     (the product computed at i.outer: a register tile)
        out[mr x nr rows/cols] = tile    (or the epilogue of it; columns vectorized)

A plain product gets its tile from ``cache_write``. How the tile is computed is the only choice
(``inner``):

- ``"intrinsic"``: one call of :func:`~tesched.intrin.gemm.gemm_microkernel` (``body``); with ``kc`` < K,
  the tile's reduction is split and the call is one ``reset`` then K/kc ``update``;
- ``"fused"`` (epilogue ``max(A @ B + bias[j], 0)`` only): the output tile, product included, is one call
  of :func:`~tesched.intrin.gemm.gemm_bias_relu_microkernel`;
- ``"codegen"``: tesched generates the tile: reduction outermost, rows unrolled, columns split into
  vectors, unrolled and vectorized (the register tile of TVM-style CPU schedules).

Sizes must be multiples of the tile (``mr``, ``nr``, and ``kc`` of K), checked first (ValueError): the
tensorize matcher would run partial tiles as plain scalar loops, which this schedule does not plan for. This module declares no computation.
"""
from __future__ import annotations

import numpy as np

import tesched as ts
from tesched.intrin.gemm import gemm_bias_relu_microkernel, gemm_microkernel
from tesched.intrin.isa import select_isa
from tesched.schedule.schedule import Schedule, Stage
from tesched.target import current_target
from tesched.te.tensor import ComputeOp, Tensor

#: The inner tiles :func:`dense_schedule` can use: the micro-kernel, the micro-kernel with its epilogue
#: fused, or tesched's own register tile.
INNER = ("intrinsic", "fused", "codegen")

_DEFAULT_TILES = {"avx512": {"float32": (8, 32), "float64": (8, 16)},
                  "avx2": {"float32": (4, 16), "float64": (4, 8)},
                  "c": {"float32": (4, 16), "float64": (4, 8)}}


def default_tile(isa: str | None = None, dtype: str = "float32") -> tuple[int, int]:
    """``(mr, nr)`` for the instruction set: ``mr x nr / lanes`` accumulators leave registers for a row
    of B and a broadcast (8 x 32 float32 on AVX-512: 16 of its 32 registers)."""
    return _DEFAULT_TILES[select_isa(isa)][dtype]


def _product_of(out: Tensor) -> Tensor:
    """The matrix product ``out`` is, or is an elementwise function of."""
    if isinstance(out.op, ComputeOp) and out.op.reduce_axis:
        return out
    products: list[Tensor] = []
    stack, seen = [out], set()
    while stack:
        t = stack.pop()
        for read in t.op.input_tensors if isinstance(t.op, ComputeOp) else []:
            if id(read) in seen or not isinstance(read.op, ComputeOp):
                continue
            seen.add(id(read))
            (products if read.op.reduce_axis else stack).append(read)
    if len(products) != 1:
        raise ValueError(f"dense_schedule: {out.name} must be a matrix product or an elementwise function of "
                         f"exactly one (found {len(products)} reductions)")
    return products[0]


def _operands(product: Tensor) -> tuple[Tensor, Tensor]:
    inputs = product.op.input_tensors
    if (product.ndim != 2 or len(product.op.reduce_axis) != 1 or len(inputs) != 2
            or any(t.ndim != 2 for t in inputs)):
        raise ValueError(f"dense_schedule: {product.name} must be sum(A[i, k] * B[k, j]) over 2-D tensors")
    return inputs[0], inputs[1]


def _check_tile(product: Tensor, mr: int, nr: int, kc: int) -> None:
    (m, n), k = product.shape, product.op.reduce_axis[0].range.extent
    for label, size, factor in (("rows", m, mr), ("columns", n, nr), ("reduction steps", k, kc)):
        if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
            raise ValueError(f"dense_schedule: the tile's {label} must be a positive int, got {factor!r}")
        if not isinstance(size, int):
            raise ValueError(f"dense_schedule: {product.name} needs constant sizes, its {label} are {size}")
        if size % factor:
            raise ValueError(f"dense_schedule: {product.name} has {size} {label}, not a multiple of the tile's "
                             f"{factor}; the micro-kernel covers whole tiles only, so pick a dividing tile")


def dense_schedule(out: Tensor, *, tile: tuple[int, int] | None = None, kc: int | None = None,
                   inner: str = "intrinsic", parallel: bool = True, isa: str | None = None) -> Schedule:
    """A schedule of ``out`` (see the module docstring). ``tile=(mr, nr)`` defaults to
    :func:`default_tile`; ``kc`` (a divisor of K, default K) is the reduction slice per intrinsic call."""
    if inner not in INNER:
        raise ValueError(f"dense_schedule: inner must be one of {INNER}, got {inner!r}")
    product = _product_of(out)
    _, b = _operands(product)
    mr, nr = tile or default_tile(isa, product.dtype)
    k_extent = product.op.reduce_axis[0].constant_extent
    if k_extent is None:
        raise ValueError(f"dense_schedule: {product.name} needs constant sizes, its reduction steps are "
                         f"{product.op.reduce_axis[0].range.extent}")
    kc = kc or k_extent
    _check_tile(product, mr, nr, kc)
    if inner == "fused" and (product is out or kc != k_extent):
        raise ValueError("dense_schedule: inner='fused' needs an epilogue (out = max(A @ B + bias, 0)) and the "
                         "whole reduction in one call (kc = K): an epilogue per partial sum would be wrong")

    s = ts.create_schedule(out.op)
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op is not out.op and st.op is not product.op:
            st.compute_inline()
    host = s[out]
    tiled = s[s.cache_write(out, "local")] if product is out else s[product]
    packed = s[s.cache_read(b, "packed", [tiled.op.output(0)])]

    i, j = host.op.axis
    jo, ji = host.split(j, factor=nr)
    io, ii = host.split(i, factor=mr)
    host.reorder(jo, io, ii, ji)
    if parallel:
        host.parallel(jo)
    packed.compute_at(host, jo)
    packed.vectorize(packed.op.axis[1])
    tiled.compute_at(host, io)
    if inner == "fused":
        host.tensorize(ii, gemm_bias_relu_microkernel(mr, nr, kc, product.dtype, isa))
        return s
    host.vectorize(ji)
    if inner == "intrinsic":
        _tensorize_tile(tiled, gemm_microkernel(mr, nr, kc, product.dtype, isa), kc, k_extent)
    else:
        _register_tile(tiled, product.dtype, nr)
    return s


def _tensorize_tile(tiled: Stage, intrin: ts.TensorIntrin, kc: int, k_extent: int) -> None:
    ti, tj = tiled.op.axis
    if kc != k_extent:
        ko, ki = tiled.split(tiled.op.reduce_axis[0], factor=kc)
        tiled.reorder(ko, ti, tj, ki)
    tiled.tensorize(ti, intrin)


def _register_tile(tiled: Stage, dtype: str, nr: int) -> None:
    ti, tj = tiled.op.axis
    tiled.reorder(tiled.op.reduce_axis[0], ti, tj)
    width = current_target().lanes(dtype)
    tiled.unroll(ti)
    if nr % width == 0 and nr > width:
        tjo, tji = tiled.split(tj, factor=width)
        tiled.unroll(tjo)
        tiled.vectorize(tji)
    else:
        tiled.vectorize(tj)
