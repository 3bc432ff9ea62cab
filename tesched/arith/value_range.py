"""Numeric ranges of expressions of any dtype: the bounds of a data-dependent index, as Halide infers them.

:func:`value_range` gives an inclusive ``(low, high)`` for an expression, given the ranges of some
variables (by identity): a constant is itself, a read of a tensor spans its dtype when it is an integer
narrower than 32 bits (``uint8``: 0 to 255) and is unbounded otherwise, and ``min``/``max`` (so
``clamp``), ``select``, sums, products, divisions and casts propagate ranges (a float cast to an integer
truncates; arithmetic on integers narrower than 32 bits wraps, so a range beyond the dtype's is the dtype's).
Unknown sides are ``-inf``/``+inf``. A lookup table read at ``int32(clamp(v, 0, 1) * 255)`` is
thus known to read 0 to 255. :mod:`.interval` bounds integer index arithmetic exactly; this module is
coarser and covers floats and reads. It rewrites nothing.
"""
from __future__ import annotations

import math
from typing import Mapping

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Select, Unary, Var
from tesched.te.tensor import TensorRead

INF = math.inf
Range = tuple[float, float]
UNBOUNDED: Range = (-INF, INF)


def value_range(e: Expr, ranges: Mapping[int, Range]) -> Range:
    """The inclusive range of the values of ``e`` (see the module docstring)."""
    if isinstance(e, Const):
        value = float(e.value)
        return value, value
    if isinstance(e, Var):
        return ranges.get(id(e), UNBOUNDED)
    if isinstance(e, TensorRead):
        return _dtype_range(e.dtype)
    if isinstance(e, Cast):
        low, high = value_range(e.value, ranges)
        if dt.is_int(e.dtype) and not dt.is_int(e.value.dtype):     # truncation toward zero
            low, high = _trunc(low), _trunc(high)
        bounds = _dtype_range(e.dtype) if dt.is_int(e.dtype) else UNBOUNDED
        return (low, high) if bounds[0] <= low and high <= bounds[1] else bounds
    if isinstance(e, Select):
        (a, b), (c, d) = value_range(e.true_value, ranges), value_range(e.false_value, ranges)
        return min(a, c), max(b, d)
    if isinstance(e, Unary) and e.op == "neg":
        low, high = value_range(e.a, ranges)
        return -high, -low
    if isinstance(e, Binary):
        low, high = _binary(e, ranges)
        bounds = _dtype_range(e.dtype) if dt.is_int(e.dtype) else UNBOUNDED
        return (low, high) if bounds[0] <= low and high <= bounds[1] else bounds   # narrow integers wrap
    return UNBOUNDED


def _binary(e: Binary, ranges: Mapping[int, Range]) -> Range:
    a, b = value_range(e.a, ranges), value_range(e.b, ranges)
    if e.op == BinOp.ADD:
        return a[0] + b[0], a[1] + b[1]
    if e.op == BinOp.SUB:
        return a[0] - b[1], a[1] - b[0]
    if e.op == BinOp.MIN:
        return min(a[0], b[0]), min(a[1], b[1])
    if e.op == BinOp.MAX:
        return max(a[0], b[0]), max(a[1], b[1])
    if e.op == BinOp.MUL:
        return _corners(a, b, lambda x, y: x * y)
    if e.op in (BinOp.DIV, BinOp.FLOORDIV) and (b[0] > 0 or b[1] < 0):
        low, high = _corners(a, b, lambda x, y: x / y)
        return (math.floor(low), math.floor(high)) if e.op == BinOp.FLOORDIV else (low, high)
    if e.op == BinOp.FLOORMOD and b[0] > 0:
        return 0.0, b[1] - 1
    return UNBOUNDED


def _corners(a: Range, b: Range, op) -> Range:
    """The range of ``op`` over the corners of two ranges (0 times infinity counted as 0)."""
    values = [0.0 if math.isnan(v) else v for v in (op(x, y) for x in a for y in b)]
    return min(values), max(values)


def _trunc(v: float) -> float:
    return v if math.isinf(v) else float(math.trunc(v))


def _dtype_range(dtype: str) -> Range:
    """Every value of an integer dtype narrower than 32 bits (or a bool); unbounded for any other."""
    if dtype == "bool":
        return 0.0, 1.0
    if dt.is_int(dtype) and dt.DTYPES[dtype].bits < 32:
        low, high = dt.value_range(dtype)
        return float(low), float(high)
    return UNBOUNDED
