"""The ``annotation.stop_fusion`` op (Relay's name): an identity that keeps its argument's producer and its
consumers in different fused groups. ``fuse_ops`` honours it and removes it; the executor treats any
that remain as an alias of their argument.
"""
from __future__ import annotations

from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern

STOP_FUSION = register_op("annotation.stop_fusion", Pattern.OPAQUE,
                          lambda args, attrs: args[0],
                          lambda args, attrs: args[0], 1)


def stop_fusion(data: Expr) -> Call:
    """``data`` itself, with a fusion boundary after its producer."""
    return Call(STOP_FUSION, [data])
