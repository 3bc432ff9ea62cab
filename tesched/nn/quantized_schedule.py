"""Default schedules of the narrow products of :mod:`.quantized`: register tiles whose innermost loops are
the dot-product pattern of :mod:`tesched.transform.dot_products` (output channels vectorized, the packing
group serial and innermost), so they run on AVX-512 VNNI / BF16 where the target has them.

- ``dense_packed``: tiles of ``DENSE_ROWS`` rows x ``DENSE_VECTORS`` vectors of columns; column panels are
  the outer (parallel) loop, so a panel of packed weights stays in cache while every row tile reads it.
  Where the target has Intel AMX for the operands (:func:`tesched.intrin.amx.amx_usable`), the tiles are
  up to 32 x 32 (dividing the output) and each is one call of the AMX micro-kernel
  (:func:`tesched.intrin.amx.amx_dense_microkernel`); the panels are several tiles wide (up to
  ``AMX_PANEL_BYTES`` of weights), so that a row tile's data serves each tile of a panel from cache.
  Sizes whose largest dividing tile is narrower than ``AMX_MIN_TILE`` (and their own size), and operands
  computed inline (a quantize fused into the product), keep the dot-product tiles.
- ``conv2d_nhwc_packed``: tiles of ``CONV_PIXELS`` output pixels of a row x ``CONV_VECTORS`` vectors of
  output channels; rows of the image in parallel; the padded input computed once, before.

Shapes without such tiles fall back to :func:`~tesched.nn.schedule.schedule_reduction`. The epilogue (a
requantize, say) runs in the host's tile, vectorized over channels.
"""
from __future__ import annotations

from tesched.intrin.amx import MAX_TILE, amx_dense_microkernel, amx_usable
from tesched.nn.pattern import op_of
from tesched.nn.schedule import (
    PARALLEL_MIN_WORK,
    largest_divisor,
    parallel_outer,
    reduction_work,
    register_schedule,
    schedule_reduction,
)
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage
from tesched.te import dtype as dt
from tesched.target import current_target
from tesched.te.tensor import IterVar, PlaceholderOp, Tensor

PACK_MIN_ROW_TILES = 4
"""A panel of packed weights is copied into a contiguous local buffer (its rows are a power of two bytes
apart in the argument, and would collide in the cache) when at least this many row tiles read it."""

DENSE_ROWS = 8
DENSE_VECTORS = 2
"""A ``dense_packed`` register tile: 8 rows x 2 vectors (16 accumulators, 2 weight loads and 8 broadcasts
per step of 4 reduction elements)."""

AMX_MIN_TILE = 8
"""The AMX tile of a ``dense_packed`` must have at least this many rows and columns (or all of them): an
output of 97 rows would otherwise run 97 calls of one row each."""

AMX_PANEL_BYTES = 512 * 1024
"""Largest panel of packed weights (all its reduction rows) an AMX ``dense_packed`` copies once and reads
for every row tile: a quarter of a 2 MiB L2. Wider panels read each row tile's data from memory fewer times
(once per panel; its later tiles find it in cache)."""

AMX_MIN_PANELS = 4
"""Column panels are the parallel loop: an AMX ``dense_packed`` keeps at least this many."""

CONV_PIXELS = 4
CONV_VECTORS = 4
"""A ``conv2d_nhwc_packed`` register tile: 4 pixels x 4 vectors of output channels (16 accumulators)."""


def _lanes() -> int:
    return current_target().lanes("int32")


def vector_tile(extent: int, lanes: int, vectors: int) -> int:
    """Columns of a register tile: the largest multiple of ``lanes`` up to ``vectors * lanes`` that divides
    ``extent``; else all of ``extent`` when it fits in twice that many vectors (narrower vectors take the
    rest); 0 when neither works (no SIMD, or a long extent with no such divisor)."""
    if lanes < 4:
        return 0
    for tile in range(vectors * lanes, 0, -lanes):
        if extent % tile == 0:
            return tile
    return extent if extent <= 2 * vectors * lanes else 0


@register_schedule("dense_packed")
def schedule_dense_packed(s: Schedule, product: Tensor, host: Tensor) -> None:
    """Register tiles of the product computed per tile of ``host`` (see the module doc)."""
    if host.shape == product.shape and _schedule_amx(s, product, host):
        return
    rows, columns = (int(d) for d in product.shape)
    lanes = _lanes()
    tile_rows = largest_divisor(rows, DENSE_ROWS)
    tile_columns = vector_tile(columns, lanes, DENSE_VECTORS)
    if host.shape != product.shape or not tile_columns:
        schedule_reduction(s, product, host)
        return
    pstage, hstage = s[product], s[host]
    jo, io = _tile_host(hstage, tile_rows, tile_columns)
    pstage.compute_at(hstage, io)
    pi, pj = pstage.op.axis
    ko, kt = pstage.op.reduce_axis
    pstage.reorder(ko, pi, pj, kt)
    pstage.unroll(pi)
    pstage.vectorize(pj)
    _parallel_panels(s, product, hstage, jo, rows // tile_rows)


def _schedule_amx(s: Schedule, product: Tensor, host: Tensor) -> bool:
    """AMX micro-kernel tiles, if the target runs them for these operands, both are stored (not computed
    inline, as a fused quantize is) and a tile divides the output."""
    data, packed = product.op.input_tensors
    inlined = [t for t in (data, packed) if not isinstance(t.op, PlaceholderOp)
               and s[t].attach_type is AttachType.INLINE]
    if inlined or not amx_usable(data.dtype, packed.dtype):    # the micro-kernel reads stored operands
        return False
    rows, columns = (int(d) for d in product.shape)
    tile_rows, tile_columns = largest_divisor(rows, MAX_TILE), largest_divisor(columns, MAX_TILE)
    if min(tile_rows, tile_columns) < AMX_MIN_TILE and (tile_rows, tile_columns) != (rows, columns):
        return False
    pstage, hstage = s[product], s[host]
    reduced = int(data.shape[1])
    panel = amx_panel_columns(columns, tile_columns, reduced * dt.itemsize(data.dtype))
    jo, tile = _tile_host(hstage, tile_rows, tile_columns, panel)
    pstage.compute_at(hstage, tile)
    pstage.tensorize(pstage.op.axis[0], amx_dense_microkernel(tile_rows, tile_columns, reduced, data.dtype,
                                                              packed.dtype))
    _parallel_panels(s, product, hstage, jo, rows // tile_rows)
    return True


def _tile_host(hstage: Stage, tile_rows: int, tile_columns: int,
               panel_columns: int | None = None) -> tuple[IterVar, IterVar]:
    """Column panels outermost (of ``panel_columns``, default one tile), then row tiles, then the tiles of
    the panel; the tile's columns vectorized. Returns the panel loop and the loop of one tile."""
    i, j = hstage.op.axis
    io, ii = hstage.split(i, tile_rows)
    if panel_columns is None or panel_columns == tile_columns:
        jo, ji = hstage.split(j, tile_columns)
        hstage.reorder(jo, io, ii, ji)
        tile = io
    else:
        jo, j_panel = hstage.split(j, panel_columns)
        tile, ji = hstage.split(j_panel, tile_columns)
        hstage.reorder(jo, io, tile, ii, ji)
    hstage.vectorize(ji)
    return jo, tile


def amx_panel_columns(columns: int, tile_columns: int, column_bytes: int) -> int:
    """Columns of a panel of packed weights for the AMX tiles: the widest multiple of ``tile_columns`` that
    divides ``columns`` and holds at most :data:`AMX_PANEL_BYTES` (``column_bytes`` per column), so that the
    rows of data each row tile reads serve several tiles while they are in cache; at least
    :data:`AMX_MIN_PANELS` panels where there are that many tiles, for the threads to share."""
    panels = min(AMX_MIN_PANELS, columns // tile_columns)
    fits = [p for p in range(tile_columns, columns + 1, tile_columns)
            if columns % p == 0 and p * column_bytes <= AMX_PANEL_BYTES and columns // p >= panels]
    return max(fits, default=tile_columns)


def _parallel_panels(s: Schedule, product: Tensor, hstage: Stage, jo: IterVar, row_tiles: int) -> None:
    """Column panels in parallel (when the product is large), each panel of packed weights copied once into
    a contiguous buffer when enough row tiles read it."""
    if reduction_work(product) >= PARALLEL_MIN_WORK:
        hstage.parallel(jo)
    packed = product.op.input_tensors[1]
    if isinstance(packed.op, PlaceholderOp) and row_tiles >= PACK_MIN_ROW_TILES:
        panel = s.cache_read(packed, "local", [s[product]])
        s[panel].compute_at(hstage, jo)
        _, pj, pt = s[panel].op.axis
        s[panel].vectorize(s[panel].fuse(pj, pt))


@register_schedule("conv2d_nhwc_packed")
def schedule_conv2d_nhwc_packed(s: Schedule, conv: Tensor, host: Tensor) -> None:
    """Register tiles of pixels x output channels computed per tile of ``host`` (see the module doc)."""
    lanes = _lanes()
    width, channels = int(conv.shape[2]), int(conv.shape[3])
    tile_channels = vector_tile(channels, lanes, CONV_VECTORS)
    if host.shape != conv.shape or not tile_channels:
        schedule_reduction(s, conv, host)
        return
    cstage, hstage = s[conv], s[host]
    n, h, w, o = hstage.op.axis
    wo, wi = hstage.split(w, largest_divisor(width, CONV_PIXELS))
    oo, oi = hstage.split(o, tile_channels)
    hstage.reorder(n, h, wo, oo, wi, oi)
    cstage.compute_at(hstage, oo)
    cn, ch, cw, co = cstage.op.axis
    r, s_, cb, ct = cstage.op.reduce_axis
    cstage.reorder(cn, ch, r, s_, cb, cw, co, ct)
    cstage.unroll(cw)
    cstage.vectorize(co)
    hstage.vectorize(oi)
    parallel_outer(hstage, [n, h], reduction_work(conv))
    data = conv.op.input_tensors[0]
    if op_of(data) == "pad":
        pstage = s[data]
        pstage.compute_root()
        pn, ph, pw, pc = pstage.op.axis
        pstage.vectorize(pc)
        parallel_outer(pstage, [pn, ph], PARALLEL_MIN_WORK)
