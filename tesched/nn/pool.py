"""Pooling over NCHW: ``max_pool2d``, ``avg_pool2d`` and ``global_avg_pool2d``, with default schedules.

Padded positions never win a max (the pad stage holds ``-inf``) and, for ``avg_pool2d`` with
``count_include_pad=False`` (the default, as in PyTorch's ``False`` option), are not counted. The pooling
reduction is tagged ``out_elemwise_fusable`` (TVM's kind for pools), so an elementwise epilogue fuses.
"""
from __future__ import annotations

from typing import Sequence

import tesched as ts
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import register_schedule, schedule_channel_planes
from tesched.nn.shape import padding4, pair, window_output
from tesched.nn.transform import pad
from tesched.schedule.schedule import Schedule
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor

IntOrPair = int | Sequence[int]


def _window(x: Tensor, pool_size: IntOrPair, strides: IntOrPair | None, padding: IntOrPair, op: str):
    if x.ndim != 4:
        raise ValueError(f"{op}: input must be NCHW (4-D), got {x.shape}")
    kh, kw = pair(pool_size, f"{op} pool_size")
    sh, sw = pair(strides if strides is not None else (kh, kw), f"{op} strides")
    top, left, bottom, right = padding4(padding, f"{op} padding")
    if max(top, bottom) >= kh or max(left, right) >= kw:
        raise ValueError(f"{op}: padding {padding} must be smaller than the window {(kh, kw)}")
    oh = window_output(x.shape[2], kh, sh, top, bottom, 1, op)
    ow = window_output(x.shape[3], kw, sw, left, right, 1, op)
    return (kh, kw), (sh, sw), (top, left, bottom, right), (x.shape[0], x.shape[1], oh, ow)


def _pad_hw(x: Tensor, pads: tuple[int, int, int, int], value: float) -> Tensor:
    top, left, bottom, right = pads
    if not any(pads):
        return x
    return pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], pad_value=value)


def max_pool2d(x: Tensor, pool_size: IntOrPair, strides: IntOrPair | None = None,
               padding: IntOrPair = 0) -> Tensor:
    """Maximum over each ``pool_size`` window (``strides`` default to the window)."""
    (kh, kw), (sh, sw), pads, shape = _window(x, pool_size, strides, padding, "max_pool2d")
    padded = _pad_hw(x, pads, float("-inf"))
    ry, rx = ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")
    return compute(shape, lambda n, c, h, w: ts.max(padded[n, c, h * sh + ry, w * sw + rx], axis=[ry, rx]),
                   name="max_pool2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="max_pool2d")


def avg_pool2d(x: Tensor, pool_size: IntOrPair, strides: IntOrPair | None = None, padding: IntOrPair = 0,
               count_include_pad: bool = False) -> Tensor:
    """Mean over each ``pool_size`` window; padded positions count only if ``count_include_pad``."""
    (kh, kw), (sh, sw), pads, shape = _window(x, pool_size, strides, padding, "avg_pool2d")
    padded = _pad_hw(x, pads, 0.0)
    ry, rx = ts.reduce_axis((0, kh), "ry"), ts.reduce_axis((0, kw), "rx")
    total = compute(shape, lambda n, c, h, w: ts.sum(padded[n, c, h * sh + ry, w * sw + rx], axis=[ry, rx]),
                    name="avg_pool2d_sum", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="avg_pool2d")
    top, left, _, _ = pads
    height, width = x.shape[2], x.shape[3]

    def inside(start: Expr, size: int, window: int) -> Expr:
        return ts.minimum(start + window, size) - ts.maximum(start, 0)

    def fcompute(n, c, h, w):
        if count_include_pad:
            return total[n, c, h, w] / float(kh * kw)
        count = inside(h * sh - top, height, kh) * inside(w * sw - left, width, kw)
        return total[n, c, h, w] / count.astype(x.dtype)

    return compute(shape, fcompute, name="avg_pool2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="avg_pool2d")


def global_avg_pool2d(x: Tensor) -> Tensor:
    """Mean over the whole H x W plane: output ``(N, C, 1, 1)``."""
    if x.ndim != 4:
        raise ValueError(f"global_avg_pool2d: input must be NCHW (4-D), got {x.shape}")
    n, c, height, width = x.shape
    ry, rx = ts.reduce_axis((0, height), "ry"), ts.reduce_axis((0, width), "rx")
    total = compute((n, c, 1, 1), lambda b, o, h, w: ts.sum(x[b, o, ry, rx], axis=[ry, rx]),
                    name="global_avg_pool2d_sum", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="global_avg_pool2d")
    return compute(total.shape, lambda *i: total[i] / float(height * width), name="global_avg_pool2d",
                   pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="global_avg_pool2d")


def _window_input(red: Tensor) -> Tensor | None:
    first = red.op.input_tensors[0]
    return first if op_of(first) == "pad" else None


@register_schedule("max_pool2d")
@register_schedule("avg_pool2d")
def schedule_pool2d(s: Schedule, red: Tensor, host: Tensor) -> None:
    """One channel plane per parallel iteration (see :func:`.schedule.schedule_channel_planes`)."""
    schedule_channel_planes(s, red, host, _window_input(red))
