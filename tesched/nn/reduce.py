"""Reductions over axes: ``sum``, ``mean``, ``max`` (NumPy's ``axis``/``keepdims``), tagged ``comm_reduce``.

``mean`` is a ``sum`` stage followed by a division stage. Their default schedule is
:func:`tesched.nn.schedule.schedule_reduction`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import normalize_axis
from tesched.te.tensor import Tensor

Axes = int | Sequence[int] | None


def reduced_axes(ndim: int, axis: Axes, what: str) -> list[int]:
    """The sorted, non-negative axes an ``axis`` argument names (all of them for ``None``)."""
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = sorted({normalize_axis(a, ndim, what) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"{what}: axis {axis} names an axis twice")
    return out


def _reduce(x: Tensor, axis: Axes, keepdims: bool, reducer: Callable, op: str) -> Tensor:
    axes = reduced_axes(x.ndim, axis, op)
    raxes = {a: ts.reduce_axis((0, x.shape[a]), f"r{a}") for a in axes}
    kept = [a for a in range(x.ndim) if a not in raxes]
    shape = tuple(1 if a in raxes else x.shape[a] for a in range(x.ndim)) if keepdims else \
        tuple(x.shape[a] for a in kept)

    def fcompute(*i):
        out_index = dict(zip(range(x.ndim), i)) if keepdims else dict(zip(kept, i))
        index = tuple(raxes[a] if a in raxes else out_index[a] for a in range(x.ndim))
        return reducer(x[index], axis=list(raxes.values()))

    return compute(shape, fcompute, name=op, pattern=Pattern.COMM_REDUCE, op=op)


def sum(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Sum over ``axis`` (all axes by default)."""
    return _reduce(x, axis, keepdims, ts.sum, "sum")


def max(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Maximum over ``axis`` (all axes by default)."""
    return _reduce(x, axis, keepdims, ts.max, "max")


def mean(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes by default)."""
    total = _reduce(x, axis, keepdims, ts.sum, "mean")
    count = 1
    for a in reduced_axes(x.ndim, axis, "mean"):
        count *= x.shape[a]
    return compute(total.shape, lambda *i: total[i] / float(count), name="mean_divide",
                   pattern=Pattern.COMM_REDUCE, op="mean")
