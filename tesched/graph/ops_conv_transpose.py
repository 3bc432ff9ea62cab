"""Transposed convolution as a graph builder, ``nn.conv2d_transpose`` (PyTorch's ``ConvTranspose2d``: stride,
padding, output padding, dilation, groups), decomposed into sub-pixel form: no zeros are inserted into the
input and no output is scattered.

Output row ``y`` of a stride-``s`` transposed convolution with padding ``p`` receives, for each kernel tap
``k`` with ``(y + p - k*d) % s == 0``, the input row ``(y + p - k*d) / s``. Grouping the rows by their phase
``r = (y + p) % s``, each phase is an ordinary stride-1 convolution of the input with the taps of that phase
(reversed, with offsets ``(k*d - r) / s``). All ``s_h * s_w`` phases become the output channels of one
``nn.conv2d`` (its weight gathered from the transposed-convolution weight by constant indices, so it folds
to a constant when the weight is one; phases with fewer taps get zero taps), the bias joins that conv's
epilogue, and one injective stage interleaves the phases into rows and columns (a pixel shuffle) and crops
the padding. A kernel no larger than its stride (U-Net's 2x2, stride 2) becomes a 1x1 convolution.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tesched.graph.ir import Constant, Expr
from tesched.graph.ops_elemwise import bias_add, multiply
from tesched.graph.ops_nn import conv2d
from tesched.graph.ops_transform import reshape, strided_slice, take, transpose
from tesched.nn.shape import pair

IntOrPair = int | Sequence[int]


class _Axis:
    """The sub-pixel plan of one spatial axis: input ``size``, kernel ``taps``, ``stride``, ``padding``,
    ``dilation``, ``extra`` (output padding)."""

    def __init__(self, size: int, taps: int, stride: int, padding: int, dilation: int, extra: int):
        self.stride, self.padding = stride, padding
        self.out = (size - 1) * stride - 2 * padding + dilation * (taps - 1) + extra + 1
        if self.out < 1:
            raise ValueError(f"nn.conv2d_transpose: an input of {size} gives an empty output ({self.out})")
        offsets = [(k * dilation) // stride for k in range(taps)]
        self.phase_of = [(k * dilation) % stride for k in range(taps)]
        self.reach = max(offsets)
        self.tap_of = [self.reach - o for o in offsets]          # position of tap k in its phase's kernel
        self.first = padding // stride                            # first row of each phase the output needs
        self.rows = -(-(padding + self.out) // stride) - self.first
        shift = self.reach - self.first
        self.crop, self.pad_lo = max(0, -shift), max(0, shift)    # rows dropped before, zeros added before
        self.pad_hi = max(0, self.rows - (size - self.first))
        self.begin = padding - self.first * stride                # where the output starts in the shuffle


def _phase_weight(weight: Expr, groups: int, axes: tuple[_Axis, _Axis]) -> Expr:
    """``(groups * s_h * s_w * C_out/groups, C_in/groups, KH', KW')``: each phase's taps, reversed, gathered
    from the ``(C_in, C_out/groups, KH, KW)`` transposed-convolution weight."""
    c_in, c_out_g, kh, kw = weight.tensor_type.shape
    c_in_g = c_in // groups
    (ah, aw), phases = axes, axes[0].stride * axes[1].stride
    index = np.zeros((groups, axes[0].stride, axes[1].stride, c_out_g, c_in_g, ah.reach + 1, aw.reach + 1), np.int64)
    mask = np.zeros(index.shape, weight.tensor_type.dtype)
    g, co, ci = np.ix_(range(groups), range(c_out_g), range(c_in_g))
    for i in range(kh):
        for j in range(kw):
            source = (((g * c_in_g + ci) * c_out_g + co) * kh + i) * kw + j     # (groups, c_out_g, c_in_g)
            at = (slice(None), ah.phase_of[i], aw.phase_of[j], slice(None), slice(None), ah.tap_of[i], aw.tap_of[j])
            index[at], mask[at] = source, 1
    shape = (groups * phases * c_out_g, c_in_g, ah.reach + 1, aw.reach + 1)
    flat = reshape(weight, (-1,))
    gathered = take(flat, Constant(index.reshape(shape)), axis=0)
    return gathered if mask.all() else multiply(gathered, Constant(mask.reshape(shape)))


def conv2d_transpose(data: Expr, weight: Expr, bias: Expr | None = None, strides: IntOrPair = 1,
                     padding: IntOrPair = 0, output_padding: IntOrPair = 0, dilation: IntOrPair = 1,
                     groups: int = 1) -> Expr:
    """PyTorch's ``conv_transpose2d``: NCHW ``data``, weight ``(C_in, C_out / groups, KH, KW)``, optional 1-D
    ``bias``; ``padding`` and ``output_padding`` are ``p`` or ``(ph, pw)``. See the module doc for the form."""
    if data.tensor_type.ndim != 4 or weight.tensor_type.ndim != 4:
        raise ValueError(f"nn.conv2d_transpose: data must be NCHW and weight (C_in, C_out / groups, KH, KW), got "
                         f"{data.tensor_type.shape} and {weight.tensor_type.shape}")
    n, c_in, height, width = data.tensor_type.shape
    w_in, c_out_g, kh, kw = weight.tensor_type.shape
    if not isinstance(groups, int) or groups < 1 or c_in % groups or w_in != c_in:
        raise ValueError(f"nn.conv2d_transpose: data {data.tensor_type.shape} and weight {weight.tensor_type.shape} "
                         f"do not match groups={groups}")
    stride, dil = pair(strides, "nn.conv2d_transpose strides"), pair(dilation, "nn.conv2d_transpose dilation")
    pads, extras = _pair0(padding, "padding"), _pair0(output_padding, "output_padding")
    if any(e >= max(s, d) for e, s, d in zip(extras, stride, dil)):
        raise ValueError(f"nn.conv2d_transpose: output_padding {extras} must be smaller than the stride or the "
                         f"dilation ({stride}, {dil})")
    ah, aw = (_Axis(*args) for args in zip((height, width), (kh, kw), stride, pads, dil, extras))
    x = data
    if ah.crop or aw.crop:
        x = strided_slice(x, [0, 0, ah.crop, aw.crop], [n, c_in, height, width])
    out = conv2d(x, _phase_weight(weight, groups, (ah, aw)), padding=(ah.pad_lo, aw.pad_lo, ah.pad_hi, aw.pad_hi),
                 groups=groups)
    phases, c_out = stride[0] * stride[1], groups * c_out_g
    if bias is not None:
        order = np.arange(c_out).reshape(groups, 1, c_out_g).repeat(phases, axis=1)
        out = bias_add(out, take(bias, Constant(order.reshape(-1)), axis=0), axis=1)
    rows, cols = out.tensor_type.shape[2:]
    if phases > 1:
        out = reshape(out, (n, groups, stride[0], stride[1], c_out_g, rows, cols))
        out = transpose(out, (0, 1, 4, 5, 2, 6, 3))
    out = reshape(out, (n, c_out, rows * stride[0], cols * stride[1]))
    if out.tensor_type.shape[2:] == (ah.out, aw.out):
        return out
    return strided_slice(out, [0, 0, ah.begin, aw.begin], [n, c_out, ah.begin + ah.out, aw.begin + aw.out])


def _pair0(value: IntOrPair, what: str) -> tuple[int, int]:
    items = (value, value) if isinstance(value, int) else tuple(value)
    if len(items) != 2 or not all(isinstance(v, int) and v >= 0 for v in items):
        raise ValueError(f"nn.conv2d_transpose: {what} must be a non-negative int or a pair of them, got {value!r}")
    return int(items[0]), int(items[1])
