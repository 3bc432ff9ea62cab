"""``cumsum``: the running sum along one axis (NumPy's ``cumsum``, PyTorch's ``torch.cumsum``), in the
output's dtype.

Each output element is a ``comm_reduce`` sum over the positions up to its own along the axis (a reduction
whose ``where`` keeps ``r <= i``), so it schedules like any reduction and fuses like one; the work is
quadratic in the axis's length, which suits the short axes models take running sums over (positions
from a mask, a few hundred steps). A recurrence with the time loop inside one kernel is ``ts.scan``.
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import normalize_axis
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor


def cumsum(x: Tensor, axis: int, dtype: str | None = None) -> Tensor:
    """``out[..., i, ...] = sum(x[..., r, ...] for r <= i)`` along ``axis``, computed in ``dtype`` (default:
    ``x``'s; a ``bool`` input needs an integer or floating ``dtype``)."""
    axis = normalize_axis(axis, x.ndim, "cumsum")
    dtype = dtype or x.dtype
    if dtype == "bool":
        raise TypeError("cumsum: sums of booleans need an integer or floating dtype (dtype='int64')")
    r = ts.reduce_axis((0, x.shape[axis]), "r")

    def fcompute(*i: Expr) -> Expr:
        read: Expr = x[i[:axis] + (r,) + i[axis + 1:]]
        value = read if x.dtype == dtype else ts.cast(dtype, read)
        return ts.sum(value, axis=r, where=r <= i[axis])

    return compute(x.shape, fcompute, name="cumsum", pattern=Pattern.COMM_REDUCE, op="cumsum")
