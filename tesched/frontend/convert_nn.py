"""Converters of the neural-network ATen ops: ``convolution`` (2-D, and 1-D as 2-D with a height of one;
any stride, padding, dilation and groups; transposed ones by :mod:`.convert_vision`), inference batch norm,
layer norm, ``addmm``/``mm`` (a product with a transposed weight becomes ``nn.dense``), max and average
pooling (``ceil_mode`` as extra padding at the bottom and right), adaptive average pooling to a size that
divides the input, ``embedding``, ``softmax`` and ``log_softmax``.

Each converter takes an :class:`~.call.AtenCall` and returns a graph expression, or a tuple whose extra
outputs (pool indices, saved statistics) are :class:`~.call.Unavailable`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall, Unavailable
from tesched.frontend.convert_vision import convolution_transpose
from tesched.graph.ir import Call, Constant, Expr


def _pair(values: Sequence[int] | int, default: Sequence[int] | None = None) -> tuple[int, int]:
    """An ATen ``int[2]`` argument (one value means both) as a pair; empty means ``default``."""
    items = [int(v) for v in values] if isinstance(values, Sequence) else [int(values)]
    if not items and default is not None:
        items = list(default)
    return (int(items[0]), int(items[-1]))


def optional_vector(value: object, size: int, fill: float, dtype: str) -> Expr:
    """``value`` if it is a tensor, else a constant vector of ``size`` elements ``fill`` (an absent affine
    weight or bias)."""
    return value if isinstance(value, Expr) else Constant(np.full(size, fill, dtype=dtype))


# convolution --------------------------------------------------------------------------------------

def convolution(call: AtenCall) -> Expr:
    """``aten.convolution``: NCHW (or NCL) data, OIHW (OIL) weight, optional bias."""
    if call["transposed"]:
        return convolution_transpose(call)
    x, weight = call.tensor("input"), call.tensor("weight")
    rank = x.tensor_type.ndim
    if rank not in (3, 4):
        raise call.unsupported(f"a {rank - 2}-D convolution", "nn.Conv2d or nn.Conv1d")
    stride, padding, dilation = (list(call[k]) for k in ("stride", "padding", "dilation"))
    if rank == 3:  # conv1d: a 2-D convolution over a height of one
        x = G.reshape(x, x.tensor_type.shape[:2] + (1,) + x.tensor_type.shape[2:])
        weight = G.reshape(weight, weight.tensor_type.shape[:2] + (1,) + weight.tensor_type.shape[2:])
        stride, padding, dilation = [1] + stride, [0] + padding, [1] + dilation
    out = G.nn.conv2d(x, weight, strides=_pair(stride), padding=_pair(padding), dilation=_pair(dilation),
                      groups=int(call["groups"]))
    if isinstance(call["bias"], Expr):
        out = G.nn.bias_add(out, call["bias"], axis=1)
    return out if rank == 4 else G.reshape(out, call.out.extents)


# normalisation ------------------------------------------------------------------------------------

def batch_norm_inference(call: AtenCall) -> tuple[Expr, Unavailable, Unavailable]:
    """``_native_batch_norm_legit_no_training``: normalise with the running statistics."""
    x = call.tensor("input")
    channels, dtype = x.tensor_type.size(1), x.tensor_type.dtype
    gamma = optional_vector(call["weight"], channels, 1.0, dtype)
    beta = optional_vector(call["bias"], channels, 0.0, dtype)
    out = G.nn.batch_norm(x, gamma, beta, call.tensor("running_mean"), call.tensor("running_var"),
                          epsilon=float(call["eps"]), axis=1)
    saved = call.unavailable("saved statistics", "the normalised output (output 0)")
    return out, saved, saved


def layer_norm(call: AtenCall) -> tuple[Expr, Unavailable, Unavailable]:
    """``native_layer_norm`` over the trailing ``normalized_shape`` axes (flattened into one when several)."""
    x = call.tensor("input")
    shape, dtype = x.tensor_type.extents, x.tensor_type.dtype
    trailing = len(call["normalized_shape"])
    size = int(np.prod([x.tensor_type.size(a) for a in range(len(shape) - trailing, len(shape))]))
    gamma = optional_vector(call["weight"], size, 1.0, dtype)
    beta = optional_vector(call["bias"], size, 0.0, dtype)
    if trailing > 1:
        x = G.reshape(x, shape[:len(shape) - trailing] + (size,))
        gamma, beta = G.reshape(gamma, (size,)), G.reshape(beta, (size,))
    out = G.nn.layer_norm(x, gamma, beta, axis=-1, epsilon=float(call["eps"]))
    saved = call.unavailable("mean and rstd", "the normalised output (output 0)")
    return (G.reshape(out, shape) if trailing > 1 else out), saved, saved


# matrix products ----------------------------------------------------------------------------------

def _transposed(expr: Expr) -> Expr | None:
    """``W`` when ``expr`` is ``W`` transposed (2-D), else ``None``."""
    if isinstance(expr, Call) and not isinstance(expr.op, G.Function) and expr.op_name == "transpose" and \
            expr.tensor_type.ndim == 2 and expr.attrs["axes"] in (None, (1, 0)):
        return expr.args[0]
    return None


def product(a: Expr, b: Expr) -> Expr:
    """``a @ b``: ``nn.dense(a, W)`` when ``b`` is ``W`` transposed (a linear layer's weight), else
    ``nn.matmul``."""
    weight = _transposed(b)
    return G.nn.dense(a, weight) if weight is not None else G.nn.matmul(a, b)


def mm(call: AtenCall) -> Expr:
    """``self @ mat2`` (see :func:`product`)."""
    return product(call.tensor("self"), call.tensor("mat2"))


def addmm(call: AtenCall) -> Expr:
    """``beta * self + alpha * (mat1 @ mat2)``; a 1-D ``self`` is a bias along the last axis."""
    out = product(call.tensor("mat1"), call.tensor("mat2"))
    if call["alpha"] != 1:
        out = G.multiply(out, float(call["alpha"]))
    if call["beta"] == 0:
        return out
    bias = call.tensor("self")
    if call["beta"] != 1:
        bias = G.multiply(bias, float(call["beta"]))
    if bias.tensor_type.ndim == 1 and bias.tensor_type.extents[0] == out.tensor_type.extents[-1]:
        return G.nn.bias_add(out, bias, axis=-1)
    return G.add(out, bias)


def t(call: AtenCall) -> Expr:
    """A 2-D tensor transposed (lower ranks unchanged, as in PyTorch)."""
    x = call.tensor("self")
    return G.transpose(x) if x.tensor_type.ndim == 2 else x


# pooling ------------------------------------------------------------------------------------------

def _pool_window(call: AtenCall) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    """Window, strides and ``(top, left, bottom, right)`` padding; ``ceil_mode``'s last partial window
    becomes extra padding at the bottom and right, sized from the output shape PyTorch inferred."""
    x = call.tensor("self")
    if x.tensor_type.ndim != 4:
        raise call.unsupported(f"{x.tensor_type.ndim}-D input", "NCHW input (nn.MaxPool2d / nn.AvgPool2d on 4-D data)")
    size = _pair(call["kernel_size"])
    strides = _pair(call["stride"], default=size)
    pad = _pair(call["padding"])
    (_, _, height, width), (_, _, out_h, out_w) = x.tensor_type.shape, call.out.shape
    extra = [max(0, (o - 1) * s + k - (n + 2 * p))
             for o, s, k, n, p in ((out_h, strides[0], size[0], height, pad[0]), (out_w, strides[1], size[1], width, pad[1]))]
    return size, strides, (pad[0], pad[1], pad[0] + extra[0], pad[1] + extra[1])


def max_pool2d(call: AtenCall) -> tuple[Expr, Unavailable]:
    """``max_pool2d_with_indices``: the maximum (its indices are not computed)."""
    if _pair(call["dilation"]) != (1, 1):
        raise call.unsupported(f"dilation {list(call['dilation'])}", "nn.MaxPool2d with dilation=1")
    size, strides, padding = _pool_window(call)
    out = G.nn.max_pool2d(call.tensor("self"), size, strides, padding)
    return out, call.unavailable("indices", "the pooled values (output 0); return_indices=False")


def avg_pool2d(call: AtenCall) -> Expr:
    """``avg_pool2d``; with ``ceil_mode``, the overhanging last window counts only positions inside the
    padded input, as PyTorch does."""
    if call["divisor_override"] is not None:
        raise call.unsupported("divisor_override", "nn.AvgPool2d without divisor_override")
    size, strides, padding = _pool_window(call)
    symmetric = padding[2:] == padding[:2]
    include_pad = bool(call["count_include_pad"]) and any(padding[:2])
    if include_pad and not symmetric:
        raise call.unsupported("ceil_mode with count_include_pad=True and padding",
                               "count_include_pad=False, or ceil_mode=False")
    return G.nn.avg_pool2d(call.tensor("self"), size, strides, padding, count_include_pad=include_pad)


def adaptive_avg_pool2d(call: AtenCall) -> Expr:
    """To ``(1, 1)``: ``nn.global_avg_pool2d``; to a size that divides the input: ``nn.avg_pool2d``."""
    x = call.tensor("self")
    (_, _, height, width), (out_h, out_w) = x.tensor_type.shape, _pair(call["output_size"])
    if (out_h, out_w) == (1, 1):
        return G.nn.global_avg_pool2d(x)
    if height % out_h or width % out_w:
        raise call.unsupported(f"output size {(out_h, out_w)} does not divide the input's {(height, width)}",
                               "an output size that divides the input size (an nn.AvgPool2d)")
    window = (height // out_h, width // out_w)
    return G.nn.avg_pool2d(x, window, window)


# lookups and normalised exponentials --------------------------------------------------------------

def embedding(call: AtenCall) -> Expr:
    """``weight[indices]`` (``take`` along axis 0; indices outside the table are clipped)."""
    return G.take(call.tensor("weight"), call.tensor("indices"), axis=0)


def softmax(call: AtenCall) -> Expr:
    """``nn.softmax`` along ``dim``."""
    return G.nn.softmax(call.tensor("self"), axis=int(call["dim"]))


def log_softmax(call: AtenCall) -> Expr:
    """``x - max - log(sum(exp(x - max)))`` along ``dim``."""
    x, axis = call.tensor("self"), int(call["dim"])
    shifted = G.subtract(x, G.max(x, axis, keepdims=True))
    return G.subtract(shifted, G.log(G.sum(G.exp(shifted), axis, keepdims=True)))
