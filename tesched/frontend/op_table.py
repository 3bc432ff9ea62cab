"""The op table: which ATen op becomes which :mod:`tesched.graph` ops, by name.

``CONVERTERS`` maps each supported op (``"aten.convolution.default"``, as ``str(OpOverload)`` spells it) to
its converter (an :class:`~.call.AtenCall` in, a graph expression or a tuple of them out). ``REJECTED``
explains the ops that are known and refused on purpose (training-mode batch norm and dropout, control
flow...), with what to do instead; :func:`nearest_alternative` answers for any other op. The table holds core ATen (what ``run_decompositions()`` leaves) plus the recurrent ops
that an undecomposed program keeps. This module converts nothing itself and needs no torch.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from tesched import graph as G
from tesched.frontend import convert_arith as arith
from tesched.frontend import convert_attention as attention
from tesched.frontend import convert_logic as logic
from tesched.frontend import convert_lookup as lookup
from tesched.frontend import convert_nn as nn
from tesched.frontend import convert_norm as norm
from tesched.frontend import convert_rearrange as rearrange
from tesched.frontend import convert_rnn as rnn
from tesched.frontend import convert_shape as shape
from tesched.frontend import convert_vision as vision
from tesched.frontend.call import AtenCall

Converter = Callable[[AtenCall], Any]

_UNARY = {
    "relu": G.nn.relu, "sigmoid": G.sigmoid, "tanh": G.tanh, "exp": G.exp, "log": G.log, "sqrt": G.sqrt,
    "rsqrt": G.rsqrt, "erf": G.erf, "abs": G.abs, "neg": G.negative, "reciprocal": arith.reciprocal,
    "silu": arith.silu, "hardswish": arith.hardswish, "hardsigmoid": arith.hardsigmoid,
}

_IDENTITIES = ("clone.default", "alias.default", "contiguous.default", "detach.default", "detach_.default",
               "lift_fresh_copy.default")
_VIEWS = ("view.default", "_unsafe_view.default", "reshape.default", "squeeze.default", "squeeze.dim",
          "squeeze.dims", "unsqueeze.default", "flatten.using_ints")

CONVERTERS: dict[str, Converter] = {
    **{f"aten.{name}.default": arith.unary(build) for name, build in _UNARY.items()},
    **{f"aten.{name}": shape.identity for name in _IDENTITIES},
    **{f"aten.{name}": shape.reshape_to_output for name in _VIEWS},
    "aten.add.Tensor": arith.add, "aten.add.Scalar": arith.add,
    "aten.sub.Tensor": arith.sub, "aten.sub.Scalar": arith.sub,
    "aten.rsub.Tensor": arith.rsub, "aten.rsub.Scalar": arith.rsub,
    "aten.mul.Tensor": arith.mul, "aten.mul.Scalar": arith.mul,
    "aten.div.Tensor": arith.div, "aten.div.Scalar": arith.div, "aten.div.Tensor_mode": arith.div,
    "aten.pow.Tensor_Scalar": arith.pow_scalar,
    "aten.clamp.default": arith.clamp, "aten.clamp_min.default": arith.clamp_min,
    "aten.clamp_max.default": arith.clamp_max, "aten.hardtanh.default": arith.hardtanh,
    "aten.gelu.default": arith.gelu, "aten.leaky_relu.default": arith.leaky_relu,
    "aten.mean.dim": arith.reduce_mean, "aten.mean.default": arith.reduce_mean,
    "aten.sum.dim_IntList": arith.reduce_sum, "aten.sum.default": arith.reduce_sum,
    "aten.amax.default": arith.reduce_max, "aten.max.default": arith.reduce_max,
    "aten._assert_tensor_metadata.default": shape.no_value,
    "aten.convolution.default": nn.convolution,
    "aten._native_batch_norm_legit_no_training.default": nn.batch_norm_inference,
    "aten.native_layer_norm.default": nn.layer_norm,
    "aten.addmm.default": nn.addmm, "aten.mm.default": nn.mm, "aten.t.default": nn.t,
    "aten.max_pool2d_with_indices.default": nn.max_pool2d, "aten.avg_pool2d.default": nn.avg_pool2d,
    "aten._adaptive_avg_pool2d.default": nn.adaptive_avg_pool2d,
    "aten.embedding.default": nn.embedding,
    "aten._softmax.default": nn.softmax, "aten._log_softmax.default": nn.log_softmax,
    "aten.dropout.default": shape.dropout,
    "aten.permute.default": shape.permute, "aten.transpose.int": shape.transpose,
    "aten.expand.default": shape.expand, "aten.cat.default": shape.cat,
    "aten.split_with_sizes.default": shape.split_with_sizes, "aten.split.Tensor": shape.split,
    "aten.unbind.int": shape.unbind, "aten.slice.Tensor": shape.slice_, "aten.select.int": shape.select,
    "aten.constant_pad_nd.default": shape.constant_pad_nd,
    "aten.full.default": shape.constant_like_output(), "aten.full_like.default": shape.constant_like_output(),
    "aten.zeros.default": shape.constant_like_output(0.0), "aten.zeros_like.default": shape.constant_like_output(0.0),
    "aten.ones.default": shape.constant_like_output(1.0), "aten.ones_like.default": shape.constant_like_output(1.0),
    "aten.scalar_tensor.default": shape.scalar_tensor,
    "aten.arange.default": shape.arange, "aten.arange.start": shape.arange, "aten.arange.start_step": shape.arange,
    "aten.lstm_cell.default": rnn.lstm_cell, "aten.gru_cell.default": rnn.gru_cell,
    "aten.rnn_tanh_cell.default": rnn.rnn_tanh_cell, "aten.rnn_relu_cell.default": rnn.rnn_relu_cell,
    "aten.lstm.input": rnn.lstm, "aten.gru.input": rnn.gru,
    "aten.rnn_tanh.input": rnn.rnn_tanh, "aten.rnn_relu.input": rnn.rnn_relu,
    "aten.bmm.default": attention.bmm,
    **logic.CONVERTERS, **norm.CONVERTERS, **lookup.CONVERTERS,
    **{f"aten.upsample_nearest{n}d.vec": vision.upsample_nearest for n in (1, 2, 3)},
    **{f"aten._upsample_nearest_exact{n}d.vec": vision.upsample_nearest_exact for n in (1, 2, 3)},
    **{f"aten.upsample_{name}.vec": vision.upsample_linear for name in ("linear1d", "bilinear2d", "trilinear3d")},
    "aten.adaptive_max_pool2d.default": vision.adaptive_max_pool2d,
    "aten.repeat.default": rearrange.repeat, "aten.flip.default": rearrange.flip, "aten.roll.default": rearrange.roll,
    "aten.index_select.default": rearrange.index_select, "aten.fmod.Scalar": rearrange.fmod,
    "aten.cumsum.default": rearrange.cumsum, "aten.pad.default": rearrange.pad,
}

_EVAL = ("model.eval() before importing, which uses the running statistics (or from_torch(..., train=True) "
         "to import a training step)")
_CONTROL_FLOW = ("data-dependent control flow: tesched imports straight-line graphs; compute both branches and "
                 "combine them arithmetically (mask * a + (1 - mask) * b), or branch in Python outside the model")

REJECTED: dict[str, tuple[str, str]] = {
    "aten._native_batch_norm_legit_functional.default": (("batch norm in training mode (batch statistics, running "
                                                         "statistics updated)"), _EVAL),
    "aten._native_batch_norm_legit.default": ("batch norm in training mode (batch statistics)", _EVAL),
    "aten.native_dropout.default": ("dropout in training mode (random)", "model.eval() before importing"),
    **{f"aten.{name}.default": ("random numbers", "random tensors made outside the model and passed as inputs")
       for name in ("rand", "randn", "rand_like", "randn_like", "randint", "normal", "uniform", "bernoulli")},
    "aten.bernoulli.p": ("random sampling (training-mode dropout)", "model.eval() before importing"),
    "higher_order.cond": ("torch.cond", _CONTROL_FLOW),
    "higher_order.while_loop": ("torch.while_loop", _CONTROL_FLOW),
    "higher_order.map_impl": ("torch.map", "a Python loop over a fixed number of steps, unrolled by torch.export"),
    "aten._local_scalar_dense.default": ("a tensor's value read as a Python number (.item())", _CONTROL_FLOW),
}


def _stem(op: str) -> str:
    """``"avg_pool2d"`` for ``"aten.avg_pool2d.default"``: the name without namespace and overload."""
    parts = op.split(".")
    return parts[1] if len(parts) == 3 else op


def supported_ops() -> list[str]:
    """The ATen ops the frontend converts, sorted (``"aten.addmm.default"``, ...)."""
    return sorted(CONVERTERS)


def converter_for(op: str, train: bool = False) -> Converter | None:
    """The converter of ATen op ``op``, if it is supported (``train``: in an import for training, which also
    converts the rows of :data:`.convert_norm.TRAIN_CONVERTERS`)."""
    if train and op in norm.TRAIN_CONVERTERS:
        return norm.TRAIN_CONVERTERS[op]
    return CONVERTERS.get(op)


def rejection(op: str) -> tuple[str, str]:
    """``(detail, alternative)`` for an op without a converter: why it is refused (empty when it is simply
    not in the table) and the nearest supported alternative."""
    if op in REJECTED:
        return REJECTED[op]
    overloads = sorted(name for name in CONVERTERS if name.rsplit(".", 1)[0] == op.rsplit(".", 1)[0])
    if overloads:
        return "", " or ".join(overloads)
    stems = {_stem(name): name for name in sorted(CONVERTERS, reverse=True)}
    close = difflib.get_close_matches(_stem(op), stems, n=1, cutoff=0.7)
    if close:
        return "", stems[close[0]]
    return "", "none close by name; tesched.frontend.supported_ops() lists the supported ops"
