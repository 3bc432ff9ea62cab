"""Inference batch normalisation: ``batch_norm(x, gamma, beta, mean, var, epsilon, axis)``.

``(x - mean) / sqrt(var + epsilon) * gamma + beta`` with the four 1-D statistics running along ``axis``;
one stage tagged ``broadcast``. Training-mode statistics are not computed.
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import normalize_axis
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
