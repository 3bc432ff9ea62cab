"""``dense`` by a weight packed ahead of time into column panels: ``packed[N / B, K, B]`` holds, for each
block of ``B`` output columns, the ``K x B`` panel of ``weight.T`` those columns read, contiguous
(:func:`pack_dense_panels`; the panels the GEMM micro-kernel's packing step of :mod:`tesched.intrin.dense`
builds at run time, as wide as its default tile). The graph packs constant weights once, at build time
(``alter_op_layout``).

The default schedule reads the panels in place, with no copy at run time:

- with at least :data:`~tesched.nn.dense.MIN_TILE_ROWS` rows, register tiles of rows (up to
  :data:`GEMM_ROWS`, as many as the target's register file holds best: 8 with AVX-512, 6 with AVX2, see
  :mod:`tesched.tiling`; the last tile partial when the count does not divide the rows:
  :func:`tesched.nn.dense.row_options`) x one panel's ``B`` columns (the reduction outermost and unrolled by
  :data:`tesched.nn.dense.REDUCTION_UNROLL`, rows unrolled, columns vectorized), panels the outer
  (parallel) loop: :func:`tesched.nn.dense.schedule_matmul` without its packing copy;
- otherwise (fewer rows: a matrix-vector product, a recurrent cell at batch 1), per row and tile of
  up to :data:`GEMV_PANELS` panels, the reduction outermost and the tile's columns split into SIMD vectors,
  unrolled: one accumulator register per vector, each step one broadcast of ``x`` and contiguous loads of
  the panels, and no horizontal sums (the reduction of :func:`~tesched.nn.dense.schedule_dense` on the
  original layout ends with one per output).

This module declares, packs and schedules; it chooses no layout for a graph.
"""
from __future__ import annotations

import numpy as np

import tesched as ts
from tesched.nn.hints import hint, is_symbolic
from tesched.nn.dense import MIN_TILE_ROWS, register_tiles, row_options
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import (
    largest_divisor,
    parallel_outer,
    reduction_work,
    register_schedule,
    stored_whole,
)
from tesched.schedule.schedule import Schedule
from tesched.target import Target, current_target
from tesched.te.tensor import Tensor
from tesched.tiling import RegisterFile, accumulator_tile, divisors

GEMM_ROWS = 8
"""Rows of a GEMM register tile (at most)."""

PANEL_VECTORS = 2
"""SIMD vectors of columns per panel: a GEMM register tile is GEMM_ROWS x PANEL_VECTORS vectors."""

GEMV_PANELS = 4
"""Panels a matrix-vector tile covers, at most: 8 independent vector accumulators with AVX-512 float32,
enough to hide the latency of the multiply-adds (fewer panels when their vectors would not fit the
target's register file, see :mod:`tesched.tiling`)."""


def panel_width(columns: int, dtype: str = "float32", target: Target | None = None) -> int:
    """The panel width ``B`` for a weight of ``columns`` output columns: the most whole SIMD vectors of
    ``dtype`` (at most :data:`PANEL_VECTORS`) that divide ``columns``, else the largest divisor of
    ``columns`` narrower than a vector."""
    lanes = (target or current_target()).lanes(dtype)
    vectors = largest_divisor(int(columns) // lanes, PANEL_VECTORS) if columns % lanes == 0 else 0
    return vectors * lanes if vectors else largest_divisor(int(columns), lanes)


def pack_dense_panels(weight: np.ndarray, block: int | None = None) -> np.ndarray:
    """``weight[N, K]`` (PyTorch's Linear layout) as ``packed[N / B, K, B]``, ``packed[j // B, k, j % B] =
    weight[j, k]``, C-contiguous, for :func:`dense_panels`; ``B`` is ``block``, or by default two SIMD
    vectors of columns (``tesched.nn.dense_panels.panel_width``)."""
    if weight.ndim != 2:
        raise ValueError(f"pack_dense_panels: weight must be 2-D (N, K), got shape {weight.shape}")
    n, k = weight.shape
    block = block if block is not None else panel_width(n, str(weight.dtype))
    if not isinstance(block, (int, np.integer)) or block < 1 or n % block:
        raise ValueError(f"pack_dense_panels: the panel width {block!r} must be a positive divisor of the weight's "
                         f"{n} output columns")
    return np.ascontiguousarray(weight.reshape(n // block, block, k).transpose(0, 2, 1))


def unpack_dense_panels(packed: np.ndarray) -> np.ndarray:
    """The ``(N, K)`` weight that :func:`pack_dense_panels` stored as ``packed``."""
    if packed.ndim != 3:
        raise ValueError(f"unpack_dense_panels: packed weights must be 3-D (N / B, K, B), got {packed.shape}")
    panels, k, block = packed.shape
    return packed.transpose(0, 2, 1).reshape(panels * block, k)


def dense_panels(x: Tensor, packed: Tensor) -> Tensor:
    """``out[i, j] = sum_k x[i, k] * packed[j // B, k, j % B]``: ``x @ weight.T`` for ``packed =
    pack_dense_panels(weight)`` of shape ``(N / B, K, B)``; the output is ``(M, N)``."""
    if x.ndim != 2 or packed.ndim != 3:
        raise ValueError(f"dense_panels: x must be 2-D (M, K) and packed 3-D (N / B, K, B), got {x.shape} and "
                         f"{packed.shape}")
    if x.dtype != packed.dtype:
        raise TypeError(f"dense_panels: dtypes {x.dtype} and {packed.dtype} differ")
    if x.shape[1] != packed.shape[1]:
        raise ValueError(f"dense_panels: x {x.shape} and packed weights {packed.shape} disagree on the reduced "
                         f"axis ({x.shape[1]} vs {packed.shape[1]})")
    block = hint(packed.shape[2])
    k = ts.reduce_axis((0, x.shape[1]), "k")
    return compute((x.shape[0], packed.shape[0] * block),
                   lambda i, j: ts.sum(x[i, k] * packed[j // block, k, j % block], axis=k),
                   name="dense_panels", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="dense_panels")


def _block_of(product: Tensor) -> int:
    """The panel width of the packed weight ``product`` reads (its one 3-D operand)."""
    packed, = (t for t in product.op.input_tensors if t.ndim == 3)
    return hint(packed.shape[2])


@register_schedule("dense_panels")
def schedule_dense_panels(s: Schedule, product: Tensor, host: Tensor) -> None:
    """The register tiles of the module docstring, computed inside ``host``'s loops (see there). A host of
    another shape (a slice of the product's columns, as in a GRU cell) would read the product element by
    element: the product is stored whole instead, through a write cache, and computed in tiles, and the
    host gets the injective schedule. A symbolic row count (a dynamic batch or sequence) takes the
    matrix-vector tiles, row by row: register tiles of rows would leave the last tile's rows a loop (not
    unrolled, its accumulators in memory), which measured slower at every size."""
    product, host = stored_whole(s, product, host)
    rows = hint(product.shape[0])
    if rows >= MIN_TILE_ROWS and not is_symbolic(product.shape[0]):
        block = _block_of(product)
        tile_rows, _ = accumulator_tile(row_options(rows, GEMM_ROWS, MIN_TILE_ROWS), [block],
                                        RegisterFile.of(dtype=product.dtype), extent=rows)
        register_tiles(s, product, host, tile_rows, block)
    else:
        _gemv_tiles(s, product, host)


def _gemv_tiles(s: Schedule, product: Tensor, host: Tensor) -> None:
    block = _block_of(product)
    columns = hint(product.shape[1])
    rf = RegisterFile.of(dtype=product.dtype)
    _, tile = accumulator_tile([1], [block * p for p in divisors(columns // block, GEMV_PANELS)], rf)
    pstage, hstage = s[product], s[host]
    i, j = hstage.op.axis
    jo, ji = hstage.split(j, tile)
    outer = parallel_outer(hstage, [i, jo], reduction_work(product))
    pstage.compute_at(hstage, outer)
    pi, pj = pstage.op.axis
    panel, column = pstage.split(pj, block)
    vectors, vector = pstage.split(column, largest_divisor(block, rf.lanes))
    pstage.reorder(pi, *pstage.op.reduce_axis, panel, vectors, vector)
    pstage.unroll(panel)
    pstage.unroll(vectors)
    pstage.vectorize(vector)
    hstage.vectorize(ji)
