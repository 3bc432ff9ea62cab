"""Interval arithmetic on ``te`` expressions, evaluated for many tiles at once.

:func:`span` gives the lowest and highest value an expression takes when each variable ranges over an
interval. An interval is a pair of float64 NumPy arrays ``(lo, hi)`` that broadcast over a *tile grid*
(one array dimension per tiled loop, of length its number of tiles; a value that does not depend on a
loop has length 1 there), so one evaluation bounds an index for every tile of a host. Integer and
floating arithmetic, ``min``/``max``, ``//`` and ``%`` by constants, selects, monotone calls
(``floor``, ``exp``...) and casts (a float cast to an integer truncates) are followed; a tensor read is
only known by its type's range (a float read: unbounded), so a data-dependent index is bounded by what
clamps it. Floating results are widened by their rounding (:data:`ROUNDING`), so a bound proved here
holds for the values C computes. The bounds are exact for an integer index in which every variable appears once through monotone
operations (``2*x - 1``, ``x // 2``, ``min(x + 1, n - 1)``), and a superset otherwise. A grid that would
grow past :data:`MAX_GRID` tiles is relaxed to its hull over all tiles (a superset: a box hull instead of
exact per-tile boxes).

This module knows nothing of schedules or isl; :func:`tesched.poly.analysis.tile_regions` builds its
boxes with it.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Call, Cast, Const, Expr, Select, Unary, Var

Span = tuple[np.ndarray, np.ndarray]

MAX_GRID = 1 << 16
"""Largest number of tiles one interval is kept per tile for; beyond, its hull over all tiles is kept."""

MONOTONE_CALLS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"floor": np.floor, "ceil": np.ceil, "rint": np.rint, "round": np.round, "trunc": np.trunc,
                  "exp": np.exp, "tanh": np.tanh, "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
                  "sqrt": lambda v: np.sqrt(np.maximum(v, 0.0))}
"""Calls whose result grows with their one argument: bounded by their values at the argument's bounds."""


def constant(value: float) -> Span:
    """The interval holding only ``value``."""
    v = np.array(float(value))
    return v, v


def type_range(dtype: str) -> Span:
    """Every value of ``dtype`` (floating types: unbounded, NaN and infinities included)."""
    if dt.is_float(dtype):
        return np.array(-np.inf), np.array(np.inf)
    low, high = dt.value_range(dtype)
    return np.array(float(low)), np.array(float(high))


def tiles(axis: int, ndim: int, low: int, extent: int, size: int) -> Span:
    """The interval of a loop over ``[low, low + extent)`` in tiles of ``size``, one per tile along grid
    dimension ``axis`` of ``ndim``."""
    start = low + np.arange(0, extent, size, dtype=np.float64)
    stop = np.minimum(start + size, low + extent) - 1
    shape = [1] * ndim
    shape[axis] = len(start)
    return start.reshape(shape), stop.reshape(shape)


def hull(a: Span, b: Span) -> Span:
    """The smallest interval holding both."""
    return _fit(np.minimum(a[0], b[0]), np.maximum(a[1], b[1]))


def span(e: Expr, leaves: Mapping[int, Span], memo: dict[int, tuple[Expr, Span]] | None = None) -> Span:
    """The bounds of ``e`` where each variable ``v`` lies in ``leaves[id(v)]`` (other variables: any value
    of their type). ``memo`` (by expression, for one ``leaves``) lets the spans of many expressions share
    their common parts (an index read many times in a body)."""
    return _span(e, leaves, {} if memo is None else memo)


def _span(e: Expr, leaves: Mapping[int, Span], memo: dict[int, tuple[Expr, Span]]) -> Span:
    found = memo.get(id(e))
    if found is None:
        found = memo[id(e)] = (e, _evaluate(e, leaves, memo))      # e kept: its id stays its own
    return found[1]


def _evaluate(e: Expr, leaves: Mapping[int, Span], memo: dict[int, tuple[Expr, Span]]) -> Span:
    if isinstance(e, Const):
        return constant(float(e.value))
    if isinstance(e, Var):
        found = leaves.get(id(e))
        return found if found is not None else type_range(e.dtype)
    if isinstance(e, Cast):
        return _cast(e, _span(e.value, leaves, memo))
    if isinstance(e, Select):
        return hull(_span(e.true_value, leaves, memo), _span(e.false_value, leaves, memo))
    if isinstance(e, Binary) and e.dtype != "bool":
        value = _in_type(_binary(e, leaves, memo), e.dtype)
        return value if e.op in (BinOp.MIN, BinOp.MAX) else _rounded(value, e.dtype)
    if isinstance(e, Unary) and e.op == "neg":
        lo, hi = _span(e.a, leaves, memo)
        return _in_type((-hi, -lo), e.dtype)
    if isinstance(e, Call) and e.name in MONOTONE_CALLS and len(e.args) == 1:
        lo, hi = _span(e.args[0], leaves, memo)
        fn = MONOTONE_CALLS[e.name]
        with np.errstate(all="ignore"):
            return _rounded(_fit(fn(lo), fn(hi)), e.dtype)
    if isinstance(e, Call) and e.name == "abs" and len(e.args) == 1:
        lo, hi = _span(e.args[0], leaves, memo)
        low = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        return _fit(low, np.maximum(np.abs(lo), np.abs(hi)))
    if e.dtype == "bool":
        return np.array(0.0), np.array(1.0)
    return type_range(e.dtype)          # a tensor read, a comparison-free call...: its type's values


def _cast(e: Cast, inner: Span) -> Span:
    if e.dtype == "bool":
        return np.array(0.0), np.array(1.0)
    if dt.is_float(e.dtype):
        return _rounded(inner, e.dtype)
    lo, hi = inner
    if dt.is_float(e.value.dtype):
        lo, hi = np.trunc(lo), np.trunc(hi)      # C converts toward zero (outside the type: undefined)
    return _in_type((lo, hi), e.dtype)


ROUNDING = 2.0 ** -20
"""Relative widening of every floating result: each operation rounds (by at most half a unit in the last
place, 2**-24 in float32), so bounds computed exactly in float64 are widened to hold the rounded values."""


def _rounded(value: Span, dtype: str) -> Span:
    if not dt.is_float(dtype):
        return value
    lo, hi = value
    return lo - np.abs(lo) * ROUNDING, hi + np.abs(hi) * ROUNDING     # 0 is exact: it stays


def _in_type(value: Span, dtype: str) -> Span:
    """``value``, or the whole type where an integer result would wrap (C's modular arithmetic)."""
    if dt.is_float(dtype):
        return value
    low, high = type_range(dtype)
    lo, hi = value
    inside = (lo >= low) & (hi <= high)
    if bool(np.all(inside)):
        return value
    return _fit(np.where(inside, lo, low), np.where(inside, hi, high))


def _products(a: Span, b: Span) -> Span:
    for x, y in ((a, b), (b, a)):
        if y[0] is y[1] and y[0].ndim == 0 and np.isfinite(y[0]):     # a constant factor: a scaling
            c = float(y[0])
            if c == 0.0:
                return constant(0.0)
            with np.errstate(all="ignore"):
                return _fit(c * x[0], c * x[1]) if c > 0 else _fit(c * x[1], c * x[0])
    with np.errstate(all="ignore"):
        values = [np.nan_to_num(x * y, nan=0.0, posinf=np.inf, neginf=-np.inf) for x in a for y in b]
    return _fit(np.minimum(np.minimum(values[0], values[1]), np.minimum(values[2], values[3])),
                np.maximum(np.maximum(values[0], values[1]), np.maximum(values[2], values[3])))


def _divisor(e: Binary) -> float | None:
    """The value of ``e``'s right operand if it is a positive constant."""
    b = e.b
    while isinstance(b, Cast):
        b = b.value
    return float(b.value) if isinstance(b, Const) and float(b.value) > 0 else None


def _binary(e: Binary, leaves: Mapping[int, Span], memo: dict[int, tuple[Expr, Span]]) -> Span:
    a = _span(e.a, leaves, memo)
    if e.op in (BinOp.FLOORDIV, BinOp.FLOORMOD) or (e.op == BinOp.DIV and not dt.is_float(e.dtype)):
        c = _divisor(e)
        if c is None:
            return type_range(e.dtype)
        with np.errstate(all="ignore"):
            lo, hi = np.floor(a[0] / c), np.floor(a[1] / c)
            if e.op == BinOp.DIV:                      # truncating or flooring: either way within these
                return _fit(lo, np.where(a[1] < 0, np.trunc(a[1] / c), hi))
            if e.op == BinOp.FLOORDIV:
                return _fit(lo, hi)
            same = lo == hi                        # one period: the remainders keep their order
            return _fit(np.where(same, a[0] - lo * c, 0.0), np.where(same, a[1] - hi * c, c - 1))
    b = _span(e.b, leaves, memo)
    if e.op == BinOp.ADD:
        return _fit(a[0] + b[0], a[1] + b[1])
    if e.op == BinOp.SUB:
        return _fit(a[0] - b[1], a[1] - b[0])
    if e.op == BinOp.MUL:
        return _products(a, b)
    if e.op == BinOp.DIV:
        if bool(np.all(b[0] > 0)) or bool(np.all(b[1] < 0)):
            with np.errstate(all="ignore"):
                return _products(a, (1.0 / b[1], 1.0 / b[0]))
        return type_range(e.dtype)
    if e.op == BinOp.MIN:
        return _fit(np.minimum(a[0], b[0]), np.minimum(a[1], b[1]))
    if e.op == BinOp.MAX:
        return _fit(np.maximum(a[0], b[0]), np.maximum(a[1], b[1]))
    return type_range(e.dtype)


def _fit(lo: np.ndarray, hi: np.ndarray) -> Span:
    """``(lo, hi)`` with NaN bounds widened to infinities, relaxed to its hull when the grid is too big."""
    lo = np.fmax(lo, -np.inf)           # fmax/fmin return the other operand where one is NaN
    hi = np.fmin(hi, np.inf)
    if max(lo.size, hi.size) > MAX_GRID:
        return np.array(lo.min()), np.array(hi.max())
    return lo, hi
