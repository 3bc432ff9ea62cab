"""2-D convolution vectorized along output channels, for the shapes where vectorizing along an output
row does poorly: strided convolutions (their input rows are read with gaps) and narrow outputs (a row of
14 or 7 positions fills a fraction of a SIMD vector).

The weights are stored ``(K / B, C, KH, KW, B)`` (:func:`weight_last`), once, at graph build time: a
vector of output channels is one contiguous load, and the weights one block of ``B`` output channels reads
are contiguous (read in order, page after page, rather than ``B`` channels out of every ``K``: with
``K`` = 512, one block's weights of a 3x3 layer would otherwise span thousands of pages, more than the
TLB holds). The product is computed as ``core[n, k / B, h, w, k % B]`` in register tiles of
:data:`WIDTH_TILE` positions x ``B`` channels, and read back in NCHW by the epilogue. This module
declares and schedules; choosing it for a layer is the graph's job (``alter_op_layout``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import tesched as ts
from tesched.nn.hints import hint
from tesched.nn.conv import ConvWindow, pad_at_root
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import (
    PARALLEL_MIN_WORK,
    largest_divisor,
    reduction_work,
    register_schedule,
    schedule_reduction,
    static_extent,
)
from tesched.schedule.schedule import Schedule, Stage
from tesched.te.tensor import IterVar, Tensor
from tesched.tiling import RegisterFile, accumulator_tile, divisors

IntOrPair = int | Sequence[int]

CHANNEL_BLOCK = 64
"""Output channels of a register tile, at most (four AVX-512 vectors of float32)."""

WIDTH_TILE = 7
"""Output positions of a register tile along a row, at most (7 x 2 vector accumulators with AVX-512; the
target's register file decides, see :func:`register_tile`)."""

PARALLEL_BLOCKS = 4
"""With fewer blocks of output channels than this, threads share chunks of output rows instead."""

ROW_CHUNKS = 4
"""Chunks of output rows (at least: each of whole rows) when threads share rows."""

INPUT_CHUNK = 8
"""Input channels whose weights a chunked reduction applies to every output row before the next chunk."""

CHUNKED_BLOCK_BYTES = 64 * 1024
"""A block of output channels whose whole output is at most this large (float32) is accumulated over
chunks of :data:`INPUT_CHUNK` input channels, each chunk's weights used for every row while they are in
the L1 cache, instead of row by row over all the weights (a 512-channel 3x3 layer: 1.2 MB per block)."""


def register_tile(out_width: int, out_channels: int, rf: RegisterFile, block: int | None = None) -> tuple[int, int]:
    """``(positions, channels)`` of a register tile: positions dividing a row of ``out_width`` (at most
    :data:`WIDTH_TILE`) x a block of output channels dividing ``out_channels`` (at most
    :data:`CHANNEL_BLOCK`; ``block`` when the weights are already stored in blocks), chosen by
    :func:`~tesched.tiling.accumulator_tile` for ``rf``: 7 x 32 with AVX-512, 7 x 8 with AVX2 (7 x 64
    would need 33 AVX-512 registers)."""
    blocks = [block] if block else divisors(out_channels, CHANNEL_BLOCK)
    return accumulator_tile(divisors(out_width, WIDTH_TILE), blocks, rf)


def weight_last(weight: np.ndarray, block: int | None = None) -> np.ndarray:
    """OIHW weights as ``(K / block, C, KH, KW, block)``, C-contiguous: output channels innermost, in blocks
    of ``block`` (:data:`CHANNEL_BLOCK` or the largest divisor of ``K`` below it by default), so that the
    weights one block of output channels reads are contiguous."""
    k = weight.shape[0]
    block = block or largest_divisor(k, CHANNEL_BLOCK)
    if k % block:
        raise ValueError(f"weight_last: block {block} does not divide the {k} output channels")
    blocked = weight.reshape(k // block, block, *weight.shape[1:])
    return np.ascontiguousarray(blocked.transpose(0, 2, 3, 4, 1))


def weight_oihw(blocked: np.ndarray) -> np.ndarray:
    """The OIHW weights that :func:`weight_last` stored as ``blocked``."""
    blocks, c, kh, kw, block = blocked.shape
    return blocked.transpose(0, 4, 1, 2, 3).reshape(blocks * block, c, kh, kw)


def conv2d_weight_last(data: Tensor, kernel: Tensor, strides: IntOrPair = 1, padding: IntOrPair = 0,
                       dilation: IntOrPair = 1) -> Tensor:
    """NCHW convolution (one group) by weights stored ``(K / B, C, KH, KW, B)`` (:func:`weight_last`): the same
    values as :func:`tesched.nn.conv2d` with the OIHW weights they were made from."""
    window = ConvWindow("conv2d_weight_last", data, kernel, strides, padding, dilation, kernel_ndim=5)
    if kernel.shape[1] != data.shape[1]:
        raise ValueError(f"conv2d_weight_last: kernel {kernel.shape} must be (K / B, C, KH, KW, B) for data "
                         f"{data.shape}")
    n = data.shape[0]
    blocks, c, kh, kw, block = kernel.shape
    rc, ry, rx = ts.reduce_axis((0, c), "rc"), ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")
    core = compute((n, blocks, *window.out_hw, block),
                   lambda nn, ko, yy, xx, ki: ts.sum(window.read(nn, rc, yy, xx, ry, rx) * kernel[ko, rc, ry, rx, ki],
                                                     axis=[rc, ry, rx]),
                   name="conv2d_core", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="conv2d_weight_last")
    return compute((n, blocks * block, *window.out_hw),
                   lambda nn, ff, yy, xx: core[nn, ff // block, yy, xx, ff % block],
                   name="conv2d", pattern=Pattern.INJECTIVE, op="transpose")


@register_schedule("conv2d_weight_last")
def schedule_conv2d_weight_last(s: Schedule, core: Tensor, host: Tensor) -> None:
    """Per image, block of output channels (in parallel; or, with fewer than :data:`PARALLEL_BLOCKS` blocks,
    per chunk of output rows in parallel, then per block) and output row, and per tile of the row: the register
    tile (a write cache) computed with the reductions outside, positions unrolled and channels vectorized,
    stored once to a small buffer, then the epilogue over the tile in NCHW (unrolled: it reads the buffer
    across channels); the padded input is computed once, at the root. A block whose output is small
    (:data:`CHUNKED_BLOCK_BYTES`) is computed whole before its epilogue, by chunks of input channels
    (:func:`_chunked_reduction`)."""
    hstage = s[host]
    if len(hstage.op.axis) != 4:     # the host is not the NCHW result (a fused reader of another rank)
        schedule_reduction(s, core, host)
        return
    n, k, h, w = hstage.op.axis
    block = hint(core.shape[4])
    positions, _ = register_tile(hint(host.shape[3]), block, RegisterFile.of(dtype=core.dtype), block)
    ko, ki = hstage.split(k, block)
    wo, wi = hstage.split(w, positions)
    work = reduction_work(core)
    blocks = hint(core.shape[1])
    if blocks >= PARALLEL_BLOCKS or hint(host.shape[2]) < ROW_CHUNKS:
        hstage.reorder(n, ko, h, wo, ki, wi)
        outer = ko
    else:   # too few blocks to share among threads: chunks of rows outside the blocks
        outer, h = hstage.split(h, -(-hint(host.shape[2]) // ROW_CHUNKS))
        hstage.reorder(n, outer, ko, h, wo, ki, wi)
    if work >= PARALLEL_MIN_WORK:
        hstage.parallel(outer)   # not fused with n: fused indices divide, and the tile must keep constant offsets
    hstage.unroll(ki)
    hstage.unroll(wi)
    channels = static_extent(core.op.reduce_axis[0])
    block_bytes = hint(core.shape[2]) * hint(core.shape[3]) * hint(core.shape[4]) * 4
    if block_bytes <= CHUNKED_BLOCK_BYTES and channels >= 2 * INPUT_CHUNK:
        _chunked_reduction(s, core, hstage, ko, positions)
    else:
        _row_tiles(s, core, hstage, wo)
    padded = [t for t in core.op.input_tensors if op_of(t) == "pad"]
    if padded:
        pad_at_root(s, padded[0])


def _row_tiles(s: Schedule, core: Tensor, hstage: Stage, loop: IterVar) -> None:
    """``core`` computed per tile of a row (inside ``loop`` of the host) through a register tile (a write
    cache) accumulated over every input channel and window offset, positions unrolled, channels
    vectorized."""
    cstage = s[core]
    tile = s.cache_write(core, "local")
    cstage.compute_at(hstage, loop)
    cn, cko, cy, cx, cf = cstage.op.axis
    cstage.unroll(cx)
    cstage.vectorize(cf)
    tstage = s[tile]
    tstage.compute_at(cstage, cy)
    tn, tko, ty, tx, tf = tstage.op.axis
    tstage.reorder(tn, tko, ty, *tstage.op.reduce_axis, tx, tf)
    tstage.unroll(tx)
    tstage.vectorize(tf)


def _chunked_reduction(s: Schedule, core: Tensor, hstage: Stage, loop: IterVar, positions: int) -> None:
    """``core``'s whole block computed inside ``loop`` of the host: per chunk of :data:`INPUT_CHUNK` input
    channels, every row, and per tile of ``positions`` of the row the chunk's window offsets, positions
    unrolled and channels vectorized (the tile's sums stay in registers over the chunk)."""
    cstage = s[core]
    cstage.compute_at(hstage, loop)
    cn, cko, cy, cx, cf = cstage.op.axis
    rc, ry, rx = cstage.op.reduce_axis
    rco, rci = cstage.split(rc, largest_divisor(static_extent(rc), INPUT_CHUNK))
    cxo, cxi = cstage.split(cx, positions)
    cstage.reorder(cn, cko, rco, cy, cxo, rci, ry, rx, cxi, cf)
    cstage.unroll(cxi)
    cstage.vectorize(cf)
