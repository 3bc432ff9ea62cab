"""Reference evaluation of graphs with NumPy: :func:`interpret` runs a function on arrays, and
:func:`evaluate_constant` turns an expression whose leaves are all constants into one constant (the work
of constant folding). Each op uses its ``evaluate`` from :mod:`.op`; nothing is compiled.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tesched.graph.types import TensorType, TupleType
from tesched.graph.params import bind_arguments
from tesched.graph.visit import post_order

Value = Any  # an ndarray or a tuple of values


def evaluate(body: Expr, env: dict[int, Value]) -> Value:
    """The value of ``body``; ``env`` maps ``id(var)`` to each variable's value."""
    values = dict(env)
    for node in post_order(body):
        if isinstance(node, Var):
            if id(node) not in values:
                raise ValueError(f"variable {node.name} has no value")
        elif isinstance(node, Constant):
            values[id(node)] = node.data
        elif isinstance(node, Tuple):
            values[id(node)] = tuple(values[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            values[id(node)] = values[id(node.tuple_value)][node.index]
        elif isinstance(node, Call):
            args = [values[id(a)] for a in node.args]
            if isinstance(node.op, Function):
                values[id(node)] = evaluate(node.op.body, {id(p): a for p, a in zip(node.op.params, args)})
            else:
                values[id(node)] = np.asarray(node.op.evaluate(args, node.attrs))
        else:
            raise TypeError(f"cannot evaluate a {type(node).__name__}")
    return values[id(body)]


def interpret(f: Function, *args: object, **kwargs: object) -> Value:
    """Run ``f`` on NumPy arrays (by position or parameter name) with the ops' NumPy semantics."""
    arrays = bind_arguments(f.params, args, kwargs)
    return evaluate(f.body, {id(p): a for p, a in zip(f.params, arrays)})


def is_constant_expr(expr: Expr) -> bool:
    """Whether every leaf of ``expr`` is a constant (no variables) and no value has a dynamic dimension (a
    constant broadcast to one is only known at call time)."""
    return not any(isinstance(n, Var) or any(t.is_dynamic for t in _tensor_types(n)) for n in post_order(expr))


def _tensor_types(node: Expr) -> tuple[TensorType, ...]:
    ty = node.checked_type
    fields = ty.fields if isinstance(ty, TupleType) else (ty,)
    return tuple(t for t in fields if isinstance(t, TensorType))


def evaluate_constant(expr: Expr) -> Constant:
    """The constant value of an expression without variables."""
    value = evaluate(expr, {})
    if isinstance(value, tuple):
        raise TypeError("evaluate_constant: the expression is a tuple, not a tensor")
    return Constant(np.array(value, dtype=np.dtype(expr.tensor_type.dtype), order="C"))  # keeps 0-d as 0-d
