"""Injective ops: ``pad``, ``reshape``, ``transpose``, ``concatenate``, ``strided_slice``, ``split``,
``broadcast_to`` and ``take`` (a gather by integer indices, as embedding lookups use).

Each output element reads at most one input element through an index map; every stage is tagged
``injective``. Padding is a ``ts.if_then_else`` on the index, so a consumer computed at a tile (see
``compute_at``) gets a footprint clipped at the borders. Shapes are static ints.
"""
from __future__ import annotations

from typing import Any, Sequence

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import broadcast_shapes, normalize_axis, reshape_target
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor


def pad(x: Tensor, pad_width: Sequence[tuple[int, int]], pad_value: float = 0.0, name: str = "pad") -> Tensor:
    """``x`` with ``pad_width[k] = (before, after)`` elements of ``pad_value`` around axis ``k``."""
    widths = [tuple(int(v) for v in w) for w in pad_width]
    if len(widths) != x.ndim or any(len(w) != 2 or min(w) < 0 for w in widths):
        raise ValueError(f"pad: pad_width must give (before, after) >= 0 for each of the {x.ndim} axes of "
                         f"{x.shape}, got {list(pad_width)}")
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths))

    def fcompute(*i: Expr) -> Expr:
        inside = [cond for k, (lo, hi) in enumerate(widths) if lo or hi
                  for cond in (i[k] >= lo, i[k] < lo + x.shape[k])]
        value = x[tuple(i[k] - lo if lo else i[k] for k, (lo, _) in enumerate(widths))]
        return ts.if_then_else(ts.all(*inside), value, ts.const(pad_value, x.dtype)) if inside else value

    return compute(shape, fcompute, name=name, pattern=Pattern.INJECTIVE, op="pad")


def reshape(x: Tensor, newshape: Sequence[int]) -> Tensor:
    """``x`` with the same elements in row-major order and shape ``newshape`` (one entry may be -1)."""
    shape = reshape_target(x.shape, newshape, "reshape")

    def fcompute(*i: Expr) -> Expr:
        flat: Expr | int = 0
        for k, d in enumerate(shape):
            flat = i[k] if k == 0 else flat * d + i[k]
        index = []
        stride = 1
        for d in reversed(x.shape):
            index.append((flat // stride) % d if d != 1 else 0)
            stride *= d
        return x[tuple(reversed(index))]

    return compute(shape, fcompute, name="reshape", pattern=Pattern.INJECTIVE, op="reshape")


def transpose(x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """``x`` with its axes permuted: output axis ``k`` is input axis ``axes[k]`` (default: reversed)."""
    perm = list(range(x.ndim))[::-1] if axes is None else [normalize_axis(a, x.ndim, "transpose") for a in axes]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of the {x.ndim} axes of {x.shape}")
    shape = tuple(x.shape[a] for a in perm)

    source = [perm.index(a) for a in range(x.ndim)]  # input axis ``a`` is output axis ``source[a]``

    def fcompute(*i: Expr) -> Expr:
        return x[tuple(i[k] for k in source)]

    return compute(shape, fcompute, name="transpose", pattern=Pattern.INJECTIVE, op="transpose")


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors joined along ``axis``; the other axes must agree."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate: no tensors given")
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, "concatenate")
    for t in tensors[1:]:
        same_rest = t.ndim == first.ndim and all(a == b for k, (a, b) in enumerate(zip(t.shape, first.shape))
                                                 if k != axis)
        if not same_rest:
            raise ValueError(f"concatenate: shapes {[u.shape for u in tensors]} differ outside axis {axis}")
        if t.dtype != first.dtype:
            raise TypeError(f"concatenate: dtypes {[u.dtype for u in tensors]} differ")
    if any(isinstance(t.shape[axis], Expr) for t in tensors):
        sizes = ", ".join(str(t.shape[axis]) for t in tensors)
        raise ValueError(f"concatenate: axis {axis} has a dynamic size ({sizes}); tensors join along a static axis only")
    starts = [0]
    for t in tensors:
        starts.append(starts[-1] + t.shape[axis])
    shape = tuple(starts[-1] if k == axis else d for k, d in enumerate(first.shape))

    def fcompute(*i: Expr) -> Expr:
        def read(k: int) -> Expr:
            return tensors[k][tuple(i[a] - starts[k] if a == axis and starts[k] else i[a]
                                    for a in range(first.ndim))]
        value = read(len(tensors) - 1)
        for k in reversed(range(len(tensors) - 1)):
            value = ts.if_then_else(i[axis] < starts[k + 1], read(k), value)
        return value

    return compute(shape, fcompute, name="concatenate", pattern=Pattern.INJECTIVE, op="concatenate")


def strided_slice(x: Tensor, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None) -> Tensor:
    """``x[begin[0]:end[0]:strides[0], ...]`` with Python slice semantics; missing axes are taken whole."""
    n = len(begin)
    strides = [1] * n if strides is None else list(strides)
    if len(end) != n or len(strides) != n or n > x.ndim:
        raise ValueError(f"strided_slice: begin {list(begin)}, end {list(end)} and strides {strides} must have "
                         f"the same length, at most {x.ndim}")
    if any(s == 0 for s in strides):
        raise ValueError("strided_slice: a stride is 0")
    ranges = [_axis_slice(b, e, s, d, k) for k, (b, e, s, d) in enumerate(zip(begin, end, strides, x.shape))]
    ranges += [(0, 1, d) for d in x.shape[n:]]
    if any(isinstance(size, int) and size == 0 for _, _, size in ranges):
        raise ValueError(f"strided_slice: slice {list(begin)}:{list(end)}:{strides} of {x.shape} is empty")
    shape = tuple(size for _, _, size in ranges)

    def fcompute(*i: Expr) -> Expr:
        return x[tuple(start + step * i[k] if (start, step) != (0, 1) else i[k]
                       for k, (start, step, _) in enumerate(ranges))]

    return compute(shape, fcompute, name="strided_slice", pattern=Pattern.INJECTIVE, op="strided_slice")


def _axis_slice(begin: int, end: Any, stride: int, size: Any, axis: int) -> tuple[int, int, Any]:
    """``(start, step, length)`` of ``begin:end:stride`` along an axis of ``size``; an axis of symbolic size
    (``ts.var``) can only be taken whole (begin 0, stride 1, its size or more as the end)."""
    if isinstance(size, Expr):
        if begin != 0 or stride != 1 or not (end is size or (isinstance(end, int) and end >= 1 << 31)):
            raise ValueError(f"strided_slice: axis {axis} has the dynamic size {size}; it can only be taken "
                             f"whole, not as {begin}:{end}:{stride}")
        return 0, 1, size
    r = range(*slice(begin, end, stride).indices(size))
    return r.start, r.step, len(r)


def split(x: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """NumPy's ``split``: ``n`` equal sections, or pieces cut before each given index."""
    axis = normalize_axis(axis, x.ndim, "split")
    bounds = split_bounds(x.shape[axis], indices_or_sections)
    return [strided_slice(x, [0] * axis + [lo], list(x.shape[:axis]) + [hi]) for lo, hi in bounds]


def split_bounds(size: int, indices_or_sections: int | Sequence[int]) -> list[tuple[int, int]]:
    """The ``(start, stop)`` of each piece of ``split`` along an axis of ``size``."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0 or size % n:
            raise ValueError(f"split: an axis of {size} cannot be split into {n} equal sections")
        cuts = [size // n * k for k in range(1, n)]
    else:
        cuts = list(indices_or_sections)
        if cuts != sorted(cuts) or any(not 0 < c < size for c in cuts):
            raise ValueError(f"split: indices {cuts} must be increasing and inside (0, {size})")
    edges = [0] + cuts + [size]
    return list(zip(edges[:-1], edges[1:]))


def broadcast_to(x: Tensor, shape: Sequence[Any]) -> Tensor:
    """``x`` repeated along its size-1 (and missing leading) axes to ``shape``, as NumPy broadcasts (an
    entry of ``shape`` may be a symbolic size)."""
    shape = tuple(d if isinstance(d, Expr) else int(d) for d in shape)
    if broadcast_shapes(x.shape, shape, "broadcast_to") != shape:
        raise ValueError(f"broadcast_to: {x.shape} cannot be broadcast to {shape}")
    lead = len(shape) - x.ndim
    return compute(shape, lambda *i: x[tuple(0 if d == 1 else i[lead + k] for k, d in enumerate(x.shape))],
                   name="broadcast_to", pattern=Pattern.INJECTIVE, op="broadcast_to")


def take(data: Tensor, indices: Tensor, axis: int = 0) -> Tensor:
    """``data`` gathered along ``axis`` at integer ``indices``: the output's shape is ``data.shape`` with
    ``axis`` replaced by ``indices.shape`` (NumPy's ``take``). Indices outside ``[0, size)`` are clipped to
    the nearest end (Relay's ``mode="clip"``), so no index reads outside ``data``."""
    axis = normalize_axis(axis, data.ndim, "take")
    if indices.dtype not in ("int32", "int64"):
        raise TypeError(f"take: indices must be int32 or int64, got {indices.dtype}")
    size = data.shape[axis]
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]

    def fcompute(*i: Expr) -> Expr:
        where = indices[i[axis:axis + indices.ndim]] if indices.ndim else indices[()]
        clipped = ts.minimum(ts.maximum(where, ts.const(0, indices.dtype)), ts.const(size - 1, indices.dtype))
        return data[i[:axis] + (clipped,) + i[axis + indices.ndim:]]

    return compute(shape, fcompute, name="take", pattern=Pattern.INJECTIVE, op="take")
