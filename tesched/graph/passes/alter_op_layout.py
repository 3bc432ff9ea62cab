"""``alter_op_layout``: constant weights put, once at build time, in the layout their kernel reads best
(TVM's AlterOpLayout, oneDNN's weight reorder), and the op that reads that layout chosen:

- ``nn.dense(x, W)`` with a constant ``W`` and at least :data:`GEMM_MIN_ROWS` rows becomes
  ``nn.matmul(x, W.T)``: the GEMM schedule (register tiles of rows x SIMD columns, column panels of the
  weight copied once per panel) reads the weight by rows of output columns, so it is transposed here
  instead of at every call. With fewer rows the product is a matrix-vector product, and ``nn.dense``
  keeps the GEMV schedule, which reads the original rows of ``W`` contiguously along the reduction.

Everything else is left as it is. The rewritten graph computes the same values (to float32 rounding).
"""
from __future__ import annotations

import numpy as np

from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_nn import matmul
from tesched.graph.visit import rewrite

GEMM_MIN_ROWS = 8
"""A dense product with at least this many rows is a GEMM (register tiles of 8 rows fill up)."""


def _dense_as_gemm(node: Call) -> Expr | None:
    x, weight = node.args
    if not isinstance(weight, Constant) or x.tensor_type.shape[0] < GEMM_MIN_ROWS:
        return None
    return matmul(x, Constant(np.ascontiguousarray(weight.data.T), name=weight.name))


def alter_op_layout(f: Function, rules: FusionRules | None = None) -> Function:
    """``f`` with constant dense and conv2d weights transformed for their kernels (see the module doc)."""
    def alter(node: Expr, original: Expr) -> Expr | None:
        if not isinstance(node, Call) or isinstance(node.op, Function):
            return None
        if node.op_name == "nn.dense":
            return _dense_as_gemm(node)
        return None

    return f.with_body(rewrite(f.body, alter))
