"""Index comparisons of a vectorized loop in 32-bit lanes where their values fit.

Loop variables and index arithmetic are ``int64``, so a condition on the loop variable (``j >= 1``,
``j - i < w``: padding, bands) makes the vectorizer compute 64-bit lanes, and a 64-byte vector holds 8 of
them where it would hold 16 floats. When every subexpression of both sides of such a comparison stays
inside the ``int32`` range over the loops' ranges, the comparison is rebuilt in ``int32`` arithmetic (the
loop variable as ``int32(j)``, which the vectorizer turns into a 32-bit ramp), exactly: no value changes.
So is an index converted to a float (``float32(x % 8)``, a bilateral grid's interpolation weight).
Other comparisons, and anything not made of ``+ - *``, ``min``/``max``, ``//``/``%`` by a positive constant,
variables and constants, are left alone (:func:`as_int32` also narrows a gather's offsets, see
:mod:`.gathers`). This module rewrites expressions; :mod:`.vectorize` decides the vector width from them.
"""
from __future__ import annotations

from tesched.arith.interval import VarRanges, bound
from tesched.te import dtype as dt
from tesched.te.expr import Binary, Cast, Const, Expr, Var
from tesched.te.visit import rewrite

_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_ARITH = ("add", "sub", "mul", "min", "max")
_DIVIDE = ("floordiv", "floormod")     # by a positive constant: the same value in either width
_LOW, _HIGH = -(2 ** 31), 2 ** 31 - 1


def as_int32(e: Expr, ranges: VarRanges) -> Expr | None:
    """``e`` (an index expression) computed in ``int32`` throughout, or None if a value may not fit or an
    ``int64`` node has no ``int32`` form here. An ``int32`` node that cannot be rebuilt (a float converted,
    a read) is kept as written."""
    if e.dtype not in ("int32", "int64"):
        return None
    low, high = bound(e, ranges)
    if low < _LOW or high > _HIGH:
        return None
    narrow: Expr | None = None
    if isinstance(e, Const):
        narrow = Const(int(e.value), "int32")
    elif isinstance(e, Var):
        narrow = e if e.dtype == "int32" else Cast("int32", e)
    elif isinstance(e, Cast) and e.value.dtype in ("int32", "int64"):
        narrow = as_int32(e.value, ranges)
    elif isinstance(e, Binary) and (e.op in _ARITH or (e.op in _DIVIDE and isinstance(e.b, Const) and e.b.value > 0)):
        a, b = as_int32(e.a, ranges), as_int32(e.b, ranges)
        narrow = None if a is None or b is None else Binary(e.op, a, b, "int32")
    return e if narrow is None and e.dtype == "int32" else narrow


def narrow_comparisons(e: Expr, ranges: VarRanges) -> Expr:
    """``e`` with every comparison of ``int64`` index values that fit in ``int32`` made in ``int32``, and
    every such index value converted to a float converted from ``int32``."""
    def visit(n: Expr) -> Expr | None:
        if isinstance(n, Binary) and n.op in _COMPARE and "int64" in (n.a.dtype, n.b.dtype):
            a, b = as_int32(n.a, ranges), as_int32(n.b, ranges)
            if a is not None and b is not None:
                return Binary(n.op, a, b, n.dtype)
        if isinstance(n, Cast) and dt.is_float(n.dtype) and n.value.dtype in ("int32", "int64"):
            value = as_int32(n.value, ranges)       # a loop index as a value: ``float32(x % 8)``
            if value is not None and value is not n.value:
                return Cast(n.dtype, value)
        return None
    return rewrite(e, visit)
