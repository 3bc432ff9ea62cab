"""Neural-network graph ops and their builders: ``nn.conv2d`` (with ``depthwise_conv2d`` as ``groups``
equal to the channels; ``nn.conv2d_weight_last`` is the same with weights stored in blocks of output
channels, output channels last),
``nn.dense`` (with an optional bias as ``nn.bias_add``; ``nn.dense_panels`` is the same with the weight
packed in column panels), ``nn.matmul``, ``nn.batch_norm`` (inference), ``nn.batch_norm_train``,
``nn.layer_norm``, ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d`` and
``nn.softmax``. Attribute names follow Relay (``strides``, ``padding``, ``dilation``, ``groups``,
``pool_size``, ``epsilon``, ``axis``); padding is stored as ``(top, left, bottom, right)``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import tesched.nn as nn
from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.graph.ops_elemwise import bias_add, bias_channel_shape
from tesched.nn import conv_channels
from tesched.nn.pattern import Pattern
from tesched.nn.shape import normalize_axis, padding4, pair

IntOrPair = int | Sequence[int]
Attrs = Mapping[str, Any]


def _windows(x: np.ndarray, size: tuple[int, int], strides: tuple[int, int], dilation: tuple[int, int],
             pads: tuple[int, int, int, int], fill: float) -> np.ndarray:
    """``(N, C, OH, OW, KH, KW)`` view of the windows of padded ``x``."""
    top, left, bottom, right = pads
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    span = ((size[0] - 1) * dilation[0] + 1, (size[1] - 1) * dilation[1] + 1)
    view = sliding_window_view(padded, span, axis=(2, 3))
    return view[:, :, ::strides[0], ::strides[1], ::dilation[0], ::dilation[1]]


# convolution and matrix products ------------------------------------------------------------------

def _conv2d_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, w = args
    groups = attrs["groups"]
    k, cg, kh, kw = w.shape
    win = _windows(x.astype(np.float64), (kh, kw), attrs["strides"], attrs["dilation"], attrs["padding"], 0.0)
    n, _, oh, ow = win.shape[:4]
    win = win.reshape(n, groups, cg, oh, ow, kh, kw)
    out = np.einsum("ngchwij,gkcij->ngkhw", win, w.reshape(groups, k // groups, cg, kh, kw))
    return out.reshape(n, k, oh, ow).astype(x.dtype)


_CONV2D = register_op("nn.conv2d", Pattern.OUT_ELEMWISE_FUSABLE,
                      lambda args, attrs: nn.conv2d(args[0], args[1], attrs["strides"], attrs["padding"],
                                                    attrs["dilation"], attrs["groups"]),
                      _conv2d_eval, 2)


def conv2d(data: Expr, weight: Expr, strides: IntOrPair = 1, padding: IntOrPair = 0, dilation: IntOrPair = 1,
           groups: int = 1) -> Call:
    """2-D convolution, NCHW data and OIHW weight (see :func:`tesched.nn.conv2d`)."""
    attrs = {"strides": pair(strides, "nn.conv2d strides"), "padding": padding4(padding, "nn.conv2d padding"),
             "dilation": pair(dilation, "nn.conv2d dilation"), "groups": int(groups)}
    return Call(_CONV2D, [data, weight], attrs)


def depthwise_conv2d(data: Expr, weight: Expr, strides: IntOrPair = 1, padding: IntOrPair = 0,
                     dilation: IntOrPair = 1) -> Call:
    """Depthwise convolution: ``nn.conv2d`` with one group per input channel; weight ``(C*m, 1, KH, KW)``."""
    channels = data.tensor_type.shape[1] if data.tensor_type.ndim == 4 else 1
    return conv2d(data, weight, strides, padding, dilation, groups=channels)


_CONV2D_WEIGHT_LAST = register_op(
    "nn.conv2d_weight_last", Pattern.OUT_ELEMWISE_FUSABLE,
    lambda args, attrs: conv_channels.conv2d_weight_last(args[0], args[1], attrs["strides"], attrs["padding"],
                                                         attrs["dilation"]),
    lambda args, attrs: _conv2d_eval([args[0], conv_channels.weight_oihw(args[1])], {**attrs, "groups": 1}), 2)


def conv2d_weight_last(data: Expr, weight: Expr, strides: IntOrPair = 1, padding: IntOrPair = 0,
                       dilation: IntOrPair = 1) -> Call:
    """``nn.conv2d`` (one group) with its weight stored ``(K / B, C, KH, KW, B)``, vectorized along output
    channels (see :mod:`tesched.nn.conv_channels`); ``alter_op_layout`` chooses it."""
    attrs = {"strides": pair(strides, "nn.conv2d_weight_last strides"),
             "padding": padding4(padding, "nn.conv2d_weight_last padding"),
             "dilation": pair(dilation, "nn.conv2d_weight_last dilation")}
    return Call(_CONV2D_WEIGHT_LAST, [data, weight], attrs)


_DENSE = register_op("nn.dense", Pattern.OUT_ELEMWISE_FUSABLE, lambda args, attrs: nn.dense(args[0], args[1]),
                     lambda args, attrs: (args[0].astype(np.float64) @ args[1].T.astype(np.float64))
                     .astype(args[0].dtype), 2)


def dense(data: Expr, weight: Expr, bias: Expr | None = None) -> Expr:
    """``data @ weight.T``, then ``nn.bias_add(..., bias, axis=-1)`` when ``bias`` is given."""
    out = Call(_DENSE, [data, weight])
    return out if bias is None else bias_add(out, bias, axis=-1)


_DENSE_PANELS = register_op(
    "nn.dense_panels", Pattern.OUT_ELEMWISE_FUSABLE, lambda args, attrs: nn.dense_panels(args[0], args[1]),
    lambda args, attrs: (args[0].astype(np.float64) @ nn.unpack_dense_panels(args[1]).T.astype(np.float64))
    .astype(args[0].dtype), 2)


def dense_panels(data: Expr, packed: Expr) -> Call:
    """``nn.dense`` by a weight stored in column panels ``(N / B, K, B)`` (:func:`tesched.nn.pack_dense_panels`),
    which the kernel reads in place; ``alter_op_layout`` packs constant weights and chooses it."""
    return Call(_DENSE_PANELS, [data, packed])


_MATMUL = register_op("nn.matmul", Pattern.OUT_ELEMWISE_FUSABLE, lambda args, attrs: nn.matmul(args[0], args[1]),
                      lambda args, attrs: (args[0].astype(np.float64) @ args[1].astype(np.float64))
                      .astype(args[0].dtype), 2)


def matmul(a: Expr, b: Expr) -> Call:
    """``a @ b`` for 2-D operands."""
    return Call(_MATMUL, [a, b])


# normalisation and pooling ------------------------------------------------------------------------

def _batch_norm_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, gamma, beta, mean, var = (a.astype(np.float64) for a in args)
    shape = bias_channel_shape(x.ndim, normalize_axis(attrs["axis"], x.ndim, "nn.batch_norm"))
    scale = gamma / np.sqrt(var + attrs["epsilon"])
    return ((x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)).astype(args[0].dtype)


_BATCH_NORM = register_op("nn.batch_norm", Pattern.BROADCAST,
                          lambda args, attrs: nn.batch_norm(args[0], args[1], args[2], args[3], args[4],
                                                                epsilon=attrs["epsilon"], axis=attrs["axis"]),
                          _batch_norm_eval, 5)


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr, epsilon: float = 1e-5,
               axis: int = 1) -> Call:
    """Inference batch normalisation along ``axis`` with the given statistics; one output (not Relay's
    three-field tuple, since only inference is supported)."""
    return Call(_BATCH_NORM, [data, gamma, beta, moving_mean, moving_var],
                {"epsilon": float(epsilon), "axis": int(axis)})


def _batch_norm_train_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, gamma, beta = (a.astype(np.float64) for a in args)
    axis = normalize_axis(attrs["axis"], x.ndim, "nn.batch_norm_train")
    shape, others = bias_channel_shape(x.ndim, axis), tuple(a for a in range(x.ndim) if a != axis)
    centred = x - x.mean(axis=others, keepdims=True)
    scale = gamma.reshape(shape) / np.sqrt((centred * centred).mean(axis=others, keepdims=True) + attrs["epsilon"])
    return (centred * scale + beta.reshape(shape)).astype(args[0].dtype)


_BATCH_NORM_TRAIN = register_op(
    "nn.batch_norm_train", Pattern.OPAQUE,
    lambda args, attrs: nn.batch_norm_train(args[0], args[1], args[2], attrs["epsilon"], attrs["axis"]),
    _batch_norm_train_eval, 3)


def batch_norm_train(data: Expr, gamma: Expr, beta: Expr, epsilon: float = 1e-5, axis: int = 1) -> Call:
    """Batch normalisation in training mode: each channel of ``axis`` normalised by the batch's mean and
    biased variance over the other axes, then scaled and shifted (PyTorch's ``BatchNorm`` while training).
    ``G.gradient`` differentiates through the statistics."""
    return Call(_BATCH_NORM_TRAIN, [data, gamma, beta], {"epsilon": float(epsilon), "axis": int(axis)})


def _layer_norm_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, gamma, beta = (a.astype(np.float64) for a in args)
    axis = normalize_axis(attrs["axis"], x.ndim, "nn.layer_norm")
    shape = bias_channel_shape(x.ndim, axis)
    centred = x - x.mean(axis=axis, keepdims=True)
    scale = gamma.reshape(shape) / np.sqrt((centred * centred).mean(axis=axis, keepdims=True) + attrs["epsilon"])
    return (centred * scale + beta.reshape(shape)).astype(args[0].dtype)


_LAYER_NORM = register_op("nn.layer_norm", Pattern.OPAQUE,
                          lambda args, attrs: nn.layer_norm(args[0], args[1], args[2], attrs["axis"], attrs["epsilon"]),
                          _layer_norm_eval, 3)


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axis: int = -1, epsilon: float = 1e-5) -> Call:
    """Each slice along ``axis`` normalised by its mean and variance, scaled by ``gamma`` and shifted by
    ``beta`` (1-D along ``axis``): PyTorch's ``LayerNorm`` over the last axis."""
    return Call(_LAYER_NORM, [data, gamma, beta], {"axis": int(axis), "epsilon": float(epsilon)})


def _pool_attrs(op: str, pool_size: IntOrPair, strides: IntOrPair | None, padding: IntOrPair) -> dict:
    size = pair(pool_size, f"{op} pool_size")
    return {"pool_size": size, "strides": pair(strides if strides is not None else size, f"{op} strides"),
            "padding": padding4(padding, f"{op} padding")}


def _max_pool_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    win = _windows(args[0], attrs["pool_size"], attrs["strides"], (1, 1), attrs["padding"], -np.inf)
    return win.max(axis=(4, 5))


def _avg_pool_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = args[0]
    size, strides, pads = attrs["pool_size"], attrs["strides"], attrs["padding"]
    total = _windows(x.astype(np.float64), size, strides, (1, 1), pads, 0.0).sum(axis=(4, 5))
    if attrs["count_include_pad"]:
        count = float(size[0] * size[1])
    else:
        count = _windows(np.ones((1, 1) + x.shape[2:]), size, strides, (1, 1), pads, 0.0).sum(axis=(4, 5))
    return (total / count).astype(x.dtype)


_MAX_POOL2D = register_op("nn.max_pool2d", Pattern.OUT_ELEMWISE_FUSABLE,
                          lambda args, attrs: nn.max_pool2d(args[0], attrs["pool_size"], attrs["strides"],
                                                            attrs["padding"]),
                          _max_pool_eval, 1)
_AVG_POOL2D = register_op("nn.avg_pool2d", Pattern.OUT_ELEMWISE_FUSABLE,
                          lambda args, attrs: nn.avg_pool2d(args[0], attrs["pool_size"], attrs["strides"],
                                                            attrs["padding"], attrs["count_include_pad"]),
                          _avg_pool_eval, 1)
_GLOBAL_AVG_POOL2D = register_op("nn.global_avg_pool2d", Pattern.OUT_ELEMWISE_FUSABLE,
                                 lambda args, attrs: nn.global_avg_pool2d(args[0]),
                                 lambda args, attrs: args[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64)
                                 .astype(args[0].dtype), 1)


def max_pool2d(data: Expr, pool_size: IntOrPair, strides: IntOrPair | None = None, padding: IntOrPair = 0) -> Call:
    """Maximum over each window of NCHW ``data`` (``strides`` default to ``pool_size``)."""
    return Call(_MAX_POOL2D, [data], _pool_attrs("nn.max_pool2d", pool_size, strides, padding))


def avg_pool2d(data: Expr, pool_size: IntOrPair, strides: IntOrPair | None = None, padding: IntOrPair = 0,
               count_include_pad: bool = False) -> Call:
    """Mean over each window of NCHW ``data``."""
    attrs = _pool_attrs("nn.avg_pool2d", pool_size, strides, padding)
    attrs["count_include_pad"] = bool(count_include_pad)
    return Call(_AVG_POOL2D, [data], attrs)


def global_avg_pool2d(data: Expr) -> Call:
    """Mean over each channel's plane: ``(N, C, 1, 1)``."""
    return Call(_GLOBAL_AVG_POOL2D, [data])


def _softmax_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(args[0].dtype)


_SOFTMAX = register_op("nn.softmax", Pattern.OPAQUE, lambda args, attrs: nn.softmax(args[0], attrs["axis"]),
                       _softmax_eval, 1)


def softmax(data: Expr, axis: int = -1) -> Call:
    """Softmax along ``axis``."""
    return Call(_SOFTMAX, [data], {"axis": int(axis)})
