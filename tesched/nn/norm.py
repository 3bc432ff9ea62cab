"""Normalisation: inference ``batch_norm(x, gamma, beta, mean, var, epsilon, axis)`` and
``layer_norm(x, gamma, beta, axis, epsilon)``.

``batch_norm`` is ``(x - mean) / sqrt(var + epsilon) * gamma + beta`` with the four 1-D statistics running
along ``axis``; one stage tagged ``broadcast``. Training-mode statistics are not computed.

``layer_norm`` normalises each slice along ``axis`` by its own mean and (biased) variance, then scales by
``gamma`` and shifts by ``beta`` (1-D, along ``axis``), as PyTorch's ``LayerNorm`` over the last axis: two
reductions (the sum, then the sum of squared deviations from the mean, so no cancellation) tagged
``comm_reduce`` and the normalisation tagged ``opaque``, scheduled like ``softmax`` (one slice at a time).
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import register_schedule
from tesched.nn.shape import normalize_axis
from tesched.nn.softmax import schedule_softmax
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor


def batch_norm(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor, epsilon: float = 1e-5,
               axis: int = 1) -> Tensor:
    """Normalise ``x`` per channel of ``axis`` with given statistics, then scale and shift."""
    axis = normalize_axis(axis, x.ndim, "batch_norm")
    channels = x.shape[axis]
    for name, t in (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var)):
        if t.shape != (channels,):
            raise ValueError(f"batch_norm: {name} has shape {t.shape}, expected ({channels},) for axis {axis} "
                             f"of {x.shape}")
        if t.dtype != x.dtype:
            raise TypeError(f"batch_norm: {name} is {t.dtype} but x is {x.dtype}")

    def fcompute(*i):
        c = i[axis]
        return (x[i] - mean[c]) / ts.sqrt(var[c] + epsilon) * gamma[c] + beta[c]

    return compute(x.shape, fcompute, name="batch_norm", pattern=Pattern.BROADCAST, op="batch_norm")


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, axis: int = -1, epsilon: float = 1e-5) -> Tensor:
    """Normalise ``x`` over ``axis`` by each slice's mean and variance, then scale and shift."""
    axis = normalize_axis(axis, x.ndim, "layer_norm")
    size = x.shape[axis]
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t.shape != (size,):
            raise ValueError(f"layer_norm: {name} has shape {t.shape}, expected ({size},) for axis {axis} "
                             f"of {x.shape}")
        if t.dtype != x.dtype:
            raise TypeError(f"layer_norm: {name} is {t.dtype} but x is {x.dtype}")
    reduced = tuple(1 if a == axis else d for a, d in enumerate(x.shape))

    def along(i: tuple, k) -> tuple:
        return tuple(k if a == axis else v for a, v in enumerate(i))

    k1 = ts.reduce_axis((0, size), "k")
    total = compute(reduced, lambda *i: ts.sum(x[along(i, k1)], axis=k1), name="layer_norm_sum",
                    pattern=Pattern.COMM_REDUCE, op="layer_norm")
    k2 = ts.reduce_axis((0, size), "k")

    def deviation(i: tuple, k) -> Expr:
        return x[along(i, k)] - total[along(i, 0)] / float(size)

    squares = compute(reduced, lambda *i: ts.sum(deviation(i, k2) * deviation(i, k2), axis=k2),
                      name="layer_norm_squares", pattern=Pattern.COMM_REDUCE, op="layer_norm")

    def fcompute(*i):
        scale = gamma[i[axis]] / ts.sqrt(squares[along(i, 0)] / float(size) + epsilon)
        return deviation(i, i[axis]) * scale + beta[i[axis]]

    return compute(x.shape, fcompute, name="layer_norm", pattern=Pattern.OPAQUE, op="layer_norm")


register_schedule("layer_norm")(schedule_softmax)
