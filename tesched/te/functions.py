"""Named scalar functions and reducers users call in ``compute`` bodies.

``exp log log2 log1p erf sqrt tanh sigmoid abs floor ceil rint round trunc power fmod``, the trigonometric
``sin cos tan asin acos atan atan2 sinh cosh`` (floating; ``rint``/``round``
round to nearest even, as NumPy), ``maximum minimum clamp`` (any type), the integer functions
``bitwise_and/or/xor/not``, ``shift_left/right`` and the bit counts ``popcount``,
``count_leading_zeros``, ``count_trailing_zeros``, ``if_then_else`` (alias ``select``), ``all``/``any`` of
conditions, and the reducers ``sum prod max min`` (TVM names, :mod:`.reducer`; ``max`` and ``min`` called
on two expressions without an axis are elementwise). ``maximum``/``minimum`` and the
``max``/``min`` reducers propagate NaN as NumPy's ``maximum``/``max`` do; Halide's ``lerp`` and ``cast``
as functions. This module only builds
expressions; the code generator decides how each function is spelled in C.
"""
from __future__ import annotations

from typing import Callable

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Call, Expr, Select, Unary, as_expr, binary, cast_to
from tesched.te.expr import power as _power
from tesched.te.reducer import builtin

FLOAT_FUNCTIONS = ("exp", "log", "log2", "log1p", "erf", "sqrt", "tanh", "sigmoid", "floor", "ceil", "rint", "trunc",
                   "pow", "fmod", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "atan2")
PURE_CALLS = frozenset(FLOAT_FUNCTIONS + ("abs", "popcount", "count_leading_zeros", "count_trailing_zeros"))
"""The calls this module builds: pure math of their arguments (no memory, no side effect)."""


def _unary_float(name: str, x: object) -> Expr:
    e = as_expr(x)
    if not dt.is_float(e.dtype):
        e = cast_to(e, "float32")
    return Call(name, (e,), e.dtype)


def _publish(function: Callable[..., Expr], name: str, doc: str) -> Callable[..., Expr]:
    """``function`` named ``name`` (as ``ts.<name>``) with docstring ``doc``."""
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _float_function(name: str, what: str, example: str) -> Callable[[object], Expr]:
    def function(x: object) -> Expr:
        return _unary_float(name, x)

    return _publish(function, name, f"""{what}, elementwise (integers are computed in float32).

    Parameters
    ----------
    x : Expr or number
        The argument.

    Returns
    -------
    Expr
        A floating expression of ``x``'s floating type (float32 for integers).

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: {example}, name="B")
    """)


exp = _float_function("exp", "``e`` raised to ``x``", "ts.exp(A[i])")
log = _float_function("log", "The natural logarithm of ``x``", "ts.log(A[i] + 1.0)")
log2 = _float_function("log2", "The base-2 logarithm of ``x``", "ts.log2(A[i] + 1.0)")
log1p = _float_function("log1p", "``log(1 + x)``, exact for small ``x``", "ts.log1p(A[i])")
erf = _float_function("erf", "The error function of ``x`` (C's ``erf``)", "ts.erf(A[i])")
sqrt = _float_function("sqrt", "The square root of ``x``", "ts.sqrt(A[i] * A[i] + 1.0)")
tanh = _float_function("tanh", "The hyperbolic tangent of ``x``", "ts.tanh(A[i])")
sigmoid = _float_function("sigmoid", "``1 / (1 + exp(-x))``", "ts.sigmoid(A[i])")
floor = _float_function("floor", "The largest integer value not above ``x`` (as a float)", "ts.floor(A[i] * 4.0)")
ceil = _float_function("ceil", "The smallest integer value not below ``x`` (as a float)", "ts.ceil(A[i] * 4.0)")
rint = _float_function("rint", "``x`` rounded to the nearest integer, ties to even (NumPy's ``rint``; as a float)",
                       "ts.rint(A[i] * 10.0)")
trunc = _float_function("trunc", "``x`` rounded toward zero (as a float)", "ts.trunc(A[i] * 4.0)")
sin = _float_function("sin", "The sine of ``x`` (radians)", "ts.sin(A[i])")
cos = _float_function("cos", "The cosine of ``x`` (radians)", "ts.cos(A[i])")
tan = _float_function("tan", "The tangent of ``x`` (radians)", "ts.tan(A[i])")
asin = _float_function("asin", "The arc sine of ``x``, in ``[-pi/2, pi/2]``", "ts.asin(A[i] * 0.5)")
acos = _float_function("acos", "The arc cosine of ``x``, in ``[0, pi]``", "ts.acos(A[i] * 0.5)")
atan = _float_function("atan", "The arc tangent of ``x``, in ``[-pi/2, pi/2]``", "ts.atan(A[i])")
sinh = _float_function("sinh", "The hyperbolic sine of ``x``", "ts.sinh(A[i])")
cosh = _float_function("cosh", "The hyperbolic cosine of ``x``", "ts.cosh(A[i])")


def atan2(y: object, x: object) -> Expr:
    """The angle of the point ``(x, y)``, in ``[-pi, pi]`` (C's and NumPy's ``atan2``; TVM's and Halide's).

    Parameters
    ----------
    y, x : Expr or number
        At least one of them a tesched expression; the result has their floating type (integers are
        computed in float32).

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.atan2(A[i], 1.0), name="B")
    """
    probe = binary(BinOp.MAX, y, x)
    dtype = probe.dtype if dt.is_float(probe.dtype) else "float32"
    a, b = (cast_to(as_expr(v, dtype), dtype) for v in (y, x))
    return Call("atan2", (a, b), dtype)


def lerp(zero_value: object, one_value: object, weight: object) -> Expr:
    """Halide's ``lerp``: ``zero_value * (1 - weight) + one_value * weight``, of floating values.

    Parameters
    ----------
    zero_value, one_value : Expr or number
        The values at weight 0 and 1; floating (integer endpoints are refused: Halide's integer ``lerp``
        with its fixed-point weights is not provided, cast the endpoints to a float type first).
    weight : Expr or number
        The weight, converted to the endpoints' type (not clamped).

    Returns
    -------
    Expr
        An expression of the endpoints' floating type.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.lerp(A[i], A[i] * 2.0, 0.25), name="B")
    """
    a, b = as_expr(zero_value), as_expr(one_value, as_expr(zero_value).dtype)
    dtype = binary(BinOp.ADD, a, b).dtype
    if not dt.is_float(dtype):
        raise TypeError(f"lerp: the endpoints must be floating, got {a.dtype} and {b.dtype} "
                        "(cast them with ts.cast first)")
    a, b, w = (cast_to(as_expr(v, dtype), dtype) for v in (a, b, weight))
    return a * (1.0 - w) + b * w


def cast(dtype: str, x: object) -> Expr:
    """Halide's ``cast(type, x)`` (TVM's ``x.astype(dtype)``): ``x`` converted to ``dtype``, as C converts.

    Parameters
    ----------
    dtype : str
        The type to convert to (``"float32"``, ``"uint8"`` ...).
    x : Expr or number
        The value.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.cast("int32", A[i] * 10.0), name="B")
    """
    if not isinstance(dtype, str):
        raise TypeError(f"cast: the first argument is the dtype (cast(dtype, x), as Halide's), got "
                        f"{type(dtype).__name__}")
    return as_expr(x).astype(dtype)


def round(x: object) -> Expr:  # noqa: A001 - TVM's name
    """``x`` rounded to the nearest integer, ties to even, as a float: TVM's and Halide's ``round`` and
    NumPy's ``round``/``rint`` (the same expression as :func:`rint`).

    Parameters
    ----------
    x : Expr or number
        The argument (integers are computed in float32).

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.round(A[i] * 10.0), name="B")
    """
    return rint(x)


def power(x: object, y: object) -> Expr:
    """``x`` raised to ``y`` (C's ``pow``, NumPy's ``power`` on floats); ``x ** y`` is the same.

    Parameters
    ----------
    x, y : Expr or number
        At least one of them a tesched expression. The result has their floating type; integer operands
        are computed in float32 (as Halide's ``pow``).

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.power(A[i], 2.5), name="B")
    """
    return _power(x, y)


def fmod(x: object, y: object) -> Expr:
    """The remainder of ``x / y`` truncated toward zero, with the sign of ``x`` (C's and NumPy's ``fmod``;
    ``%`` is the floor modulo instead).

    Parameters
    ----------
    x, y : Expr or number
        At least one of them a tesched expression; types are promoted as for ``+``. On integers a zero
        divisor gives 0, as NumPy's ``fmod``.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.fmod(A[i], 0.75), name="B")
    """
    probe = binary(BinOp.MAX, x, y)
    if probe.dtype == "bool":
        raise TypeError(f"fmod({x!r}, {y!r}): no arithmetic on bool")
    a, b = (cast_to(as_expr(v, probe.dtype), probe.dtype) for v in (x, y))
    return Call("fmod", (a, b), probe.dtype)


def clamp(x: object, low: object, high: object) -> Expr:
    """``x`` limited to ``[low, high]``: ``minimum(maximum(x, low), high)`` (Halide's ``clamp``; NaN
    propagates as in :func:`maximum`).

    Parameters
    ----------
    x, low, high : Expr or number
        Promoted as for ``+``.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.clamp(A[i], 0.0, 6.0), name="relu6")
    """
    return minimum(maximum(x, low), high)


def _bitwise(op: str, tvm_name: str, symbol: str) -> Callable[[object, object], Expr]:
    def function(x: object, y: object) -> Expr:
        return binary(op, x, y)

    return _publish(function, tvm_name, f"""``x {symbol} y`` on integers (TVM's ``{tvm_name}``); a float operand is a ``TypeError``.

    Parameters
    ----------
    x, y : Expr or int
        At least one of them a tesched expression; types are promoted as for ``+``.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.{tvm_name}(A[i], 3), name="B")
    """)


bitwise_and = _bitwise("bitand", "bitwise_and", "&")
bitwise_or = _bitwise("bitor", "bitwise_or", "|")
bitwise_xor = _bitwise("bitxor", "bitwise_xor", "^")
shift_left = _bitwise("shl", "shift_left", "<<")
shift_right = _bitwise("shr", "shift_right", ">>")


def bitwise_not(x: object) -> Expr:
    """``~x`` on an integer (TVM's ``bitwise_not``); a float or bool argument is a ``TypeError``.

    Parameters
    ----------
    x : Expr or int
        The argument.
    """
    e = as_expr(x)
    if e.dtype == "bool":
        raise TypeError(f"bitwise_not({e!r}): bitwise not needs an integer, got bool (use ~ for logical not)")
    return Unary("bitnot", e)


def abs(x: object) -> Expr:  # noqa: A001 - TVM's name
    """The absolute value of ``x``, in ``x``'s type (bool becomes int32).

    Parameters
    ----------
    x : Expr or number
        The argument.
    """
    e = as_expr(x)
    if e.dtype == "bool":
        e = cast_to(e, "int32")
    return Call("abs", (e,), e.dtype)


def maximum(a: object, b: object) -> Expr:
    """The larger of ``a`` and ``b``, elementwise (types promoted as for ``+``).

    Parameters
    ----------
    a, b : Expr or number
        At least one of them a tesched expression.

    Example
    -------
    >>> relu = ts.compute(A.shape, lambda i: ts.maximum(A[i], 0.0), name="relu")
    """
    return binary(BinOp.MAX, a, b)


def minimum(a: object, b: object) -> Expr:
    """The smaller of ``a`` and ``b``, elementwise (types promoted as for ``+``).

    Parameters
    ----------
    a, b : Expr or number
        At least one of them a tesched expression.
    """
    return binary(BinOp.MIN, a, b)


def if_then_else(cond: object, then_value: object, else_value: object) -> Expr:
    """``then_value`` where ``cond`` holds, else ``else_value``; only the chosen side is evaluated
    (``ts.select`` is the same function, TVM's ``Select``/Halide's ``select``)."""
    c = as_expr(cond)
    if c.dtype != "bool":
        c = binary(BinOp.NE, c, 0)
    if not isinstance(then_value, Expr) and not isinstance(else_value, Expr):
        then_value = as_expr(then_value)  # two literals (the mask idiom): the first one's dtype leads
    probe = binary(BinOp.MAX, then_value, else_value)  # applies the promotion rules to both sides
    t = cast_to(as_expr(then_value, probe.dtype), probe.dtype)
    f = cast_to(as_expr(else_value, probe.dtype), probe.dtype)
    return Select(c, t, f)


select = if_then_else


def all(*conds: object) -> Expr:  # noqa: A001 - TVM's name
    """The conjunction of ``conds`` (non-zero values count as true).

    Parameters
    ----------
    *conds : Expr or number
        One or more conditions.

    Example
    -------
    >>> inside = ts.all(i >= 1, i < n - 1)
    """
    out = as_expr(conds[0])
    for c in conds[1:]:
        out = binary(BinOp.AND, out, c)
    return out if out.dtype == "bool" else binary(BinOp.NE, out, 0)


def any(*conds: object) -> Expr:  # noqa: A001 - TVM's name
    """The disjunction of ``conds`` (non-zero values count as true).

    Parameters
    ----------
    *conds : Expr or number
        One or more conditions.
    """
    out = as_expr(conds[0])
    for c in conds[1:]:
        out = binary(BinOp.OR, out, c)
    return out if out.dtype == "bool" else binary(BinOp.NE, out, 0)


def _bit_count(name: str, what: str) -> Callable[[object], Expr]:
    def function(x: object) -> Expr:
        e = as_expr(x)
        if not dt.is_int(e.dtype) or e.dtype == "bool":
            raise TypeError(f"{name}({e!r}): an integer argument is needed, got {e.dtype}")
        return Call(name, (e,), e.dtype)

    return _publish(function, name, f"""{what} of the bits of ``x`` (an integer; a negative value counts its
    two's complement bits), in ``x``'s type (Halide's ``{name}``).

    Parameters
    ----------
    x : Expr
        An integer expression.

    Example
    -------
    >>> B = ts.compute(A.shape, lambda i: ts.{name}(A[i]), name="B")
    """)


popcount = _bit_count("popcount", "The number of set bits")
count_leading_zeros = _bit_count("count_leading_zeros", "The number of zeros above the highest set bit (the "
                                 "width for 0)")
count_trailing_zeros = _bit_count("count_trailing_zeros", "The number of zeros below the lowest set bit (the "
                                  "width for 0)")


sum = builtin("sum")  # noqa: A001 - TVM's name
prod = builtin("prod")
max = builtin("max")  # noqa: A001 - TVM's name
min = builtin("min")  # noqa: A001 - TVM's name
