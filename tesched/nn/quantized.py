"""Quantized and low-precision inference ops: ``quantize``, ``dequantize``, ``requantize``, the narrow
products ``dense_packed`` and ``conv2d_nhwc_packed`` (int8 or bfloat16 operands, int32 or float32
accumulation), and ``qdense``/``qconv2d`` (the products with a fused requantize + relu epilogue).

Conventions (those of PyTorch's fbgemm backend):

- A quantized tensor ``q`` stands for ``(q - zero_point) * scale``; activations are ``uint8`` or ``int8``
  with one scale and zero point; weights are ``int8``, symmetric (zero point 0), with one scale per output
  channel.
- Quantizing rounds to nearest even: ``saturate(rint(x * (1 / scale)) + zero_point)``; requantizing an int32
  accumulator multiplies it in float32 by ``multiplier = x_scale * w_scale[c] / out_scale``.
- Weights are packed once, ahead of time, with :func:`pack_dense_weight` / :func:`pack_conv_weight`
  (NumPy), into the layout the dot-product instructions read: ``G`` consecutive reduction elements per
  output channel (``G`` = 4 for 8-bit integers, 2 for bfloat16), output channels next. The convolutions
  are NHWC (channels last), so every access is contiguous. :func:`quantized_dense_params` and
  :func:`quantized_conv_params` fold the bias and the activation zero point into one int32 ``offset`` per
  channel.

The default schedules are in :mod:`.quantized_schedule`; NumPy references in :mod:`.quantized_ref`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import padding4, pair, window_output
from tesched.nn.transform import pad
from tesched.te import dtype as dt
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor

GROUPS = {"uint8": 4, "int8": 4, "bfloat16": 2}
"""Reduction elements per 32-bit lane of a dot-product instruction, per operand dtype."""

ACCUMULATORS = {"uint8": "int32", "int8": "int32", "bfloat16": "float32"}


def group_of(dtype: str, op: str) -> int:
    """The packing group of operands of ``dtype`` (``ValueError`` naming ``op`` for other dtypes)."""
    if dtype not in GROUPS:
        raise TypeError(f"{op}: operands must be one of {sorted(GROUPS)}, got {dtype}")
    return GROUPS[dtype]


def _packed_shape_check(op: str, reduced: int, group: int) -> None:
    if reduced % group:
        raise ValueError(f"{op}: the reduced size {reduced} must be a multiple of {group} to pack")


def pack_dense_weight(weight: np.ndarray) -> np.ndarray:
    """``weight[N, K]`` (PyTorch's Linear layout) as ``packed[K / G, N, G]``, ``packed[k // G, n, k % G] =
    weight[n, k]``, for :func:`dense_packed`."""
    n, k = weight.shape
    group = group_of(dt.normalize(weight.dtype), "pack_dense_weight")
    _packed_shape_check("pack_dense_weight", k, group)
    return np.ascontiguousarray(weight.reshape(n, k // group, group).transpose(1, 0, 2))


def pack_conv_weight(weight: np.ndarray) -> np.ndarray:
    """``weight[O, C, KH, KW]`` (OIHW) as ``packed[KH, KW, C / G, O, G]`` for :func:`conv2d_nhwc_packed`."""
    o, c, kh, kw = weight.shape
    group = group_of(dt.normalize(weight.dtype), "pack_conv_weight")
    _packed_shape_check("pack_conv_weight", c, group)
    return np.ascontiguousarray(weight.reshape(o, c // group, group, kh, kw).transpose(3, 4, 1, 0, 2))


def _check_operands(op: str, data: Tensor, packed: Tensor) -> tuple[int, str]:
    group = group_of(data.dtype, op)
    if packed.dtype not in GROUPS or GROUPS[packed.dtype] != group or \
            ACCUMULATORS[packed.dtype] != ACCUMULATORS[data.dtype] or packed.dtype == "uint8":
        raise TypeError(f"{op}: data is {data.dtype} and packed weights {packed.dtype}; expected uint8 or int8 "
                        "data with int8 weights, or bfloat16 with bfloat16")
    if int(packed.shape[-1]) != group:
        raise ValueError(f"{op}: packed weights {packed.shape} must end with the group size {group}")
    return group, ACCUMULATORS[data.dtype]


def dense_packed(data: Tensor, packed: Tensor) -> Tensor:
    """``out[i, j] = sum_k wide(data[i, k]) * wide(weight[j, k])`` in int32 (8-bit operands) or float32
    (bfloat16), with ``packed = pack_dense_weight(weight)`` of shape ``(K / G, N, G)``."""
    group, acc = _check_operands("dense_packed", data, packed)
    if data.ndim != 2 or packed.ndim != 3 or int(packed.shape[0]) * group != int(data.shape[1]):
        raise ValueError(f"dense_packed: data {data.shape} and packed weights {packed.shape} do not match "
                         f"(expected (M, K) and (K / {group}, N, {group}))")
    ko = ts.reduce_axis((0, packed.shape[0]), "ko")
    kt = ts.reduce_axis((0, group), "kt")
    return compute((data.shape[0], packed.shape[1]),
                   lambda i, j: ts.sum(data[i, group * ko + kt].astype(acc) * packed[ko, j, kt].astype(acc),
                                       axis=[ko, kt]),
                   name="dense_packed", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="dense_packed")


def conv2d_nhwc_packed(data: Tensor, packed: Tensor, strides: int | Sequence[int] = 1,
                       padding: int | Sequence[int] = 0, pad_value: int = 0) -> Tensor:
    """``out[n, h, w, o] = sum wide(pad(data)[n, h*sh + r, w*sw + s, c]) * wide(weight[o, c, r, s])`` with
    ``data`` NHWC and ``packed = pack_conv_weight(weight)`` of shape ``(KH, KW, C / G, O, G)``; borders are
    padded with ``pad_value`` (a quantized activation's zero point)."""
    group, acc = _check_operands("conv2d_nhwc_packed", data, packed)
    if data.ndim != 4 or packed.ndim != 5 or int(packed.shape[2]) * group != int(data.shape[3]):
        raise ValueError(f"conv2d_nhwc_packed: data {data.shape} (NHWC) and packed weights {packed.shape} do not "
                         f"match (expected (KH, KW, C / {group}, O, {group}))")
    sh, sw = pair(strides, "conv2d_nhwc_packed strides")
    top, left, bottom, right = padding4(padding)
    kh, kw = int(packed.shape[0]), int(packed.shape[1])
    padded = pad(data, [(0, 0), (top, bottom), (left, right), (0, 0)], pad_value, name="pad_nhwc") \
        if any((top, left, bottom, right)) else data
    out_h = window_output(data.shape[1], kh, sh, top, bottom, 1, "conv2d_nhwc_packed")
    out_w = window_output(data.shape[2], kw, sw, left, right, 1, "conv2d_nhwc_packed")
    r, s = ts.reduce_axis((0, kh), "r"), ts.reduce_axis((0, kw), "s")
    cb, ct = ts.reduce_axis((0, packed.shape[2]), "cb"), ts.reduce_axis((0, group), "ct")

    def fcompute(n: Expr, h: Expr, w: Expr, o: Expr) -> Expr:
        x = padded[n, h * sh + r, w * sw + s, group * cb + ct].astype(acc)
        return ts.sum(x * packed[r, s, cb, o, ct].astype(acc), axis=[r, s, cb, ct])

    return compute((data.shape[0], out_h, out_w, packed.shape[3]), fcompute, name="conv2d_nhwc_packed",
                   pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="conv2d_nhwc_packed")


def quantize(x: Tensor, scale: float, zero_point: int, dtype: str = "uint8") -> Tensor:
    """``saturate(rint(x * (1 / scale)) + zero_point)`` in ``dtype`` (``uint8`` or ``int8``)."""
    inverse = float(np.float32(1.0) / np.float32(scale))
    return compute(x.shape, lambda *i: ts.saturate_cast(ts.rint(x[i].astype("float32") * inverse) + zero_point,
                                                        dtype),
                   name="quantize", pattern=Pattern.ELEMWISE, op="quantize")


def dequantize(q: Tensor, scale: float, zero_point: int) -> Tensor:
    """``(float32(q) - zero_point) * scale``."""
    return compute(q.shape, lambda *i: (q[i].astype("float32") - float(zero_point)) * float(scale),
                   name="dequantize", pattern=Pattern.ELEMWISE, op="dequantize")


def requantize(acc: Tensor, multiplier: Tensor, zero_point: int, dtype: str = "uint8",
               offset: Tensor | None = None, relu: bool = False) -> Tensor:
    """``saturate(rint(float32(acc + offset[c]) * multiplier[c]) + zero_point)`` in ``dtype``, where ``c`` is
    the last axis (the channel of NHWC and of dense outputs); with ``relu``, values below ``zero_point``
    (negative reals) become ``zero_point``. ``multiplier`` and ``offset`` are 1-D, one entry per channel."""
    channels = acc.shape[-1]
    for name, t, want in (("multiplier", multiplier, "float32"), ("offset", offset, "int32")):
        if t is not None and (t.ndim != 1 or int(t.shape[0]) != int(channels) or t.dtype != want):
            raise ValueError(f"requantize: {name} must be a 1-D {want} tensor of {channels} channels, got "
                             f"{t.dtype}{list(t.shape)}")
    if acc.dtype != "int32":
        raise TypeError(f"requantize: the accumulator must be int32, got {acc.dtype}")

    def fcompute(*i: Expr) -> Expr:
        total = acc[i] if offset is None else acc[i] + offset[i[-1]]
        value = ts.rint(total.astype("float32") * multiplier[i[-1]]) + float(zero_point)
        return ts.saturate_cast(ts.maximum(value, float(zero_point)) if relu else value, dtype)

    return compute(acc.shape, fcompute, name="requantize", pattern=Pattern.ELEMWISE, op="requantize")


def qdense(data: Tensor, packed: Tensor, offset: Tensor, multiplier: Tensor, zero_point: int,
           dtype: str = "uint8", relu: bool = False) -> Tensor:
    """Quantized Linear: :func:`dense_packed` then :func:`requantize` (fused by the default schedule).
    Get ``packed``, ``offset`` and ``multiplier`` from :func:`quantized_dense_params`."""
    return requantize(dense_packed(data, packed), multiplier, zero_point, dtype, offset, relu)


def qconv2d(data: Tensor, packed: Tensor, offset: Tensor, multiplier: Tensor, zero_point: int,
            dtype: str = "uint8", relu: bool = False, strides: int | Sequence[int] = 1,
            padding: int | Sequence[int] = 0, data_zero_point: int = 0) -> Tensor:
    """Quantized NHWC convolution: :func:`conv2d_nhwc_packed` (borders padded with the data's zero point)
    then :func:`requantize`. Get ``packed``, ``offset`` and ``multiplier`` from
    :func:`quantized_conv_params`."""
    acc = conv2d_nhwc_packed(data, packed, strides, padding, data_zero_point)
    return requantize(acc, multiplier, zero_point, dtype, offset, relu)


def _params(weight: np.ndarray, weight_scales: np.ndarray, bias: np.ndarray | None, data_scale: float,
            data_zero_point: int, out_scale: float, reduced_axes: tuple[int, ...]):
    scales = np.asarray(weight_scales, np.float64).reshape(-1)
    if weight.dtype != np.int8 or scales.shape[0] != weight.shape[0]:
        raise ValueError(f"quantized weights must be int8 with one scale per output channel ({weight.shape[0]}), "
                         f"got {weight.dtype} and {scales.shape[0]} scales")
    sums = weight.astype(np.int64).sum(axis=reduced_axes)
    bias_q = np.zeros(weight.shape[0], np.int64) if bias is None else \
        np.rint(np.asarray(bias, np.float64) / (data_scale * scales)).astype(np.int64)
    offset = (bias_q - data_zero_point * sums).astype(np.int32)
    multiplier = (data_scale * scales / out_scale).astype(np.float32)
    return offset, multiplier


def quantized_dense_params(weight: np.ndarray, weight_scales: np.ndarray, bias: np.ndarray | None,
                           data_scale: float, data_zero_point: int, out_scale: float):
    """``(packed, offset, multiplier)`` NumPy arrays for :func:`qdense` from int8 ``weight[N, K]``, its
    per-channel scales, a float bias (or None), and the activations' and output's quantization."""
    offset, multiplier = _params(weight, weight_scales, bias, data_scale, data_zero_point, out_scale, (1,))
    return pack_dense_weight(weight), offset, multiplier


def quantized_conv_params(weight: np.ndarray, weight_scales: np.ndarray, bias: np.ndarray | None,
                          data_scale: float, data_zero_point: int, out_scale: float):
    """``(packed, offset, multiplier)`` NumPy arrays for :func:`qconv2d` from int8 OIHW ``weight``."""
    offset, multiplier = _params(weight, weight_scales, bias, data_scale, data_zero_point, out_scale, (1, 2, 3))
    return pack_conv_weight(weight), offset, multiplier
