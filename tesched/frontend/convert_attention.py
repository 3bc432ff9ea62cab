"""Converters of batched matrix products: ``aten.bmm`` (what ``torch.matmul`` of 3-D and higher operands,
``q @ k.transpose(-2, -1)`` and a Linear over a 3-D tensor with a batched weight decompose to) becomes
``nn.batch_matmul``. Attention and its fused kernels are not converted here yet."""
from __future__ import annotations

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.ir import Expr


def bmm(call: AtenCall) -> Expr:
    """``self @ mat2`` per batch, both 3-D with equal batches."""
    return G.nn.batch_matmul(call.tensor("self"), call.tensor("mat2"))
