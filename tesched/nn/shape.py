"""Shape arithmetic shared by the operator library and the graph's type inference.

NumPy broadcasting, normalisation of ``int``-or-tuple arguments (strides, padding, pool sizes), output
sizes of sliding windows, ``reshape`` targets with ``-1``, and axis normalisation. Integer arithmetic on
shapes, no tensors; a symbolic size (``ts.var``) only passes through broadcasts and reshapes unchanged.
Errors are ``ValueError`` naming the op.
"""
from __future__ import annotations

from typing import Any, Sequence

from tesched.te.expr import Expr


def pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    """``(v, v)`` for an int, or the two entries of a 2-sequence; every entry a positive int."""
    items = (value, value) if isinstance(value, int) else tuple(value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items):
        raise ValueError(f"{what} must be a positive int or a pair of them, got {value!r}")
    return items[0], items[1]


def padding4(value: int | Sequence[int], what: str = "padding") -> tuple[int, int, int, int]:
    """Relay's padding forms as ``(top, left, bottom, right)``: ``p``, ``(ph, pw)`` or the four values."""
    items = (value,) if isinstance(value, int) else tuple(value)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in items):
        raise ValueError(f"{what} must be non-negative ints, got {value!r}")
    if len(items) == 1:
        return (items[0], items[0], items[0], items[0])
    if len(items) == 2:
        return (items[0], items[1], items[0], items[1])
    if len(items) == 4:
        return (items[0], items[1], items[2], items[3])
    raise ValueError(f"{what} must have 1, 2 or 4 entries, got {value!r}")


def window_output(size: int, window: int, stride: int, pad_lo: int, pad_hi: int, dilation: int,
                  what: str) -> int:
    """Number of positions of a (dilated) window sliding over a padded axis of ``size``."""
    span = (window - 1) * dilation + 1
    padded = size + pad_lo + pad_hi
    if padded < span:
        raise ValueError(f"{what}: window of {span} does not fit in the padded size {padded}")
    return (padded - span) // stride + 1


def broadcast_shapes(a: Sequence[int], b: Sequence[int], what: str) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes, or a ``ValueError`` naming ``what`` and both shapes."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if isinstance(x, Expr) or isinstance(y, Expr):     # a symbolic size broadcasts with itself or 1
            if x is not y and not (isinstance(x, int) and x == 1) and not (isinstance(y, int) and y == 1):
                raise ValueError(f"{what}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast together")
            out.append(y if isinstance(x, int) else x)
            continue
        if x != y and 1 not in (x, y):
            raise ValueError(f"{what}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast together")
        out.append(max(x, y))
    return tuple(out)


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    """``axis`` in ``[0, ndim)``, accepting negative values as NumPy does."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def reshape_target(shape: Sequence[Any], newshape: Sequence[Any], what: str) -> tuple[Any, ...]:
    """``newshape`` with at most one ``-1`` resolved so the element count matches ``shape``. A symbolic
    size (``ts.var``) must appear in both, unchanged (a reshape keeps a dynamic dimension whole); the
    other entries are reshaped as usual."""
    symbolic = [d for d in shape if isinstance(d, Expr)]
    kept = [d for d in newshape if isinstance(d, Expr)]
    if symbolic or kept:
        if sorted(map(id, symbolic)) != sorted(map(id, kept)):
            raise ValueError(f"{what}: the dynamic dimensions of {tuple(shape)} must appear unchanged in the "
                             f"target {tuple(newshape)}")
        static = reshape_target([d for d in shape if not isinstance(d, Expr)] or [1],
                                [d for d in newshape if not isinstance(d, Expr)] or [1], what)
        rest = iter(static if any(not isinstance(d, Expr) for d in newshape) else ())
        return tuple(d if isinstance(d, Expr) else next(rest) for d in newshape)
    total = 1
    for d in shape:
        total *= d
    newshape = tuple(int(d) for d in newshape)
    if newshape.count(-1) > 1 or any(d == 0 or d < -1 for d in newshape):
        raise ValueError(f"{what}: invalid target shape {newshape}")
    known = 1
    for d in newshape:
        known *= d if d != -1 else 1
    if -1 in newshape:
        if total % known:
            raise ValueError(f"{what}: cannot reshape {tuple(shape)} into {newshape}")
        newshape = tuple(total // known if d == -1 else d for d in newshape)
    elif known != total:
        raise ValueError(f"{what}: cannot reshape {tuple(shape)} ({total} elements) into {newshape}")
    return newshape
