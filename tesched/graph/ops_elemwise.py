"""Elementwise and broadcasting graph ops and their builders: ``add``, ``subtract``, ``multiply``,
``divide`` (broadcast; a Python number on one side becomes a constant of the other side's dtype),
``sigmoid``, ``tanh``, ``exp``, ``erf``, ``sqrt``, ``rsqrt``, ``log``, ``abs``, ``negative``, ``clip``,
``nn.relu`` (elemwise) and ``nn.bias_add`` (broadcast along ``axis``).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Constant, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern
from tesched.nn.shape import normalize_axis

Operand = Expr | float | int


def _binary_op(name: str, declare: Callable, ufunc: Callable) -> Callable[[Operand, Operand], Call]:
    op = register_op(name, Pattern.BROADCAST, lambda args, attrs: declare(args[0], args[1]),
                     lambda args, attrs: ufunc(args[0], args[1]).astype(np.result_type(*args)), 2)

    def build(lhs: Operand, rhs: Operand) -> Call:
        lhs_expr, rhs_expr = _operands(name, lhs, rhs)
        return Call(op, [lhs_expr, rhs_expr])

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``{name}(lhs, rhs)`` with NumPy broadcasting."
    return build


def _operands(name: str, lhs: Operand, rhs: Operand) -> tuple[Expr, Expr]:
    expr = lhs if isinstance(lhs, Expr) else rhs
    if not isinstance(expr, Expr):
        raise TypeError(f"{name}: at least one operand must be a graph expression")
    dtype = expr.tensor_type.dtype

    def as_expr(v: Operand) -> Expr:
        if isinstance(v, Expr):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return Constant(np.array(v, dtype=dtype))
        raise TypeError(f"{name}: operands must be graph expressions or numbers, got {type(v).__name__}")

    return as_expr(lhs), as_expr(rhs)


def _unary_op(name: str, declare: Callable, evaluate: Callable[[np.ndarray], np.ndarray],
              doc: str) -> Callable[[Expr], Call]:
    op = register_op(name, Pattern.ELEMWISE, lambda args, attrs: declare(args[0]),
                     lambda args, attrs: evaluate(args[0]).astype(args[0].dtype), 1)

    def build(data: Expr) -> Call:
        return Call(op, [data])

    build.__name__ = build.__qualname__ = name.rsplit(".", 1)[-1]
    build.__doc__ = doc
    return build


add = _binary_op("add", nn.add, np.add)
subtract = _binary_op("subtract", nn.subtract, np.subtract)
multiply = _binary_op("multiply", nn.multiply, np.multiply)
divide = _binary_op("divide", nn.divide, np.divide)

relu = _unary_op("nn.relu", nn.relu, lambda x: np.maximum(x, 0), "``max(x, 0)``.")
sigmoid = _unary_op("sigmoid", nn.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "``1 / (1 + exp(-x))``.")
tanh = _unary_op("tanh", nn.tanh, np.tanh, "Hyperbolic tangent.")
exp = _unary_op("exp", nn.exp, np.exp, "Exponential.")
erf = _unary_op("erf", nn.erf, np.vectorize(math.erf, otypes=[np.float64]), "The error function (float32).")
sqrt = _unary_op("sqrt", nn.sqrt, np.sqrt, "Square root.")
rsqrt = _unary_op("rsqrt", nn.rsqrt, lambda x: 1 / np.sqrt(x), "``1 / sqrt(x)``.")
log = _unary_op("log", nn.log, np.log, "Natural logarithm.")
abs = _unary_op("abs", nn.abs, np.abs, "Absolute value.")  # noqa: A001 - Relay's name
negative = _unary_op("negative", nn.negative, np.negative, "Elementwise negation, ``-x``.")

_CLIP = register_op("clip", Pattern.ELEMWISE, lambda args, attrs: nn.clip(args[0], attrs["a_min"], attrs["a_max"]),
                    lambda args, attrs: np.clip(args[0], attrs["a_min"], attrs["a_max"]), 1)


def clip(data: Expr, a_min: float | None, a_max: float | None) -> Call:
    """``data`` limited to ``[a_min, a_max]``; ``None`` leaves that side open (``nn.relu6`` is
    ``clip(x, 0, 6)``)."""
    bounds = {"a_min": None if a_min is None else float(a_min), "a_max": None if a_max is None else float(a_max)}
    if bounds["a_min"] is None and bounds["a_max"] is None:
        raise ValueError("clip: give a_min, a_max or both")
    return Call(_CLIP, [data], bounds)


def bias_channel_shape(ndim: int, axis: int) -> tuple[int, ...]:
    """The broadcastable shape a 1-D bias along ``axis`` of an ``ndim``-D tensor takes: ``(C, 1, ..., 1)``."""
    return (-1,) + (1,) * (ndim - 1 - axis)


def _bias_add_eval(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    x, bias = args
    axis = normalize_axis(attrs["axis"], x.ndim, "nn.bias_add")
    return x + bias.reshape(bias_channel_shape(x.ndim, axis))


_BIAS_ADD = register_op("nn.bias_add", Pattern.BROADCAST,
                        lambda args, attrs: nn.bias_add(args[0], args[1], attrs["axis"]), _bias_add_eval, 2)


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    """``data + bias`` with the 1-D ``bias`` along ``axis``."""
    return Call(_BIAS_ADD, [data, bias], {"axis": int(axis)})
