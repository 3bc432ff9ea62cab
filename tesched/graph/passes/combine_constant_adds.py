"""``combine_constant_adds``: ``add(add(x, c1), c2)`` becomes ``add(x, c1 + c2)``, where either add may be
an ``nn.bias_add`` (its bias is reshaped to broadcast along its axis) and the constants may sit on
either side; chains of any length collapse to one ``add``. The inner add must feed only the outer one.
Broadcasting is associative, so the result keeps the original shape.
"""
from __future__ import annotations

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_elemwise import add, bias_channel_shape
from tesched.graph.visit import rewrite, use_counts
from tesched.nn.shape import normalize_axis


def constant_add_parts(node: Expr) -> tuple[Expr, np.ndarray] | None:
    """``(x, c)`` when ``node`` adds the constant ``c`` (in broadcastable form) to ``x``."""
    if not isinstance(node, Call) or isinstance(node.op, Function):
        return None
    if node.op_name == "nn.bias_add" and isinstance(node.args[1], Constant):
        ndim = node.tensor_type.ndim
        shape = bias_channel_shape(ndim, normalize_axis(node.attrs["axis"], ndim, "nn.bias_add"))
        return node.args[0], node.args[1].data.reshape(shape)
    if node.op_name == "add":
        for side in (0, 1):
            other = node.args[1 - side]
            if isinstance(other, Constant) and not isinstance(node.args[side], Constant):
                return node.args[side], other.data
    return None


def combine_constant_adds(f: Function) -> Function:
    """Merge consecutive additions of constants into one ``add``."""
    counts = use_counts(f.body)

    def merge(node: Expr, original: Expr) -> Expr | None:
        outer = constant_add_parts(node)
        if outer is None:
            return None
        inner_node, c2 = outer
        inner = constant_add_parts(inner_node)
        original_inner = constant_add_parts(original)
        if inner is None or original_inner is None or counts.get(id(original_inner[0]), 0) != 1:
            return None
        x, c1 = inner
        total = (c1.astype(np.float64) + c2.astype(np.float64)).astype(node.tensor_type.dtype)
        return add(x, Constant(total))

    return f.with_body(rewrite(f.body, merge))
