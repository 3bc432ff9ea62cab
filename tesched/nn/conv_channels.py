"""2-D convolution vectorized along output channels, for the shapes where vectorizing along an output
row does poorly: strided convolutions (their input rows are read with gaps) and narrow outputs (a row of
14 or 7 positions fills a fraction of a SIMD vector).

The weights are stored ``(C, KH, KW, K)`` (:func:`weight_last`), once, at graph build time, so that a
vector of output channels is one contiguous load. The product is computed as ``core[n, h, w, k]``
(output channels innermost) in register tiles of :data:`WIDTH_TILE` positions x :data:`CHANNEL_BLOCK`
channels, and read back in NCHW by the epilogue, per tile. This module declares and schedules; choosing
it for a layer is the graph's job (``alter_op_layout``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import tesched as ts
from tesched.nn.conv import ConvWindow
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import PARALLEL_MIN_WORK, largest_divisor, parallel_outer, reduction_work, register_schedule
from tesched.schedule.schedule import Schedule
from tesched.te.tensor import Tensor

IntOrPair = int | Sequence[int]

CHANNEL_BLOCK = 64
"""Output channels of a register tile (four AVX-512 vectors of float32)."""

WIDTH_TILE = 7
"""Output positions of a register tile along a row (7 x 4 vector accumulators)."""


def weight_last(weight: np.ndarray) -> np.ndarray:
    """OIHW weights as ``(C, KH, KW, K)``, C-contiguous (output channels innermost)."""
    return np.ascontiguousarray(weight.transpose(1, 2, 3, 0))


def conv2d_weight_last(data: Tensor, kernel: Tensor, strides: IntOrPair = 1, padding: IntOrPair = 0,
                       dilation: IntOrPair = 1) -> Tensor:
    """NCHW convolution (one group) by weights stored ``(C, KH, KW, K)``: the same values as
    :func:`tesched.nn.conv2d` with ``kernel.transpose(3, 0, 1, 2)``."""
    window = ConvWindow("conv2d_weight_last", data, kernel, strides, padding, dilation, window_axes=(1, 2))
    n, c, _, _ = data.shape
    cin, kh, kw, k = kernel.shape
    if cin != c:
        raise ValueError(f"conv2d_weight_last: kernel {kernel.shape} must be (C, KH, KW, K) for data {data.shape}")
    rc, ry, rx = ts.reduce_axis((0, c), "rc"), ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")
    core = compute((n, *window.out_hw, k),
                   lambda nn, yy, xx, ff: ts.sum(window.read(nn, rc, yy, xx, ry, rx) * kernel[rc, ry, rx, ff],
                                                 axis=[rc, ry, rx]),
                   name="conv2d_core", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="conv2d_weight_last")
    return compute((n, k, *window.out_hw), lambda nn, ff, yy, xx: core[nn, yy, xx, ff], name="conv2d",
                   pattern=Pattern.INJECTIVE, op="transpose")


@register_schedule("conv2d_weight_last")
def schedule_conv2d_weight_last(s: Schedule, core: Tensor, host: Tensor) -> None:
    """Per image, block of output channels (in parallel) and output row, and per tile of the row: the register
    tile (a write cache) computed with the reductions outside, positions unrolled and channels vectorized,
    stored once to a small buffer, then the epilogue over the tile in NCHW (unrolled: it reads the buffer
    across channels); the padded input is computed once, at the root."""
    hstage, cstage = s[host], s[core]
    n, k, h, w = hstage.op.axis
    ko, ki = hstage.split(k, largest_divisor(int(host.shape[1]), CHANNEL_BLOCK))
    wo, wi = hstage.split(w, largest_divisor(int(host.shape[3]), WIDTH_TILE))
    hstage.reorder(n, ko, h, wo, ki, wi)
    work = reduction_work(core)
    if work >= PARALLEL_MIN_WORK:
        hstage.parallel(ko)   # not fused with n and h: fused indices divide, and the tile must keep constant offsets
    hstage.unroll(ki)
    hstage.unroll(wi)
    tile = s.cache_write(core, "local")
    cstage.compute_at(hstage, wo)
    cn, cy, cx, cf = cstage.op.axis
    cstage.unroll(cx)
    cstage.vectorize(cf)
    tstage = s[tile]
    tstage.compute_at(cstage, cy)
    tn, ty, tx, tf = tstage.op.axis
    tstage.reorder(tn, ty, *tstage.op.reduce_axis, tx, tf)
    tstage.unroll(tx)
    tstage.vectorize(tf)
    padded = [t for t in core.op.input_tensors if op_of(t) == "pad"]
    if padded:
        pstage = s[padded[0]]
        pstage.compute_root()
        pn, pc, _, pw = pstage.op.axis
        parallel_outer(pstage, [pn, pc], work)
        pstage.vectorize(pw)
