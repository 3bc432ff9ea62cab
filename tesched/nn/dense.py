"""Matrix products: ``dense(x, w, bias=None)`` (``x @ w.T``, PyTorch's Linear) and ``matmul(a, b)``
(``a @ b``), with their default schedules. The product stage is tagged ``out_elemwise_fusable``; the
optional bias is a ``bias_add`` stage after it.
"""
from __future__ import annotations

import numpy as np

import tesched as ts
from tesched.nn.hints import hint, is_symbolic
from tesched.nn.elemwise import bias_add
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import (
    PARALLEL_MIN_WORK,
    largest_divisor,
    parallel_outer,
    reduction_work,
    register_schedule,
    static_extent,
    stored_whole,
)
from tesched.schedule.schedule import Schedule
from tesched.te.tensor import IterVar, PlaceholderOp, Tensor
from tesched.tiling import RegisterFile, accumulator_tile, divisors

COLUMN_TILE = 16
"""Output columns one iteration of a product's loop nest computes."""

LANES = 16
"""Partial sums a dense reduction keeps per output (one vector register of float32)."""

REGISTER_ROWS = 8
REGISTER_VECTORS = 2
"""A matmul register tile: at most REGISTER_ROWS rows x REGISTER_VECTORS SIMD vectors of columns, as many
as the target's register file holds (:func:`matmul_tile`): 8 x 32 float32 with AVX-512 (16 accumulators,
two vector loads of ``b`` and eight broadcasts of ``a`` per step), 6 x 16 with AVX2's 16 registers (12
accumulators, two loads of ``b`` and a broadcast register: 1024 rows are 170 such tiles and one of 4)."""

MIN_TILE_ROWS = 4
"""Fewest rows of a register tile when no divisor of the rows is this large (the tiles then leave a
partial last one: :func:`row_options`)."""

REDUCTION_UNROLL = 4
"""Reduction steps of a register tile unrolled together."""

PACK_MIN_ROW_TILES = 4
"""A column panel of ``b`` is packed only when at least this many row tiles read the copy."""


def _check_2d(a: Tensor, b: Tensor, op: str) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"{op}: operands must be 2-D, got {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: dtypes {a.dtype} and {b.dtype} differ")


def dense(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``out[i, j] = sum_k x[i, k] * weight[j, k] (+ bias[j])``."""
    _check_2d(x, weight, "dense")
    if x.shape[1] != weight.shape[1]:
        raise ValueError(f"dense: x {x.shape} and weight {weight.shape} disagree on the reduced axis "
                         f"({x.shape[1]} vs {weight.shape[1]})")
    k = ts.reduce_axis((0, x.shape[1]), "k")
    out = compute((x.shape[0], weight.shape[0]), lambda i, j: ts.sum(x[i, k] * weight[j, k], axis=k),
                  name="dense", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="dense")
    return out if bias is None else bias_add(out, bias, axis=1)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``out[i, j] = sum_k a[i, k] * b[k, j]``."""
    _check_2d(a, b, "matmul")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} disagree on the reduced axis")
    k = ts.reduce_axis((0, a.shape[1]), "k")
    return compute((a.shape[0], b.shape[1]), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k),
                   name="matmul", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="matmul")


def _schedule_columns(s: Schedule, product: Tensor, host: Tensor, vector_columns: bool) -> None:
    """Tiles of COLUMN_TILE output columns, rows and column tiles in parallel when the work is large; per
    tile the product runs with the reduction outside the column loop, which is vectorized when
    ``vector_columns`` else unrolled (independent accumulators); then the host's tile (of the product's
    shape: see :func:`~tesched.nn.schedule.stored_whole`)."""
    tile = largest_divisor(hint(product.shape[1]), COLUMN_TILE)
    pstage, hstage = s[product], s[host]
    i, j = hstage.op.axis
    jo, ji = hstage.split(j, tile)
    pstage.compute_at(hstage, jo)
    pi, pj = pstage.op.axis
    pstage.reorder(pi, *pstage.op.reduce_axis, pj)
    if vector_columns:
        pstage.vectorize(pj)
    else:
        pstage.unroll(pj)
    hstage.vectorize(ji)
    parallel_outer(hstage, [i, jo], reduction_work(product))


@register_schedule("dense")
def schedule_dense(s: Schedule, product: Tensor, host: Tensor) -> None:
    """``x`` and ``weight`` rows are both contiguous along the reduction, so the reduction is vectorized:
    split into LANES lanes, each lane's partial sums (``rfactor``) computed for a tile of columns at once,
    then summed. Without a divisor of the reduced size of at least 4, the tile's columns are unrolled
    instead (independent scalar accumulators)."""
    product, host = stored_whole(s, product, host)
    lanes = largest_divisor(static_extent(product.op.reduce_axis[0]), LANES)
    if lanes < 4:
        _schedule_columns(s, product, host, vector_columns=False)
        return
    pstage, hstage = s[product], s[host]
    _, lane = pstage.split(pstage.op.reduce_axis[0], lanes)
    partial = s.rfactor(product, lane, factor_axis=2)
    assert isinstance(partial, Tensor)      # a sum: one partial tensor
    i, j = hstage.op.axis
    jo, ji = hstage.split(j, largest_divisor(hint(product.shape[1]), COLUMN_TILE))
    pstage.compute_at(hstage, jo)
    rstage = s[partial]
    rstage.compute_at(hstage, jo)
    ri, rj, rl = rstage.op.axis
    rstage.reorder(ri, rj, *rstage.op.reduce_axis, rl)
    rstage.vectorize(rl)
    rstage.unroll(rj)
    hstage.vectorize(ji)
    parallel_outer(hstage, [i, jo], reduction_work(product))


def register_tiles(s: Schedule, product: Tensor, host: Tensor, tile_rows: int, tile_columns: int) -> IterVar:
    """``host`` (of ``product``'s shape) in tiles of ``tile_rows`` x ``tile_columns``, column panels outermost
    (parallel when the work is large), row tiles next; per tile ``product`` accumulates in registers: the
    reduction outermost and unrolled by ``REDUCTION_UNROLL``, rows unrolled, columns vectorized. Returns
    the loop over column panels. With a symbolic row count the rows of a tile are not unrolled (the last
    tile's rows are guarded, and the same code runs for any count).

    The reduction is not blocked: at 1024, blocks of 128 to 512 (``rfactor`` over the blocks, each tile
    adding its partial sums into the output) measured 1.15x to 1.6x slower on AVX2 and AVX-512 (with the
    blocks outermost or inside the column panels): each row of ``a`` is then read in runs shorter than a
    page, which the prefetchers follow worse, and the output is read and written once per block. Each row
    tile run over a group of 2 to 16 panels (``a``'s rows reused from L1) measured within the noise."""
    pstage, hstage = s[product], s[host]
    i, j = hstage.op.axis
    io, ii = hstage.split(i, tile_rows)
    jo, ji = hstage.split(j, tile_columns)
    hstage.reorder(jo, io, ii, ji)
    pstage.compute_at(hstage, io)
    pi, pj = pstage.op.axis
    k, = pstage.op.reduce_axis
    ko, ki = pstage.split(k, largest_divisor(static_extent(k), REDUCTION_UNROLL))
    pstage.reorder(ko, ki, pi, pj)
    pstage.unroll(ki)
    if not is_symbolic(product.shape[0]):   # a symbolic row count leaves a last tile of unknown rows
        pstage.unroll(pi)
    pstage.vectorize(pj)
    hstage.vectorize(ji)
    if reduction_work(product) >= PARALLEL_MIN_WORK:
        hstage.parallel(jo)
    return jo


def row_options(rows: int, at_most: int, least: int) -> list[int]:
    """The row counts a register tile of a product with ``rows`` rows may have: its divisors up to
    ``at_most``, and every count from ``least`` to ``at_most`` (a prime count such as ViT's 197 tokens, or
    6 rows of 1024: the last tile then partial; the full tiles keep constant trip counts and unroll, and
    so does the last one: :mod:`tesched.transform.peel`). :func:`~tesched.tiling.accumulator_tile`, given
    ``rows`` as its extent, weighs the partial tile."""
    return sorted(set(divisors(rows, at_most)) | set(range(least, min(rows, at_most) + 1)))


def matmul_tile(rows: int, columns: int, rf: RegisterFile) -> tuple[int, int]:
    """``(rows, columns)`` of a product's register tile: rows of :func:`row_options` (at most REGISTER_ROWS)
    x columns, the largest divisor of ``columns`` up to REGISTER_VECTORS vectors or, when it is whole vectors,
    fewer of them, chosen by :func:`~tesched.tiling.accumulator_tile` for ``rf``."""
    widest = largest_divisor(columns, REGISTER_VECTORS * rf.lanes)
    widths = [v * rf.lanes for v in divisors(widest // rf.lanes, REGISTER_VECTORS)] if widest % rf.lanes == 0 \
        else [widest]
    return accumulator_tile(row_options(rows, REGISTER_ROWS, MIN_TILE_ROWS), widths, rf, extent=rows)


@register_schedule("matmul")
def schedule_matmul(s: Schedule, product: Tensor, host: Tensor) -> None:
    """TVM's "How to optimize GEMM on CPU" steps with tesched's primitives. The output is cut into
    register tiles of ``REGISTER_ROWS`` rows x ``REGISTER_VECTORS`` vectors of columns (blocking); per
    tile the product accumulates in registers (its ``compute_at`` buffer, rows unrolled, columns
    vectorized, the reduction outermost and unrolled by ``REDUCTION_UNROLL``: the write cache). Column
    panels are the outer, parallel loop, and each panel of ``b`` is copied once into a contiguous local
    buffer (``cache_read`` packing) that every row tile of the panel reads. Shapes without such tiles, or
    too little work to fill them, keep the column schedule of :func:`_schedule_columns`. With a symbolic row
    count the tiles' rows are not unrolled (see :func:`register_tiles`)."""
    product, host = stored_whole(s, product, host)
    rows, columns = (hint(d) for d in product.shape)
    rf = RegisterFile.of(dtype=product.dtype)
    tile_rows, tile_columns = matmul_tile(rows, columns, rf)
    if tile_columns % rf.lanes or tile_rows * tile_columns < 4 * rf.lanes:
        _schedule_columns(s, product, host, vector_columns=True)
        return
    jo = register_tiles(s, product, host, tile_rows, tile_columns)
    a, b = product.op.input_tensors if len(product.op.input_tensors) == 2 else (None, None)
    if b is not None and isinstance(b.op, PlaceholderOp) and rows // tile_rows >= PACK_MIN_ROW_TILES:
        packed = s.cache_read(b, "local", [s[product]])
        s[packed].compute_at(s[host], jo)
        s[packed].vectorize(s[packed].op.axis[1])
