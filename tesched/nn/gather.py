"""``gather(data, indices, axis)``: PyTorch's ``torch.gather`` (NumPy's ``take_along_axis``). The output has
the indices' shape; element ``i`` is ``data`` at ``i`` with its ``axis`` entry replaced by ``indices[i]``.
Indices outside ``[0, size)`` are clipped to the nearest end, as ``take`` clips, so no read leaves ``data``.
Tagged ``injective``. The indices may be smaller than ``data`` along the other axes, not larger.
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import normalize_axis
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor


def gather(data: Tensor, indices: Tensor, axis: int) -> Tensor:
    """``data`` read along ``axis`` at ``indices`` (same rank as ``data``)."""
    axis = normalize_axis(axis, data.ndim, "gather")
    if indices.dtype not in ("int32", "int64"):
        raise TypeError(f"gather: indices must be int32 or int64, got {indices.dtype}")
    if indices.ndim != data.ndim or any(n > d for a, (n, d) in enumerate(zip(indices.shape, data.shape)) if a != axis):
        raise ValueError(f"gather: indices of shape {indices.shape} do not fit data of shape {data.shape} "
                         f"outside axis {axis}")
    size = data.shape[axis]

    def fcompute(*i: Expr) -> Expr:
        clipped = ts.minimum(ts.maximum(indices[i], ts.const(0, indices.dtype)), ts.const(size - 1, indices.dtype))
        return data[i[:axis] + (clipped,) + i[axis + 1:]]

    return compute(indices.shape, fcompute, name="gather", pattern=Pattern.INJECTIVE, op="gather")
