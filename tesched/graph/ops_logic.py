"""Comparison, logic and selection graph ops and their builders: ``equal``, ``not_equal``, ``less``,
``less_equal``, ``greater``, ``greater_equal`` (broadcast, bool results), ``logical_not``, ``logical_and``,
``logical_or``, ``logical_xor``, ``where`` (three-way broadcast), ``any``/``all`` over axes, and ``cast``.

A Python number on one side of a comparison, or as one value of ``where``, becomes a constant of the
other side's dtype (``-inf`` included). The declarations are :mod:`tesched.nn.logic`'s.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import tesched.nn.logic as logic
from tesched.graph.ir import Call, Constant, Expr
from tesched.graph.op import register_op
from tesched.graph.ops_reduce import Axes
from tesched.nn.pattern import Pattern
from tesched.te.dtype import numpy_dtype

Operand = Expr | float | int | bool

_NUMPY_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                  "ge": np.greater_equal}
_NUMPY_LOGICAL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _constant_like(value: Operand, like: Expr, what: str) -> Expr:
    """``value`` as a graph expression: itself, or a 0-d constant of ``like``'s dtype."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float)):
        return Constant(np.array(value, dtype=numpy_dtype(like.tensor_type.dtype)))
    raise TypeError(f"{what}: operands must be graph expressions or numbers, got {type(value).__name__}")


def _comparison(cmp: str, name: str) -> Callable[[Operand, Operand], Call]:
    op = register_op(name, Pattern.BROADCAST, lambda args, attrs: logic.compare(args[0], args[1], cmp),
                     lambda args, attrs: _NUMPY_COMPARE[cmp](args[0], args[1]), 2)

    def build(lhs: Operand, rhs: Operand) -> Call:
        expr = lhs if isinstance(lhs, Expr) else rhs
        if not isinstance(expr, Expr):
            raise TypeError(f"{name}: at least one operand must be a graph expression")
        return Call(op, [_constant_like(lhs, expr, name), _constant_like(rhs, expr, name)])

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``lhs {cmp} rhs`` elementwise with NumPy broadcasting: a bool tensor."
    return build


equal = _comparison("eq", "equal")
not_equal = _comparison("ne", "not_equal")
less = _comparison("lt", "less")
less_equal = _comparison("le", "less_equal")
greater = _comparison("gt", "greater")
greater_equal = _comparison("ge", "greater_equal")


def _logical(kind: str) -> Callable[[Expr, Expr], Call]:
    name = f"logical_{kind}"
    op = register_op(name, Pattern.BROADCAST, lambda args, attrs: logic.logical(args[0], args[1], kind),
                     lambda args, attrs: _NUMPY_LOGICAL[kind](args[0], args[1]), 2)

    def build(lhs: Expr, rhs: Expr) -> Call:
        return Call(op, [lhs, rhs])

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``lhs {kind} rhs`` of bool tensors, broadcast."
    return build


logical_and = _logical("and")
logical_or = _logical("or")
logical_xor = _logical("xor")

_LOGICAL_NOT = register_op("logical_not", Pattern.ELEMWISE, lambda args, attrs: logic.logical_not(args[0]),
                           lambda args, attrs: np.logical_not(args[0]), 1)


def logical_not(data: Expr) -> Call:
    """``not data`` of a bool tensor."""
    return Call(_LOGICAL_NOT, [data])


_WHERE = register_op("where", Pattern.BROADCAST, lambda args, attrs: logic.where(args[0], args[1], args[2]),
                     lambda args, attrs: np.where(args[0], args[1], args[2]).astype(np.result_type(args[1], args[2])),
                     3)


def where(cond: Expr, lhs: Operand, rhs: Operand) -> Call:
    """``lhs`` where the bool ``cond`` holds, else ``rhs``; all three broadcast (a number takes the other
    value's dtype)."""
    expr = lhs if isinstance(lhs, Expr) else rhs
    if not isinstance(expr, Expr):
        raise TypeError("where: at least one of the two values must be a graph expression")
    return Call(_WHERE, [cond, _constant_like(lhs, expr, "where"), _constant_like(rhs, expr, "where")])


def _any_all(name: str, reduce: Callable) -> Callable[..., Call]:
    declare = logic.any if name == "any" else logic.all
    op = register_op(name, Pattern.COMM_REDUCE,
                     lambda args, attrs: declare(args[0], attrs["axis"], attrs["keepdims"]),
                     lambda args, attrs: np.asarray(reduce(args[0], axis=attrs["axis"], keepdims=attrs["keepdims"])),
                     1)

    def build(data: Expr, axis: Axes = None, keepdims: bool = False) -> Call:
        axes = None if axis is None else (int(axis) if isinstance(axis, int) else tuple(int(a) for a in axis))
        return Call(op, [data], {"axis": axes, "keepdims": bool(keepdims)})

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``{name}`` of a bool tensor over ``axis`` (all axes when None), NumPy's ``keepdims``."
    return build


any = _any_all("any", np.any)  # noqa: A001 - NumPy's name
all = _any_all("all", np.all)  # noqa: A001 - NumPy's name

_CAST = register_op("cast", Pattern.ELEMWISE, lambda args, attrs: logic.cast(args[0], attrs["dtype"]),
                    lambda args, attrs: args[0].astype(numpy_dtype(attrs["dtype"])), 1)


def cast(data: Expr, dtype: str) -> Expr:
    """``data`` converted to ``dtype`` (itself when it already has it)."""
    if data.tensor_type.dtype == dtype:
        return data
    return Call(_CAST, [data], {"dtype": str(dtype)})
