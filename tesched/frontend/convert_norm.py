"""Converters of the normalisations over statistics computed from the data: ``native_group_norm``
(``nn.GroupNorm``) and ``_native_batch_norm_legit.no_stats`` (what ``nn.InstanceNorm*`` and a batch norm
without running statistics decompose to: each channel normalised by its mean and variance over every other
axis, the statistics PyTorch also uses in eval mode). ``layer_norm`` is in :mod:`.convert_nn`; RMS norm
decomposes to ``pow``/``mean``/``rsqrt``, which :mod:`.convert_arith` converts.

:data:`TRAIN_CONVERTERS` holds what only a training import (``from_torch(..., train=True)``) converts:
``_native_batch_norm_legit_functional``, a ``BatchNorm`` in training mode, becomes ``nn.batch_norm_train``
(differentiable through its batch statistics) and the running statistics' updates PyTorch makes as a side
effect, computed as values (the importer returns them as outputs).

The normalisation is written with graph ops: the mean, the mean of squared deviations from it (no
cancellation), and ``(x - mean) * rsqrt(var + eps)``, then the per-channel scale and shift. The saved
statistics outputs are not computed (reading them raises).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall, Unavailable
from tesched.frontend.convert_nn import optional_vector
from tesched.graph.ir import Constant, Expr


def normalised(x: Expr, axis: int, epsilon: float) -> Expr:
    """``x`` centred on its mean along ``axis`` and divided by its standard deviation (biased)."""
    centred = G.subtract(x, G.mean(x, axis, keepdims=True))
    variance = G.mean(G.multiply(centred, centred), axis, keepdims=True)
    return G.multiply(centred, G.rsqrt(G.add(variance, float(epsilon))))


def _affine(call: AtenCall, out: Expr) -> Expr:
    """``out * weight + bias`` with the optional 1-D ``weight`` and ``bias`` along axis 1."""
    rank = out.tensor_type.ndim
    for name, combine in (("weight", G.multiply), ("bias", G.add)):
        value = call[name]
        if isinstance(value, Expr):
            out = combine(out, G.reshape(value, (-1,) + (1,) * (rank - 2)))
    return out


def _statistics(call: AtenCall, count: int) -> tuple[Unavailable, ...]:
    saved = call.unavailable("mean and rstd", "the normalised output (output 0)")
    return (saved,) * count


def group_norm(call: AtenCall) -> tuple[Expr | Unavailable, ...]:
    """``native_group_norm``: the channels of each sample in ``group`` groups, each normalised as a whole."""
    x = call.tensor("input")
    shape = x.tensor_type.shape
    groups = int(call["group"])
    grouped = G.reshape(x, (shape[0], groups, int(np.prod(shape[1:])) // groups))
    out = G.reshape(normalised(grouped, -1, float(call["eps"])), shape)
    return (_affine(call, out),) + _statistics(call, 2)


def batch_norm_batch_statistics(call: AtenCall) -> tuple[Expr | Unavailable, ...]:
    """``_native_batch_norm_legit.no_stats``: each channel (axis 1) normalised by its own statistics over
    the batch and spatial axes."""
    x = call.tensor("input")
    shape = x.tensor_type.shape
    channels_first = x if shape[0] == 1 else G.transpose(x, (1, 0) + tuple(range(2, len(shape))))
    rows = G.reshape(channels_first, (shape[1], int(np.prod(shape)) // shape[1]))
    out = normalised(rows, -1, float(call["eps"]))
    if shape[0] == 1:
        out = G.reshape(out, shape)
    else:
        moved = (shape[1], shape[0]) + shape[2:]
        out = G.transpose(G.reshape(out, moved), (1, 0) + tuple(range(2, len(shape))))
    return (_affine(call, out),) + _statistics(call, 2)


def _running(call: AtenCall, name: str, batch: Expr, momentum: float) -> Expr:
    """PyTorch's update of running statistic ``name``: ``(1 - momentum) * running + momentum * batch``."""
    running = call.tensor(name)
    dtype = running.tensor_type.dtype
    keep, take = (Constant(np.array(v, dtype=dtype)) for v in (1.0 - momentum, momentum))
    return G.add(G.multiply(running, keep), G.multiply(batch, take))


def batch_norm_training(call: AtenCall) -> tuple[Expr | Unavailable, ...]:
    """``_native_batch_norm_legit_functional``: in training mode, the output normalised by the batch's
    statistics (``nn.batch_norm_train``), and the new running mean and variance (the variance unbiased, as
    PyTorch keeps it). (A batch norm in eval mode exports as ``_native_batch_norm_legit_no_training``.)"""
    if not call["training"]:
        raise call.unsupported("training=False", "model.eval(), which exports the inference batch norm")
    momentum = float(call["momentum"])    # momentum=None (a cumulative average) does not export
    x = call.tensor("input")
    ty, dtype = x.tensor_type, x.tensor_type.dtype
    shape = tuple(ty.size(a) for a in range(ty.ndim))    # static: the batch statistics' count is a constant
    gamma = optional_vector(call["weight"], shape[1], 1.0, dtype)
    beta = optional_vector(call["bias"], shape[1], 0.0, dtype)
    out = G.nn.batch_norm_train(x, gamma, beta, epsilon=float(call["eps"]), axis=1)
    others = (0,) + tuple(range(2, len(shape)))
    count = int(np.prod([shape[a] for a in others]))    # > 1: PyTorch refuses to train on one value
    mean = G.mean(x, others, keepdims=True)
    centred = G.subtract(x, mean)
    unbiased = G.multiply(G.mean(G.multiply(centred, centred), others),
                          Constant(np.array(count / (count - 1), dtype=dtype)))
    saved = call.unavailable("saved statistics", "the normalised output (output 0)")
    return (out, saved, saved, _running(call, "running_mean", G.reshape(mean, (shape[1],)), momentum),
            _running(call, "running_var", unbiased, momentum))


TRAIN_CONVERTERS: dict[str, Callable[[AtenCall], object]] = {
    "aten._native_batch_norm_legit_functional.default": batch_norm_training,
}
"""The op table's rows converted only when importing for training (``train=True``); otherwise these ops
are refused with the reason :data:`.op_table.REJECTED` gives."""

CONVERTERS: dict[str, Callable[[AtenCall], object]] = {
    "aten.native_group_norm.default": group_norm,
    "aten._native_batch_norm_legit.no_stats": batch_norm_batch_statistics,
}
"""The op table's rows for this module's converters (merged into :data:`.op_table.CONVERTERS`)."""
