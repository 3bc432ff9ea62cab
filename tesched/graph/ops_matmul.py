"""The batched matrix product graph op ``nn.batch_matmul`` (3-D operands, equal batches) and its builder;
broadcasting and other ranks are reshapes around it, made by the caller."""
from __future__ import annotations

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern

_BATCH_MATMUL = register_op(
    "nn.batch_matmul", Pattern.OUT_ELEMWISE_FUSABLE, lambda args, attrs: nn.batch_matmul(args[0], args[1]),
    lambda args, attrs: np.matmul(args[0].astype(np.float64), args[1].astype(np.float64)).astype(args[0].dtype), 2)


def batch_matmul(a: Expr, b: Expr) -> Call:
    """``a @ b`` per batch for ``a`` of shape ``(N, M, K)`` and ``b`` of shape ``(N, K, P)``."""
    return Call(_BATCH_MATMUL, [a, b])
