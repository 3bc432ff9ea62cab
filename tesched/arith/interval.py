"""Interval bounds of integer expressions, given the range of each variable.

:class:`VarRanges` maps loop variables (by identity) to the inclusive range of values they take (the
loop bounds isl generated, so exact for rectangular nests and a sound superset otherwise). :func:`bound`
gives ``(low, high)`` for an expression: linear parts are bounded term by term after collecting equal
atoms (so ``x - x`` is exactly 0), everything else by interval arithmetic. Unknown sides are
``-inf``/``+inf``. Floating-point expressions are never bounded. This module does not rewrite anything
(see :mod:`.simplify`).
"""
from __future__ import annotations

import math
from typing import Iterator

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Select, Unary, Var
from tesched.te.visit import structural_key

INF = math.inf
Bound = tuple[float, float]          # inclusive (low, high); integers, or -inf / +inf
INDEX_TYPES = ("int32", "int64")     # the integer types whose arithmetic is rewritten (no wrap-around)
UNBOUNDED: Bound = (-INF, INF)


class VarRanges:
    """Inclusive ranges of variables, keyed by identity; :meth:`where` returns an extended copy."""

    def __init__(self, ranges: dict[int, tuple[Var, Bound]] | None = None):
        self._ranges: dict[int, tuple[Var, Bound]] = dict(ranges or {})

    def where(self, var: Var, low: float, high: float) -> "VarRanges":
        """A copy in which ``var`` lies in ``[low, high]`` (intersected with what was known)."""
        old_low, old_high = self.get(var)
        out = VarRanges(self._ranges)
        out._ranges[id(var)] = (var, (max(low, old_low), min(high, old_high)))
        return out

    def get(self, var: Var) -> Bound:
        entry = self._ranges.get(id(var))
        return entry[1] if entry is not None else UNBOUNDED

    def __contains__(self, var: Var) -> bool:
        return id(var) in self._ranges

    def __iter__(self) -> Iterator[tuple[Var, Bound]]:
        return iter(self._ranges.values())


def floor_div(x: float, c: int) -> float:
    """``floor(x / c)`` for an integer or infinite ``x`` and a positive ``c``."""
    return x if math.isinf(x) else x // c


def _mul(a: Bound, b: Bound) -> Bound:
    def times(x: float, y: float) -> float:
        return 0 if x == 0 or y == 0 else x * y
    corners = [times(x, y) for x in a for y in b]
    return min(corners), max(corners)


def _dtype_bound(dtype: str) -> Bound:
    if dtype in dt.DTYPES and dt.is_int(dtype):
        low, high = dt.value_range(dtype)
        return (low, high) if dtype != "int64" else UNBOUNDED
    return UNBOUNDED


def _widens(inner: str, outer: str) -> bool:
    """Whether arithmetic of ``inner`` may be read as arithmetic of ``outer`` (same, or int32 in int64)."""
    return inner == outer or (inner, outer) == ("int32", "int64")


def linear_terms(e: Expr, dtype: str, atoms: dict) -> tuple[dict, int]:
    """``e`` as ``sum(coeff * atom) + const`` over arithmetic of ``dtype`` (``+ - *`` by constants,
    negation; int32 arithmetic and int32-to-int64 casts inside int64 too); anything else is an atom,
    keyed structurally in ``atoms``."""
    if isinstance(e, Const) and e.dtype in INDEX_TYPES:
        return {}, int(e.value)
    if isinstance(e, Cast) and e.dtype == dtype and e.value.dtype != dtype and _widens(e.value.dtype, dtype):
        return linear_terms(e.value, dtype, atoms)
    if not _widens(e.dtype, dtype):
        key = structural_key(e)
        atoms[key] = e
        return {key: 1}, 0
    if isinstance(e, Unary) and e.op == "neg":
        t, c = linear_terms(e.a, dtype, atoms)
        return {k: -v for k, v in t.items()}, -c
    if isinstance(e, Binary) and e.op in (BinOp.ADD, BinOp.SUB):
        (ta, ca), (tb, cb) = linear_terms(e.a, dtype, atoms), linear_terms(e.b, dtype, atoms)
        sign = 1 if e.op == BinOp.ADD else -1
        out = dict(ta)
        for k, v in tb.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v}, ca + sign * cb
    if isinstance(e, Binary) and e.op == BinOp.MUL:
        (ta, ca), (tb, cb) = linear_terms(e.a, dtype, atoms), linear_terms(e.b, dtype, atoms)
        if not ta:
            return {k: v * ca for k, v in tb.items() if v * ca}, ca * cb
        if not tb:
            return {k: v * cb for k, v in ta.items() if v * cb}, ca * cb
    key = structural_key(e)
    atoms[key] = e
    return {key: 1}, 0


_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}


def refine(cond: Expr, ranges: VarRanges, holds: bool = True) -> VarRanges:
    """``ranges`` narrowed by a condition known to hold (or, without ``holds``, known to fail):
    conjunctions of ``v < e``, ``v <= e``, ``v > e``, ``v >= e`` (either side) with ``v`` a variable of
    ``ranges`` and ``e`` bounded; a failed conjunction narrows nothing."""
    if isinstance(cond, Binary) and cond.op == BinOp.AND:
        return refine(cond.b, refine(cond.a, ranges)) if holds else ranges
    if not (isinstance(cond, Binary) and cond.op in _FLIPPED and cond.a.dtype in INDEX_TYPES):
        return ranges
    op = cond.op if holds else _NEGATED[cond.op]
    for var, other, side in ((cond.a, cond.b, op), (cond.b, cond.a, _FLIPPED[op])):
        if isinstance(var, Var) and var in ranges:
            low, high = bound(other, ranges)
            if side in ("lt", "le"):
                return ranges.where(var, -INF, high - (side == "lt"))
            return ranges.where(var, low + (side == "gt"), INF)
    return ranges


def bound_linear(terms: dict, const: int, atoms: dict, ranges: VarRanges) -> Bound:
    """Bounds of ``sum(coeff * atoms[key]) + const``."""
    low: float = const
    high: float = const
    for key, coeff in terms.items():
        a_low, a_high = bound(atoms[key], ranges)
        t_low, t_high = _mul((a_low, a_high), (coeff, coeff))
        low, high = low + t_low, high + t_high
        if low == -INF and high == INF:
            break
    return low, high


def bound(e: Expr, ranges: VarRanges) -> Bound:
    """Inclusive bounds of the integer expression ``e``; ``(-inf, inf)`` where nothing is known."""
    if e.dtype not in dt.DTYPES or dt.is_float(e.dtype):
        return UNBOUNDED
    if isinstance(e, Const):
        return (int(e.value), int(e.value))
    if isinstance(e, Var):
        low, high = ranges.get(e)
        d_low, d_high = _dtype_bound(e.dtype)
        return max(low, d_low), min(high, d_high)
    if isinstance(e, (Binary, Unary)) and e.dtype in INDEX_TYPES and (
            getattr(e, "op", "") in ("add", "sub", "mul", "neg")):
        atoms: dict = {}
        terms, const = linear_terms(e, e.dtype, atoms)
        if not (len(terms) == 1 and atoms[next(iter(terms))] is e):
            return bound_linear(terms, const, atoms, ranges)
        if isinstance(e, Binary) and e.op == BinOp.MUL:
            return _mul(bound(e.a, ranges), bound(e.b, ranges))
    if isinstance(e, Binary):
        return _bound_binary(e, ranges)
    if isinstance(e, Select):
        (tl, th), (fl, fh) = bound(e.true_value, ranges), bound(e.false_value, ranges)
        return min(tl, fl), max(th, fh)
    if isinstance(e, Cast) and e.dtype in INDEX_TYPES and e.value.dtype in dt.DTYPES and dt.is_int(e.value.dtype):
        low, high = bound(e.value, ranges)
        d_low, d_high = _dtype_bound(e.dtype)
        return max(low, d_low), min(high, d_high)
    if isinstance(e, Unary) and e.op == "not":
        return (0, 1)
    return _dtype_bound(e.dtype)


def _bound_binary(e: Binary, ranges: VarRanges) -> Bound:
    if e.dtype == "bool":
        return (0, 1)
    if e.op in (BinOp.MIN, BinOp.MAX) and e.dtype in INDEX_TYPES:
        (al, ah), (bl, bh) = bound(e.a, ranges), bound(e.b, ranges)
        return (min(al, bl), min(ah, bh)) if e.op == BinOp.MIN else (max(al, bl), max(ah, bh))
    divisor = e.b.value if isinstance(e.b, Const) and e.b.dtype in INDEX_TYPES else None
    if e.dtype in INDEX_TYPES and isinstance(divisor, int) and divisor > 0:
        low, high = bound(e.a, ranges)
        if e.op == BinOp.FLOORDIV or (e.op == BinOp.CDIV and low >= 0):
            return floor_div(low, divisor), floor_div(high, divisor)
        if e.op == BinOp.FLOORMOD or (e.op == BinOp.CMOD and low >= 0):
            if floor_div(low, divisor) == floor_div(high, divisor) and not math.isinf(low):
                return low % divisor, high % divisor
            return 0, divisor - 1
    return _dtype_bound(e.dtype)
