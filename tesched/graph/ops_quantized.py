"""Quantized graph ops: ``nn.quantize``, ``nn.dequantize``, ``nn.requantize``, the narrow products
``nn.dense_packed`` and ``nn.conv2d_nhwc_packed``, and the builders ``nn.qdense`` and ``nn.qconv2d``.

The builders take a float bias and int8 weights with one scale per output channel as NumPy arrays, pack
them into constants (:func:`tesched.nn.quantized_dense_params`), and return ``requantize(product)``: the
product is an ``out_elemwise_fusable`` anchor and the requantize (+ relu) a broadcast epilogue, so
``fuse_ops`` puts both in one kernel. Semantics and layouts are those of :mod:`tesched.nn.quantized`
(uint8 or int8 activations, NHWC convolutions); NumPy evaluation comes from :mod:`tesched.nn.quantized_ref`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Constant, Expr
from tesched.graph.op import register_op
from tesched.nn import quantized_ref as ref
from tesched.nn.pattern import Pattern
from tesched.nn.shape import padding4, pair

Attrs = Mapping[str, Any]
IntOrPair = int | Sequence[int]


def _unpack_dense(packed: np.ndarray) -> np.ndarray:
    groups, n, group = packed.shape
    return packed.transpose(1, 0, 2).reshape(n, groups * group)


def _unpack_conv(packed: np.ndarray) -> np.ndarray:
    kh, kw, groups, o, group = packed.shape
    return packed.transpose(3, 2, 4, 0, 1).reshape(o, groups * group, kh, kw)


_QUANTIZE = register_op("nn.quantize", Pattern.ELEMWISE,
                        lambda args, attrs: nn.quantize(args[0], attrs["scale"], attrs["zero_point"], attrs["dtype"]),
                        lambda args, attrs: ref.quantize(args[0], attrs["scale"], attrs["zero_point"], attrs["dtype"]),
                        1)
_DEQUANTIZE = register_op("nn.dequantize", Pattern.ELEMWISE,
                          lambda args, attrs: nn.dequantize(args[0], attrs["scale"], attrs["zero_point"]),
                          lambda args, attrs: ref.dequantize(args[0], attrs["scale"], attrs["zero_point"]), 1)
_REQUANTIZE = register_op("nn.requantize", Pattern.BROADCAST,
                          lambda args, attrs: nn.requantize(args[0], args[1], attrs["zero_point"], attrs["dtype"],
                                                            args[2], attrs["relu"]),
                          lambda args, attrs: ref.requantize(args[0], args[1], attrs["zero_point"], attrs["dtype"],
                                                             args[2], attrs["relu"]), 3)
_DENSE_PACKED = register_op("nn.dense_packed", Pattern.OUT_ELEMWISE_FUSABLE,
                            lambda args, attrs: nn.dense_packed(args[0], args[1]),
                            lambda args, attrs: ref.dense(args[0], _unpack_dense(args[1])), 2)


def _conv_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    top, left, bottom, right = attrs["padding"]
    if (top, left) != (bottom, right):
        raise ValueError("nn.conv2d_nhwc_packed: the NumPy evaluation takes symmetric padding only")
    return ref.conv2d_nhwc(args[0], _unpack_conv(args[1]), attrs["strides"], (top, left), attrs["pad_value"])


_CONV2D_PACKED = register_op("nn.conv2d_nhwc_packed", Pattern.OUT_ELEMWISE_FUSABLE,
                             lambda args, attrs: nn.conv2d_nhwc_packed(args[0], args[1], attrs["strides"],
                                                                       attrs["padding"], attrs["pad_value"]),
                             _conv_eval, 2)


def quantize(data: Expr, scale: float, zero_point: int, dtype: str = "uint8") -> Call:
    """``saturate(rint(data / scale) + zero_point)`` (see :func:`tesched.nn.quantize`)."""
    return Call(_QUANTIZE, [data], {"scale": float(scale), "zero_point": int(zero_point), "dtype": dtype})


def dequantize(data: Expr, scale: float, zero_point: int) -> Call:
    """``(float32(data) - zero_point) * scale``."""
    return Call(_DEQUANTIZE, [data], {"scale": float(scale), "zero_point": int(zero_point)})


def requantize(acc: Expr, multiplier: Expr, offset: Expr, zero_point: int, dtype: str = "uint8",
               relu: bool = False) -> Call:
    """An int32 accumulator to ``dtype`` with per-channel ``multiplier`` and ``offset`` (last axis)."""
    return Call(_REQUANTIZE, [acc, multiplier, offset], {"zero_point": int(zero_point), "dtype": dtype,
                                                         "relu": bool(relu)})


def dense_packed(data: Expr, packed: Expr) -> Call:
    """The int32 (or float32) product of :func:`tesched.nn.dense_packed`."""
    return Call(_DENSE_PACKED, [data, packed])


def conv2d_nhwc_packed(data: Expr, packed: Expr, strides: IntOrPair = 1, padding: IntOrPair = 0,
                       pad_value: int = 0) -> Call:
    """The int32 NHWC convolution of :func:`tesched.nn.conv2d_nhwc_packed`."""
    attrs = {"strides": pair(strides, "nn.conv2d_nhwc_packed strides"),
             "padding": padding4(padding, "nn.conv2d_nhwc_packed padding"), "pad_value": int(pad_value)}
    return Call(_CONV2D_PACKED, [data, packed], attrs)


def qdense(data: Expr, weight: np.ndarray, weight_scales: np.ndarray, bias: np.ndarray | None, data_scale: float,
           data_zero_point: int, out_scale: float, out_zero_point: int, out_dtype: str = "uint8",
           relu: bool = False) -> Call:
    """Quantized Linear on ``data`` (uint8 or int8, ``data_scale``/``data_zero_point``) with int8
    ``weight[N, K]`` and per-channel ``weight_scales``; output quantized with ``out_scale``/``out_zero_point``."""
    packed, offset, multiplier = nn.quantized_dense_params(weight, weight_scales, bias, data_scale, data_zero_point,
                                                           out_scale)
    return requantize(dense_packed(data, Constant(packed)), Constant(multiplier), Constant(offset), out_zero_point,
                      out_dtype, relu)


def qconv2d(data: Expr, weight: np.ndarray, weight_scales: np.ndarray, bias: np.ndarray | None, data_scale: float,
            data_zero_point: int, out_scale: float, out_zero_point: int, out_dtype: str = "uint8",
            relu: bool = False, strides: IntOrPair = 1, padding: IntOrPair = 0) -> Call:
    """Quantized convolution of NHWC ``data`` with int8 OIHW ``weight`` (see :func:`qdense` for the rest);
    borders are padded with the data's zero point."""
    packed, offset, multiplier = nn.quantized_conv_params(weight, weight_scales, bias, data_scale, data_zero_point,
                                                          out_scale)
    product = conv2d_nhwc_packed(data, Constant(packed), strides, padding, data_zero_point)
    return requantize(product, Constant(multiplier), Constant(offset), out_zero_point, out_dtype, relu)
