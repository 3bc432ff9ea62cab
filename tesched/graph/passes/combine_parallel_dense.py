"""``combine_parallel_dense``: ``nn.dense`` calls that read the same input with constant weights (the
q/k/v projections of attention, the per-gate matmuls of an RNN, LSTM or GRU cell written gate by gate)
become one ``nn.dense`` over the weights concatenated along the output axis, and each original result a
``strided_slice`` of its columns (TVM's CombineParallelDense). One matmul reads the input once and fills
wider register tiles; the slices join its fusion group (``FusionRules.slice_anchors``).

Only dense calls whose weight is a constant combine (concatenating variable weights would cost a copy per
call). The result is the same to float32 rounding: each output column is the same dot product.
"""
from __future__ import annotations

from typing import TypeGuard

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_nn import dense
from tesched.graph.ops_transform import strided_slice
from tesched.graph.visit import post_order, rewrite


def _is_constant_dense(node: Expr) -> TypeGuard[Call]:
    return isinstance(node, Call) and not isinstance(node.op, Function) and node.op_name == "nn.dense" \
        and isinstance(node.args[1], Constant)


def _weight(call: Call) -> np.ndarray:
    """The constant weight of a dense call that :func:`_is_constant_dense` accepted."""
    weight = call.args[1]
    assert isinstance(weight, Constant)
    return weight.data


def combine_parallel_dense(f: Function) -> Function:
    """Combine the constant-weight dense calls of ``f`` that share their input (see the module doc)."""
    siblings: dict[int, list[Call]] = {}
    for node in post_order(f.body):
        if _is_constant_dense(node):
            siblings.setdefault(id(node.args[0]), []).append(node)
    member_of = {id(c): key for key, calls in siblings.items() if len(calls) > 1 for c in calls}
    if not member_of:
        return f
    combined: dict[int, Expr] = {}

    def replace(node: Expr, original: Expr) -> Expr | None:
        key = member_of.get(id(original))
        if key is None or not isinstance(node, Call):
            return None
        calls = siblings[key]
        if key not in combined:
            combined[key] = dense(node.args[0], Constant(np.concatenate([_weight(c) for c in calls], axis=0)))
        position = [id(c) for c in calls].index(id(original))
        start = sum(int(c.tensor_type.shape[1]) for c in calls[:position])
        rows, columns = original.tensor_type.shape
        return strided_slice(combined[key], [0, start], [rows, start + columns])

    return f.with_body(rewrite(f.body, replace))
