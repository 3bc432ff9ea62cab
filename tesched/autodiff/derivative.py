"""Partial derivatives of scalar expressions with respect to tensor reads.

``partial(e, reads)`` is the symbolic derivative of ``e`` with respect to the element that the tensor reads
in ``reads`` load (several structurally equal reads of one element count as one variable). Only floating
sub-expressions carry derivatives: integers, conditions and the rounding functions (``floor``, ``rint``,
...) have none, as in PyTorch. Subgradients at ties follow PyTorch: ``maximum``/``minimum`` split the
gradient in halves between equal operands, ``abs`` has derivative 0 at 0.

This module builds expressions only; it does not know tensors' consumers, reductions or schedules
(:mod:`tesched.autodiff.gradient` does). ``None`` stands for an exact zero, so no dead arithmetic is built.
"""
from __future__ import annotations

import math
from typing import Callable

from tesched.errors import GradientError
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Call, Cast, Const, Expr, Select, Unary, cast_to
from tesched.te.tensor import TensorRead
from tesched.te.functions import cos, cosh, exp, log, power, sin, sinh, sqrt, trunc

Derivative = Expr | None

_ROUNDING = ("floor", "ceil", "rint", "trunc", "round")


def _add(a: Derivative, b: Derivative) -> Derivative:
    if a is None:
        return b
    return a if b is None else a + b


def _scale(factor: Expr, d: Derivative) -> Derivative:
    return None if d is None else d * factor


def _zero(like: Expr) -> Const:
    return Const(0.0, like.dtype)


def _or_zero(d: Derivative, like: Expr) -> Expr:
    return _zero(like) if d is None else cast_to(d, like.dtype)


def _tie_split(a: Expr, b: Expr, da: Derivative, db: Derivative, larger: bool) -> Derivative:
    """d max(a, b) (``larger``) or d min(a, b): the chosen operand's derivative, half of each at a tie."""
    if da is None and db is None:
        return None
    first, second = (a > b, a < b) if larger else (a < b, a > b)
    za, zb = _or_zero(da, a), _or_zero(db, a)
    return Select(first, za, Select(second, zb, (za + zb) * 0.5))


def _unary_rule(name: str) -> Callable[[Call, Expr], Expr] | None:
    """``d f(x) / dx`` as a function of the call node ``e = f(x)`` and ``x``."""
    rules: dict[str, Callable[[Call, Expr], Expr]] = {
        "exp": lambda e, x: e,
        "log": lambda e, x: 1.0 / x,
        "sqrt": lambda e, x: 0.5 / e,
        "tanh": lambda e, x: 1.0 - e * e,
        "sigmoid": lambda e, x: e * (1.0 - e),
        "sin": lambda e, x: cos(x),
        "cos": lambda e, x: -sin(x),
        "tan": lambda e, x: 1.0 + e * e,
        "asin": lambda e, x: 1.0 / sqrt(1.0 - x * x),
        "acos": lambda e, x: -1.0 / sqrt(1.0 - x * x),
        "atan": lambda e, x: 1.0 / (1.0 + x * x),
        "sinh": lambda e, x: cosh(x),
        "cosh": lambda e, x: sinh(x),
        "abs": lambda e, x: Select(x > 0.0, Const(1.0, x.dtype), Select(x < 0.0, Const(-1.0, x.dtype),
                                                                          Const(0.0, x.dtype))),
        "erf": lambda e, x: (2.0 / math.sqrt(math.pi)) * exp(-(x * x)),
        "log1p": lambda e, x: 1.0 / (1.0 + x),
        "log2": lambda e, x: 1.0 / (x * math.log(2.0)),
    }
    return rules.get(name)


class _Differentiator:
    """One derivative, memoized by node identity (expressions are DAGs)."""

    def __init__(self, reads: set[int]):
        self.reads = reads
        self.memo: dict[int, Derivative] = {}

    def __call__(self, e: Expr) -> Derivative:
        key = id(e)
        if key not in self.memo:
            self.memo[key] = self._derive(e)
        return self.memo[key]

    def _derive(self, e: Expr) -> Derivative:
        if id(e) in self.reads:
            return Const(1.0, e.dtype)
        if e.dtype not in dt.DTYPES or not dt.is_float(e.dtype):
            return None                       # integers, conditions: no derivative
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Unary):
            d = self(e.a)
            return None if d is None else -d
        if isinstance(e, Cast):
            d = self(e.value)
            return None if d is None else cast_to(d, e.dtype)
        if isinstance(e, Select):
            dt_, df = self(e.true_value), self(e.false_value)
            if dt_ is None and df is None:
                return None
            return Select(e.cond, _or_zero(dt_, e), _or_zero(df, e))
        if isinstance(e, Call):
            return self._call(e)
        if isinstance(e, TensorRead) or not e.children():
            return None                       # reads of other elements, constants, variables
        raise GradientError(f"no derivative is defined for {type(e).__name__} {e!r}")

    def _binary(self, e: Binary) -> Derivative:
        a, b = e.a, e.b
        da, db = self(a), self(b)
        if da is None and db is None:
            return None
        if e.op == BinOp.ADD:
            return _add(da, db)
        if e.op == BinOp.SUB:
            return _add(da, None if db is None else -db)
        if e.op == BinOp.MUL:
            return _add(_scale(b, da), _scale(a, db))
        if e.op == BinOp.DIV:
            return _add(_scale(1.0 / b, da), _scale(-(e / b), db))
        if e.op in (BinOp.MAX, BinOp.MIN):
            return _tie_split(a, b, da, db, e.op == BinOp.MAX)
        raise GradientError(f"no derivative is defined for the operation {e.op} in {e!r}")

    def _call(self, e: Call) -> Derivative:
        if e.name in _ROUNDING:
            return None
        if e.name == "pow":
            return self._pow(e)
        if e.name == "atan2":
            y, x = e.args
            dy, dx = self(y), self(x)
            norm = x * x + y * y
            return _add(_scale(x / norm, dy), _scale(-(y / norm), dx))
        if e.name == "fmod":
            a, b = e.args
            da, db = self(a), self(b)
            return _add(da, _scale(-trunc(a / b), db))
        rule = _unary_rule(e.name)
        if rule is None or len(e.args) != 1:
            raise GradientError(f"no derivative is defined for the function {e.name} (in {e!r}); compute the "
                                "gradient of this stage by hand or express it with differentiable functions")
        d = self(e.args[0])
        return None if d is None else d * rule(e, e.args[0])

    def _pow(self, e: Call) -> Derivative:
        base, exponent = e.args
        dbase, dexp = self(base), self(exponent)
        out: Derivative = None
        if dbase is not None:
            if isinstance(exponent, Const):
                k = float(exponent.value)
                factor: Expr | None = (None if k == 0.0 else Const(1.0, e.dtype) if k == 1.0 else base * 2.0
                                       if k == 2.0 else power(base, Const(k - 1.0, e.dtype)) * k)
            else:   # PyTorch: 0 where the exponent is 0
                factor = Select(exponent == 0.0, _zero(e), exponent * power(base, exponent - 1.0))
            out = None if factor is None else dbase * factor
        if dexp is not None:   # PyTorch: 0 where the base is 0 and the exponent is not negative
            factor = Select((base == 0.0) & (exponent >= 0.0), _zero(e), e * log(base))
            out = _add(out, dexp * factor)
        return out


def partial(e: Expr, reads: set[int]) -> Derivative:
    """The derivative of ``e`` with respect to the element loaded by the read nodes whose ids are in
    ``reads`` (``None`` when it is zero); ``GradientError`` naming a function with no derivative."""
    return _Differentiator(reads)(e)
