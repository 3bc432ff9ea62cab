"""The values of a fused function, computed producer first: the one walk the executor and the exporter share.

:func:`fold_values` gives every node of a fused function a value: a parameter and a constant get the
caller's (``param``, ``constant``), a call of a primitive function gets ``group(call, argument values)``;
tuples, their items and ``stop_fusion`` annotations pass values through (a tuple's value is the tuple of
its fields' values). What a value is (a buffer slot, a planned tensor) is the caller's business.
:func:`is_view` tells a primitive function that only reshapes its parameter, which needs no kernel.
"""
from __future__ import annotations

from typing import Any, Callable

from tesched.graph.annotation import STOP_FUSION
from tesched.graph.ir import Call, Constant, Function, Tuple, TupleGetItem, Var
from tesched.graph.op import Op
from tesched.graph.visit import post_order


def fold_values(fn: Function, param: Callable[[int, Var], Any], constant: Callable[[Constant], Any],
                group: Callable[[Call, list[Any]], Any], verb: str = "execute") -> Any:
    """The value of ``fn``'s body, every node's computed once, producers first.

    Parameters
    ----------
    fn : Function
        A fused function (every op inside a primitive function).
    param : callable
        ``param(k, var)``: the value of the ``k``-th parameter.
    constant : callable
        ``constant(node)``: the value of a constant.
    group : callable
        ``group(call, values of its arguments)``: the value of a call of a primitive function (a tuple
        when it has several outputs).
    verb : str
        What the caller does, for the error raised on an op outside a primitive function.

    Returns
    -------
    object
        The body's value (a tuple for a tuple of results).
    """
    values: dict[int, Any] = {id(p): param(k, p) for k, p in enumerate(fn.params)}
    for node in post_order(fn.body):
        if isinstance(node, Var):
            continue
        if isinstance(node, Constant):
            values[id(node)] = constant(node)
        elif isinstance(node, Tuple):
            values[id(node)] = tuple(values[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            values[id(node)] = values[id(node.tuple_value)][node.index]
        elif isinstance(node, Call) and node.op is STOP_FUSION:
            values[id(node)] = values[id(node.args[0])]
        elif isinstance(node, Call) and isinstance(node.op, Function):
            values[id(node)] = group(node, [values[id(a)] for a in node.args])
        else:
            raise TypeError(f"cannot {verb} {node!r}: run fuse_ops first (every op must be in a primitive function)")
    return values[id(fn.body)]


def is_view(fn: Function) -> bool:
    """Whether a primitive function only reshapes its parameter (a view of the same memory: no kernel)."""
    body = fn.body
    return isinstance(body, Call) and isinstance(body.op, Op) and body.op.name == "reshape" \
        and len(fn.params) == 1 and body.args[0] is fn.params[0]
