"""``fold_scale_axis``: ``multiply(P, S)`` where the constant ``S`` scales each output channel (axis 1) of
``P`` by one value, and ``P`` is ``nn.conv2d`` or ``nn.dense``, optionally followed by ``nn.bias_add`` or
an ``add`` of a constant, becomes ``P`` with its weight rows (and its bias or added constant) scaled.

Each op on the way must feed only the next one, and nothing folds across any other op: in
conv -> relu -> batch norm the scale stays after the relu. New weights are folded to constants when the
weights were constants.
"""
from __future__ import annotations

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_elemwise import add, bias_add, multiply
from tesched.graph.passes.fold_constant import fold
from tesched.graph.types import TensorType
from tesched.graph.visit import rewrite, use_counts
from tesched.nn.shape import normalize_axis

ANCHORS = ("nn.conv2d", "nn.dense")
CHANNEL_AXIS = 1


def channel_scale(scale: Constant, out: TensorType) -> np.ndarray | None:
    """The per-channel factors when ``scale`` multiplies each channel of ``out`` by one value without
    broadcasting ``out`` to a larger shape; ``None`` otherwise."""
    s = scale.data
    if out.ndim <= CHANNEL_AXIS or s.ndim > out.ndim:
        return None
    full = s.reshape((1,) * (out.ndim - s.ndim) + s.shape)
    channels = out.extents[CHANNEL_AXIS]
    if not isinstance(channels, int):
        return None                 # a dynamic axis is no channel axis
    if any(d != 1 and (k != CHANNEL_AXIS or d != channels) for k, d in enumerate(full.shape)):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,))


class _Folder:
    def __init__(self, body: Expr):
        self.counts = use_counts(body)

    def scaled(self, new: Expr, old: Expr, factors: np.ndarray, scale: Constant) -> Expr | None:
        """``new * scale`` with the scale folded into ``new``'s producer chain, or ``None``."""
        if self.counts.get(id(old), 0) != 1 or not isinstance(new, Call) or isinstance(new.op, Function):
            return None
        dtype = new.tensor_type.dtype
        if new.op_name in ANCHORS:
            weight = new.args[1]
            rows = Constant(factors.reshape((-1,) + (1,) * (weight.tensor_type.ndim - 1)).astype(dtype))
            return Call(new.op, [new.args[0], fold(multiply(weight, rows))], new.attrs)
        if new.op_name == "nn.bias_add" and isinstance(new.args[1], Constant) and \
                normalize_axis(new.attrs["axis"], new.tensor_type.ndim, "nn.bias_add") == CHANNEL_AXIS:
            inner = self.scaled(new.args[0], old.children()[0], factors, scale)
            return None if inner is None else bias_add(inner, fold(multiply(new.args[1], Constant(factors.astype(dtype)))),
                                                       new.attrs["axis"])
        if new.op_name == "add":
            for side in (0, 1):
                other = new.args[1 - side]
                if isinstance(other, Constant) and new.args[side].checked_type == new.checked_type:
                    inner = self.scaled(new.args[side], old.children()[side], factors, scale)
                    if inner is not None:
                        return add(inner, fold(multiply(other, scale)))
        return None

    def __call__(self, node: Expr, original: Expr) -> Expr | None:
        if not (isinstance(node, Call) and not isinstance(node.op, Function) and node.op_name == "multiply"):
            return None
        for side in (0, 1):
            scale = node.args[1 - side]
            if isinstance(scale, Constant):
                factors = channel_scale(scale, node.args[side].tensor_type)
                if factors is not None:
                    out = self.scaled(node.args[side], original.children()[side], factors, scale)
                    if out is not None:
                        return out
        return None


def fold_scale_axis(f: Function) -> Function:
    """Fold per-channel constant scales into the conv2d/dense weights that produce the channels."""
    return f.with_body(rewrite(f.body, _Folder(f.body)))
