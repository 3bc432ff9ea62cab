"""Index comparisons of a vectorized loop in 32-bit lanes where their values fit.

Loop variables and index arithmetic are ``int64``, so a condition on the loop variable (``j >= 1``,
``j - i < w``: padding, bands) makes the vectorizer compute 64-bit lanes, and a 64-byte vector holds 8 of
them where it would hold 16 floats. When every subexpression of both sides of such a comparison stays
inside the ``int32`` range over the loops' ranges, the comparison is rebuilt in ``int32`` arithmetic (the
loop variable as ``int32(j)``, which the vectorizer turns into a 32-bit ramp), exactly: no value changes.
Other comparisons, and anything not made of ``+ - *``, ``min``/``max``, variables and constants, are
left alone. This module rewrites expressions; :mod:`.vectorize` decides the vector width from them.
"""
from __future__ import annotations

from tesched.arith.interval import VarRanges, bound
from tesched.te.expr import Binary, Cast, Const, Expr, Var
from tesched.te.visit import rewrite

_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_ARITH = ("add", "sub", "mul", "min", "max")
_LOW, _HIGH = -(2 ** 31), 2 ** 31 - 1


def _as_int32(e: Expr, ranges: VarRanges) -> Expr | None:
    """``e`` (an index expression) computed in ``int32``, or None if a value may not fit or a node has
    no ``int32`` form here."""
    if e.dtype not in ("int32", "int64"):
        return None
    low, high = bound(e, ranges)
    if low < _LOW or high > _HIGH:
        return None
    if e.dtype == "int32":
        return e
    if isinstance(e, Const):
        return Const(int(e.value), "int32")
    if isinstance(e, Var):
        return Cast("int32", e)
    if isinstance(e, Cast) and e.value.dtype == "int32":
        return e.value
    if isinstance(e, Binary) and e.op in _ARITH:
        a, b = _as_int32(e.a, ranges), _as_int32(e.b, ranges)
        return None if a is None or b is None else Binary(e.op, a, b, "int32")
    return None


def narrow_comparisons(e: Expr, ranges: VarRanges) -> Expr:
    """``e`` with every comparison of ``int64`` index values that fit in ``int32`` made in ``int32``."""
    def visit(n: Expr) -> Expr | None:
        if isinstance(n, Binary) and n.op in _COMPARE and "int64" in (n.a.dtype, n.b.dtype):
            a, b = _as_int32(n.a, ranges), _as_int32(n.b, ranges)
            if a is not None and b is not None:
                return Binary(n.op, a, b, n.dtype)
        return None
    return rewrite(e, visit)
