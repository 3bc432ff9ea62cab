"""2-D convolutions in NCHW layout with OIHW kernels: ``conv2d`` (strides, padding, dilation, groups) and
``depthwise_conv2d``, with their default schedules.

Padding is a separate ``pad`` stage (see :mod:`.transform`), so a tile's footprint clips at the borders.
``conv2d`` with ``groups`` equal to the input channels and one input channel per group is a depthwise
convolution and is declared as such. The conv stage is tagged ``out_elemwise_fusable``.
"""
from __future__ import annotations

from typing import Sequence

import tesched as ts
from tesched.nn.dense import REDUCTION_UNROLL
from tesched.nn.hints import hint
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import (
    element_count,
    largest_divisor,
    parallel_outer,
    reduction_work,
    register_schedule,
    schedule_channel_planes,
    schedule_reduction,
    static_extent,
)
from tesched.nn.shape import padding4, pair, window_output
from tesched.nn.transform import pad
from tesched.schedule.schedule import Schedule
from tesched.te.tensor import Tensor
from tesched.tiling import RegisterFile, accumulator_tile, divisors

IntOrPair = int | Sequence[int]

CHANNEL_TILE = 8
"""Output channels computed together, so each input row loaded serves that many accumulators."""


class ConvWindow:
    """What convolutions share: checks of NCHW ``data`` and a ``kernel`` of ``kernel_ndim`` axes (OIHW by
    default) whose axes ``window_axes`` are the window (``KH, KW``), the padded input, and its read at a
    window position."""

    def __init__(self, op: str, data: Tensor, kernel: Tensor, strides: IntOrPair, padding: IntOrPair,
                 dilation: IntOrPair, window_axes: tuple[int, int] = (2, 3), kernel_ndim: int = 4):
        if data.ndim != 4 or kernel.ndim != kernel_ndim:
            layout = "OIHW (4-D)" if kernel_ndim == 4 else f"{kernel_ndim}-D"
            raise ValueError(f"{op}: data must be NCHW and kernel {layout}, got {data.shape} and {kernel.shape}")
        if data.dtype != kernel.dtype:
            raise TypeError(f"{op}: data is {data.dtype} but kernel is {kernel.dtype}")
        self.strides = pair(strides, f"{op} strides")
        self.dilation = pair(dilation, f"{op} dilation")
        top, left, bottom, right = padding4(padding)
        self.padded = pad(data, [(0, 0), (0, 0), (top, bottom), (left, right)]) if any((top, left, bottom, right)) \
            else data
        self.out_hw = tuple(window_output(data.shape[2 + a], kernel.shape[window_axes[a]], self.strides[a], lo, hi,
                                          self.dilation[a], op)
                            for a, (lo, hi) in enumerate(((top, bottom), (left, right))))

    def read(self, n, channel, y, x, ry, rx):
        """The padded input under kernel offset ``(ry, rx)`` of output position ``(y, x)``."""
        (sh, sw), (dh, dw) = self.strides, self.dilation
        return self.padded[n, channel, y * sh + ry * dh, x * sw + rx * dw]


def conv2d(data: Tensor, kernel: Tensor, strides: IntOrPair = 1, padding: IntOrPair = 0,
           dilation: IntOrPair = 1, groups: int = 1) -> Tensor:
    """``out[n, k, h, w] = sum(pad(data)[n, g*C/groups + c, h*sh + i*dh, w*sw + j*dw] * kernel[k, c, i, j])``
    where ``g`` is the group of output channel ``k``; ``padding`` is ``p``, ``(ph, pw)`` or
    ``(top, left, bottom, right)``."""
    window = ConvWindow("conv2d", data, kernel, strides, padding, dilation)
    n, c, _, _ = data.shape
    k, cg, kh, kw = kernel.shape
    if not isinstance(groups, int) or groups < 1 or c % groups or k % groups or cg != c // groups:
        raise ValueError(f"conv2d: data {data.shape} and kernel {kernel.shape} do not match groups={groups} "
                         f"(the kernel needs {c} / groups input channels, and groups must divide {k})")
    if groups == c and groups > 1:
        return depthwise_conv2d(data, kernel, strides, padding, dilation)
    rc, ry, rx = ts.reduce_axis((0, cg), "rc"), ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")
    per_group = k // groups

    def fcompute(nn, ff, yy, xx):
        channel = rc if groups == 1 else ff // per_group * cg + rc
        return ts.sum(window.read(nn, channel, yy, xx, ry, rx) * kernel[ff, rc, ry, rx], axis=[rc, ry, rx])

    return compute((n, k, *window.out_hw), fcompute, name="conv2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE,
                   op="conv2d")


def depthwise_conv2d(data: Tensor, kernel: Tensor, strides: IntOrPair = 1, padding: IntOrPair = 0,
                     dilation: IntOrPair = 1) -> Tensor:
    """Each input channel ``c`` convolved with ``m`` filters: kernel ``(C*m, 1, KH, KW)``, output channel
    ``k`` reads input channel ``k // m`` (PyTorch's ``groups=C``)."""
    window = ConvWindow("depthwise_conv2d", data, kernel, strides, padding, dilation)
    n, c, _, _ = data.shape
    k, one, kh, kw = kernel.shape
    if one != 1 or k % c:
        raise ValueError(f"depthwise_conv2d: kernel {kernel.shape} must be (C * multiplier, 1, KH, KW) for "
                         f"data {data.shape}")
    multiplier = k // c
    ry, rx = ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")

    def fcompute(nn, ff, yy, xx):
        channel = ff if multiplier == 1 else ff // multiplier
        return ts.sum(window.read(nn, channel, yy, xx, ry, rx) * kernel[ff, 0, ry, rx], axis=[ry, rx])

    return compute((n, k, *window.out_hw), fcompute, name="depthwise_conv2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE,
                   op="depthwise_conv2d")


def _pad_stage(conv: Tensor) -> Tensor | None:
    first = conv.op.input_tensors[0]
    return first if op_of(first) == "pad" else None


POINTWISE_VECTORS = 8
"""A pointwise convolution's register tile spans at most this many SIMD vectors of positions."""


def _is_pointwise(conv: Tensor) -> bool:
    """1x1 kernel, stride 1, no padding: the image is read as one contiguous row per channel."""
    data = conv.op.input_tensors[0]
    return (all(static_extent(r) == 1 for r in conv.op.reduce_axis[1:]) and _pad_stage(conv) is None
            and data.ndim == 4 and tuple(data.shape[2:]) == tuple(conv.shape[2:]))


def pointwise_tile(channels: int, height: int, width: int, rf: RegisterFile) -> tuple[int, int]:
    """``(output channels, rows)`` of a pointwise convolution's register tile: channels dividing ``channels``
    (at most :data:`CHANNEL_TILE`) x a band of whole rows (at most :data:`POINTWISE_VECTORS` vectors, or one
    row), chosen by :func:`~tesched.tiling.accumulator_tile`."""
    bands = [rows * width for rows in divisors(height, height) if rows * width <= POINTWISE_VECTORS * rf.lanes]
    tile, positions = accumulator_tile(divisors(channels, CHANNEL_TILE), bands or [width], rf)
    return tile, positions // width


def pointwise_row_width(channels: int, height: int, width: int, rf: RegisterFile) -> int:
    """The width of the rows a pointwise convolution's image (contiguous ``height x width`` positions) is
    best read as: the positions of the best register tile over the flattened image (channels as in
    :func:`pointwise_tile` x any divisor of ``height * width`` up to :data:`POINTWISE_VECTORS` vectors), or
    ``width`` when that tile is a band of whole rows. Rows of 28 positions, say, fill 1.75 AVX-512 or 3.5 AVX2
    vectors; rows of 16 give 8 x 16 (AVX-512) or 4 x 16 (AVX2), which read a new image line from L2 per 8
    multiply-adds where a band of 2 channels x 112 positions reads one per 2 (:mod:`tesched.tiling`)."""
    _, positions = accumulator_tile(divisors(channels, CHANNEL_TILE),
                                    divisors(height * width, POINTWISE_VECTORS * rf.lanes), rf)
    return width if positions % width == 0 else positions


BAND_PARALLEL_MIN = 4
"""Bands of rows per image from which a pointwise convolution's bands are its parallel loop."""


def _schedule_pointwise(s: Schedule, conv: Tensor, host: Tensor) -> None:
    """A GEMM over the flattened image: per band of rows and tile of output channels (:func:`pointwise_tile`,
    the band's positions fused into one vectorized loop), the reduction over input channels outside and
    unrolled by :data:`~tesched.nn.dense.REDUCTION_UNROLL`, then the host's tile (the epilogue) over the same
    fused positions. Bands are the outer (parallel) loop and channel tiles the inner one, as column panels
    and row tiles in :func:`~tesched.nn.dense.register_tiles`: a band's column of the image (one line per
    input channel, a whole plane apart: too far apart for the hardware to prefetch) stays in L1 while every
    channel tile reads it, and the weights, contiguous along the reduction, stream. Channel tiles outermost
    measured 1.3x slower (128 -> 256 channels over 28 x 28, AVX-512); they stay outermost only with fewer
    than :data:`BAND_PARALLEL_MIN` bands per image, to share the work among threads."""
    tile, rows = pointwise_tile(hint(conv.shape[1]), hint(conv.shape[2]), hint(conv.shape[3]),
                                RegisterFile.of(dtype=conv.dtype))
    cstage, hstage = s[conv], s[host]
    n, k, h, w = hstage.op.axis
    ko, ki = hstage.split(k, tile)
    ho, hi = hstage.split(h, rows)
    if hint(conv.shape[2]) // rows >= BAND_PARALLEL_MIN:
        hstage.reorder(n, ho, ko, ki, hi, w)
        parallel_outer(hstage, [ho], reduction_work(conv))      # per image (fused with the batch, the
        cstage.compute_at(hstage, ko)                           # tile's offsets are not constants)
    else:
        hstage.reorder(n, ko, ho, ki, hi, w)
        parallel_outer(hstage, [n, ko], reduction_work(conv))
        cstage.compute_at(hstage, ho)
    cn, ck, ch, cw = cstage.op.axis
    positions = cstage.fuse(ch, cw)
    rc = cstage.op.reduce_axis[0]
    rco, rci = cstage.split(rc, largest_divisor(static_extent(rc), REDUCTION_UNROLL))
    cstage.reorder(cn, rco, rci, *cstage.op.reduce_axis[1:], ck, positions)
    cstage.unroll(rci)
    cstage.unroll(ck)
    cstage.vectorize(positions)
    hstage.unroll(ki)
    hstage.vectorize(hstage.fuse(hi, w))


def row_tile(channels: int, width: int, rf: RegisterFile) -> int:
    """Output channels computed together over a whole row of ``width``: the most, dividing ``channels`` and at
    most :data:`CHANNEL_TILE`, whose accumulators (a row's vectors per channel) fit ``rf``'s registers, so
    that they are promoted to registers (see :mod:`tesched.transform.registers`); one if none fits."""
    return max((d for d in divisors(channels, CHANNEL_TILE) if d * rf.vectors(width) <= rf.registers), default=1)


@register_schedule("conv2d")
def schedule_conv2d(s: Schedule, conv: Tensor, host: Tensor) -> None:
    """Per (batch, tile of output channels: :func:`row_tile`) in parallel and per output row: the conv row tile
    computed with the reduction loops outside, the channel tile unrolled and the row vectorized, then the
    host's row tile (the epilogue); the padded input is computed once, at the root. Pointwise
    convolutions tile bands of rows as one flattened, contiguous axis instead."""
    if host.shape != conv.shape:
        schedule_reduction(s, conv, host)
        return
    if _is_pointwise(conv):
        _schedule_pointwise(s, conv, host)
        return
    tile = row_tile(hint(conv.shape[1]), hint(conv.shape[3]), RegisterFile.of(dtype=conv.dtype))
    cstage, hstage = s[conv], s[host]
    n, k, h, w = hstage.op.axis
    ko, ki = hstage.split(k, tile)
    hstage.reorder(n, ko, h, ki, w)
    cstage.compute_at(hstage, h)
    cn, ck, ch, cw = cstage.op.axis
    cstage.reorder(cn, ch, *cstage.op.reduce_axis, ck, cw)
    cstage.unroll(ck)
    cstage.vectorize(cw)
    work = reduction_work(conv)
    parallel_outer(hstage, [n, ko], work)
    hstage.unroll(ki)
    hstage.vectorize(w)
    padded = _pad_stage(conv)
    if padded is not None:
        pad_at_root(s, padded)


def pad_at_root(s: Schedule, padded: Tensor) -> None:
    """The padded input computed once, whole, before the convolution: its rows vectorized, its planes in
    parallel only when it has at least :data:`~tesched.nn.schedule.PARALLEL_MIN_WORK` elements (a parallel
    region costs more than copying a small input, and much more when other processes hold the cores)."""
    pstage = s[padded]
    pstage.compute_root()
    pn, pc, _, pw = pstage.op.axis
    parallel_outer(pstage, [pn, pc], element_count(padded))
    pstage.vectorize(pw)


@register_schedule("depthwise_conv2d")
def schedule_depthwise_conv2d(s: Schedule, conv: Tensor, host: Tensor) -> None:
    """One channel plane per parallel iteration, with its padded input computed per plane."""
    schedule_channel_planes(s, conv, host, _pad_stage(conv))
