"""``simplify_inference``: ``nn.batch_norm`` whose statistics and affine parameters are constants becomes
``add(multiply(x, scale), shift)`` with per-channel constants ``scale = gamma / sqrt(var + epsilon)`` and
``shift = beta - mean * scale`` shaped to broadcast along the batch-norm axis. A batch norm with any
non-constant parameter is left as it is.
"""
from __future__ import annotations

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.op import get_op
from tesched.graph.ops_elemwise import add, bias_channel_shape, multiply
from tesched.graph.visit import rewrite
from tesched.nn.shape import normalize_axis


def _expand(node: Expr, original: Expr) -> Expr | None:
    if not (isinstance(node, Call) and node.op is get_op("nn.batch_norm")):
        return None
    statistics = [a for a in node.args[1:] if isinstance(a, Constant)]
    if len(statistics) != len(node.args) - 1:
        return None
    x = node.args[0]
    gamma, beta, mean, var = (a.data.astype(np.float64) for a in statistics)
    ty = x.tensor_type
    shape = bias_channel_shape(ty.ndim, normalize_axis(node.attrs["axis"], ty.ndim, "nn.batch_norm"))
    scale = gamma / np.sqrt(var + node.attrs["epsilon"])
    shift = beta - mean * scale
    return add(multiply(x, Constant(scale.reshape(shape).astype(ty.dtype))),
               Constant(shift.reshape(shape).astype(ty.dtype)))


def simplify_inference(f: Function) -> Function:
    """Expand inference batch norms with constant parameters into a multiply and an add."""
    return f.with_body(rewrite(f.body, _expand))
