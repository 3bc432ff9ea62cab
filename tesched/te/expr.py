"""Scalar expressions: the nodes users build with Python operators, and their dtype rules.

Every node is immutable and knows its children (``children()``) and how to rebuild itself with new ones
(``with_children``), so generic traversals in :mod:`tesched.te.visit` work on all of them. Nodes are hashed by
identity; ``a == b`` builds a comparison expression (as in TVM) whose truth value is identity.

This module does not know tensors' schedules, loops or C; see :mod:`tesched.te.tensor` for tensor reads and
:mod:`tesched.te.functions` for the named functions (``exp``, ``maximum``, reducers ...).
"""
from __future__ import annotations

import itertools
from enum import StrEnum
from typing import Callable, Sequence

import numpy as np

from tesched.te import dtype as dt

_format: Callable[["Expr"], str] | None = None


def set_formatter(format_expr: Callable[["Expr"], str]) -> None:
    """Install the text form used by ``repr`` (:mod:`tesched.te.printer` installs it when imported, so
    this module does not depend on its printer)."""
    global _format
    _format = format_expr


class Expr:
    """Base class of scalar expressions."""

    __slots__ = ("dtype",)
    dtype: str

    def children(self) -> tuple["Expr", ...]:
        """The operands of this node (its sub-expressions), in order."""
        return ()

    def with_children(self, children: Sequence["Expr"]) -> "Expr":
        """A copy of this node with ``children`` in place of its operands."""
        return self

    # arithmetic -----------------------------------------------------------------------------------
    def __add__(self, other): return binary(BinOp.ADD, self, other)
    def __radd__(self, other): return binary(BinOp.ADD, other, self)
    def __sub__(self, other): return binary(BinOp.SUB, self, other)
    def __rsub__(self, other): return binary(BinOp.SUB, other, self)
    def __mul__(self, other): return binary(BinOp.MUL, self, other)
    def __rmul__(self, other): return binary(BinOp.MUL, other, self)
    def __truediv__(self, other): return binary(BinOp.DIV, self, other)
    def __rtruediv__(self, other): return binary(BinOp.DIV, other, self)
    def __floordiv__(self, other): return binary(BinOp.FLOORDIV, self, other)
    def __rfloordiv__(self, other): return binary(BinOp.FLOORDIV, other, self)
    def __mod__(self, other): return binary(BinOp.FLOORMOD, self, other)
    def __rmod__(self, other): return binary(BinOp.FLOORMOD, other, self)
    def __neg__(self): return Unary("neg", self)

    # comparisons and logic ------------------------------------------------------------------------
    def __lt__(self, other): return binary(BinOp.LT, self, other)
    def __le__(self, other): return binary(BinOp.LE, self, other)
    def __gt__(self, other): return binary(BinOp.GT, self, other)
    def __ge__(self, other): return binary(BinOp.GE, self, other)
    def __eq__(self, other): return binary(BinOp.EQ, self, other)
    def __ne__(self, other): return binary(BinOp.NE, self, other)
    def __and__(self, other): return logical_or_bitwise("and", self, other)
    def __rand__(self, other): return logical_or_bitwise("and", other, self)
    def __or__(self, other): return logical_or_bitwise("or", self, other)
    def __ror__(self, other): return logical_or_bitwise("or", other, self)
    def __xor__(self, other): return logical_or_bitwise("xor", self, other)
    def __rxor__(self, other): return logical_or_bitwise("xor", other, self)
    def __invert__(self): return Unary("not" if self.dtype == "bool" else "bitnot", self)
    def __lshift__(self, other): return binary(BinOp.SHL, self, other)
    def __rlshift__(self, other): return binary(BinOp.SHL, other, self)
    def __rshift__(self, other): return binary(BinOp.SHR, self, other)
    def __rrshift__(self, other): return binary(BinOp.SHR, other, self)
    def __pow__(self, other): return power(self, other)
    def __rpow__(self, other): return power(other, self)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        # As in TVM, ``a == b`` used as a Python truth value (``x in list``) compares identity.
        if isinstance(self, Binary) and self.op in (BinOp.EQ, BinOp.NE):
            return (self.a is self.b) == (self.op == BinOp.EQ)
        raise TypeError("a tesched expression has no truth value: use & | ~ instead of and/or/not, "
                        "and ts.if_then_else instead of if")

    def astype(self, dtype: str) -> "Expr":
        """Cast to ``dtype``."""
        dtype = dt.normalize(dtype)
        return self if dtype == self.dtype else Cast(dtype, self)

    def equal(self, other: object) -> "Expr":
        """The comparison ``self == other`` (an expression)."""
        return binary(BinOp.EQ, self, other)

    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very node (TVM's identity test)."""
        return self is other

    def __repr__(self) -> str:
        return _format(self) if _format is not None else f"<{type(self).__name__}>"


class Const(Expr):
    __slots__ = ("value",)

    value: int | float | bool

    def __init__(self, value: object, dtype: str | None = None):
        dtype = dt.literal_dtype(value, None) if dtype is None else dt.normalize(dtype)
        number = _number(value)
        if dt.is_float(dtype):
            self.value = dt.round_float(float(number), dtype)
        elif dtype == "bool":
            self.value = bool(number)
        else:
            if isinstance(number, float) and not number.is_integer():
                raise TypeError(f"cannot make an {dtype} constant from {value!r}")
            integer = int(number)
            low, high = dt.value_range(dtype)
            if not low <= integer <= high:
                raise TypeError(f"the constant {integer} does not fit in {dtype} ({low} to {high})")
            self.value = integer
        self.dtype = dtype


class Var(Expr):
    """A named scalar variable: a symbolic size (``ts.var``) or a loop index."""

    __slots__ = ("name",)

    def __init__(self, name: str, dtype: str = "int32"):
        self.name = str(name)
        self.dtype = dt.normalize(dtype)


class Param(Var):
    """A runtime scalar parameter (``ts.param``, Halide's ``Param<T>``): a value of its dtype passed at call
    time, usable in any expression but not in a shape or extent (a size is a ``ts.var``). ``serial``
    orders parameters by creation (the order a kernel takes the ones not listed among its arguments)."""

    __slots__ = ("serial",)
    _made = itertools.count()

    def __init__(self, name: str, dtype: str = "float32"):
        super().__init__(name, dtype)
        self.serial = next(Param._made)


class BinOp(StrEnum):
    """The operation of a :class:`Binary`. A ``str`` enum: a member equals, prints and hashes as its name
    (``BinOp.ADD == "add"``), so tables keyed by names still find it."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"                 # true division of floats
    FLOORDIV = "floordiv"       # ``//``: floor division of integers
    FLOORMOD = "floormod"       # ``%``: the floor modulo
    MIN = "min"
    MAX = "max"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQ = "eq"
    NE = "ne"
    AND = "and"                 # logical, of conditions
    OR = "or"
    BITAND = "bitand"
    BITOR = "bitor"
    BITXOR = "bitxor"
    SHL = "shl"
    SHR = "shr"
    CDIV = "cdiv"               # loop IR only: C's truncating ``/`` and ``%``, for operands known non-negative
    CMOD = "cmod"


ARITH_OPS = (BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.FLOORDIV, BinOp.FLOORMOD, BinOp.MIN, BinOp.MAX)
COMPARE_OPS = (BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE, BinOp.EQ, BinOp.NE)
LOGIC_OPS = (BinOp.AND, BinOp.OR)
BITWISE_OPS = (BinOp.BITAND, BinOp.BITOR, BinOp.BITXOR, BinOp.SHL, BinOp.SHR)
"""Integer-only operations: ``&``, ``|``, ``^`` of integers and the shifts ``<<``, ``>>`` (NumPy's semantics:
a shift by a negative amount or by the width or more gives 0, or -1 for ``>>`` of a negative value)."""


class Binary(Expr):
    """``a <op> b`` with both operands already of the operation's operand dtype."""

    __slots__ = ("op", "a", "b")

    op: BinOp

    def __init__(self, op: BinOp | str, a: Expr, b: Expr, dtype: str):
        self.op, self.a, self.b, self.dtype = BinOp(op), a, b, dtype

    def children(self):
        return (self.a, self.b)

    def with_children(self, children):
        return Binary(self.op, children[0], children[1], self.dtype)


class Unary(Expr):
    """``-a`` (op ``neg``), logical not (op ``not``) or bitwise not of an integer (op ``bitnot``)."""

    __slots__ = ("op", "a")

    def __init__(self, op: str, a: object):
        a = as_expr(a)
        if op == "not":
            a = _as_bool(a)
        elif op == "bitnot":   # (vector dtypes of the loop IR are not in the table: already checked)
            if a.dtype == "bool" or (a.dtype in dt.DTYPES and dt.is_float(a.dtype)):
                raise TypeError(f"~({a!r}): bitwise not needs an integer, got {a.dtype}; for logic compare "
                                "first (~(x > 0))")
        elif a.dtype == "bool":
            raise TypeError(f"-({a!r}): no arithmetic on bool: cast with .astype('int32') first")
        self.op, self.a = op, a
        self.dtype = "bool" if op == "not" else a.dtype

    def children(self):
        return (self.a,)

    def with_children(self, children):
        return Unary(self.op, children[0])


class Call(Expr):
    """A named pure function of scalars, e.g. ``exp``; the C name is chosen by the code generator."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: Sequence[Expr], dtype: str):
        self.name, self.args, self.dtype = name, tuple(args), dtype

    def children(self):
        return self.args

    def with_children(self, children):
        return Call(self.name, children, self.dtype)


class Cast(Expr):
    __slots__ = ("value",)

    def __init__(self, dtype: str, value: Expr):
        self.dtype, self.value = dt.normalize(dtype), value

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return Cast(self.dtype, children[0])


class Select(Expr):
    """``cond ? true_value : false_value``; only the chosen branch is evaluated."""

    __slots__ = ("cond", "true_value", "false_value")

    def __init__(self, cond: Expr, true_value: Expr, false_value: Expr):
        self.cond, self.true_value, self.false_value = cond, true_value, false_value
        self.dtype = true_value.dtype

    def children(self):
        return (self.cond, self.true_value, self.false_value)

    def with_children(self, children):
        return Select(*children)


# construction helpers -----------------------------------------------------------------------------

def as_expr(value: object, like: str | None = None) -> Expr:
    """Turn a Python number (typed after ``like``, see :mod:`tesched.te.dtype`) or an Expr into an Expr."""
    if isinstance(value, Expr):
        return value
    return Const(value, dt.literal_dtype(value, like))


def cast_to(e: Expr, dtype: str) -> Expr:
    return e if e.dtype == dtype else Cast(dtype, e)


def _as_bool(e: Expr) -> Expr:
    if e.dtype == "bool":
        return e
    return Binary(BinOp.NE, e, Const(0, e.dtype), "bool")


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%", "lt": "<",
            "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|", "bitand": "&",
            "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>"}


def _text(op: str, a: object, b: object) -> str:
    """``a <op> b`` as a user would read it, for error messages."""
    if op in _SYMBOLS:
        return f"{a!r} {_SYMBOLS[op]} {b!r}"
    return f"{op}({a!r}, {b!r})"


def binary(op: BinOp | str, a: object, b: object) -> Expr:
    """Build ``a <op> b`` (``op`` a :class:`BinOp` or its name) applying the rules of :mod:`tesched.te.dtype`;
    a broken rule raises ``TypeError`` naming the expression and both dtypes."""
    op = BinOp(op)
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise TypeError(f"binary {op} needs at least one tesched expression")
    try:
        a = as_expr(a, b.dtype if isinstance(b, Expr) else None)
        b = as_expr(b, a.dtype)
        if op in LOGIC_OPS:
            return Binary(op, _as_bool(a), _as_bool(b), "bool")
        operand = dt.promote(a.dtype, b.dtype, op)
        if op == "div" and not dt.is_float(operand):
            raise TypeError(f"integer true division of {a.dtype} and {b.dtype} is ambiguous: use // for floor "
                            "division, or cast an operand with .astype('float32')")
        if op == "floordiv" and dt.is_float(operand):
            raise TypeError(f"// is integer floor division, and the operands are {a.dtype} and {b.dtype}: "
                            "use ts.floor(a / b)")
        if op in BITWISE_OPS and (not dt.is_int(operand) or operand == "bool"):
            raise TypeError(f"bitwise operations need integer operands, got {a.dtype} and {b.dtype}; for logic "
                            "on conditions compare first ((x > 0) & (y > 0)), for bits of a float cast it")
    except TypeError as err:
        raise TypeError(f"{_text(op, a, b)}: {err}") from None
    a, b = cast_to(a, operand), cast_to(b, operand)
    folded = _fold(op, a, b)
    if folded is not None:
        return folded
    return Binary(op, a, b, "bool" if op in COMPARE_OPS else operand)


def logical_or_bitwise(op: str, a: object, b: object) -> Expr:
    """``&``, ``|`` or ``^`` (``op`` is ``and``, ``or`` or ``xor``): bitwise on two integers, logical when
    an operand is a condition (``bool``); a floating operand is a ``TypeError``."""
    dtypes = [x.dtype if isinstance(x, Expr) else None for x in (a, b)]
    logical = "bool" in dtypes or any(isinstance(x, (bool, np.bool_)) for x in (a, b))
    if logical and not any(d is not None and dt.is_float(d) for d in dtypes):
        if op != "xor":
            return binary(op, a, b)
        return binary(BinOp.NE, _as_bool(as_expr(a)), _as_bool(as_expr(b)))
    return binary("bit" + op, a, b)


def power(base: object, exponent: object) -> Expr:
    """``base ** exponent`` (C's ``pow``), computed in the operands' floating type (integers in float32,
    as Halide's ``pow``)."""
    if not isinstance(base, Expr) and not isinstance(exponent, Expr):
        raise TypeError("ts.power needs at least one tesched expression")

    def floating(x: object) -> object:
        if isinstance(x, Expr) and not dt.is_float(x.dtype):
            if x.dtype == "bool":
                raise TypeError(f"power({base!r}, {exponent!r}): no arithmetic on bool")
            return Cast("float32", x)
        return x

    a, b = floating(base), floating(exponent)
    a = as_expr(a, b.dtype if isinstance(b, Expr) else None)
    b = as_expr(b, a.dtype)
    dtype = dt.promote(a.dtype, b.dtype)
    dtype = dtype if dt.is_float(dtype) else "float32"
    return Call("pow", (cast_to(a, dtype), cast_to(b, dtype)), dtype)


def _number(value: object) -> int | float | bool:
    """A Python or NumPy number as a Python number (TypeError for anything else)."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as a constant")


def _fold(op: str, a: Expr, b: Expr) -> Expr | None:
    """Trivial integer identities (``x * 1``, ``x + 0``, constant arithmetic), so printed IR stays short.

    Floating expressions are left alone except ``x * 1.0`` (exact), to keep IEEE semantics."""
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if not dt.is_int(a.dtype) or a.dtype == "bool":
        return a if op == "mul" and cb == 1.0 else (b if op == "mul" and ca == 1.0 else None)
    if ca is not None and cb is not None and op in ("add", "sub", "mul"):
        value = {"add": ca + cb, "sub": ca - cb, "mul": ca * cb}[op]
        low, high = dt.value_range(a.dtype)
        return Const(value, a.dtype) if low <= value <= high else None
    if (op in ("add", "sub") and cb == 0) or (op == "mul" and cb == 1) or (op == "floordiv" and cb == 1):
        return a
    if (op == "add" and ca == 0) or (op == "mul" and ca == 1):
        return b
    return None


def const(value: object, dtype: str | None = None) -> Const:
    """A constant; ``dtype`` defaults to int32 for ints and float32 for floats."""
    return Const(value, dtype)
