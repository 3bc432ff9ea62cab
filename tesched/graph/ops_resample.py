"""The resampling graph op ``nn.upsample`` (nearest, nearest-exact or (bi/tri)linear over the axes after the
first two, with PyTorch's ``F.interpolate`` conventions; see :mod:`tesched.nn.resize`) and its builder. It is
injective, so it fuses with the reshapes, concatenations and elementwise ops around it.
"""
from __future__ import annotations

from collections.abc import Sequence

import tesched.nn as nn
from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern
from tesched.nn.resize import upsample_reference

_UPSAMPLE = register_op(
    "nn.upsample", Pattern.INJECTIVE,
    lambda args, attrs: nn.upsample(args[0], attrs["size"], attrs["scales"], attrs["method"], attrs["align_corners"]),
    lambda args, attrs: upsample_reference(args[0], attrs["size"], attrs["scales"], attrs["method"],
                                           attrs["align_corners"]), 1)


def upsample(data: Expr, size: Sequence[int], scales: Sequence[float | None] | None = None, method: str = "nearest",
             align_corners: bool = False) -> Call:
    """``data`` (``(N, C, *spatial)``) resampled to spatial ``size`` by ``method`` (``"nearest"``,
    ``"nearest_exact"`` or ``"linear"``); ``scales`` are the scale factors the caller gave, which set
    PyTorch's sampling step (see :func:`tesched.nn.upsample`)."""
    spatial = len(tuple(size))
    factors = (None,) * spatial if scales is None else tuple(None if s is None else float(s) for s in scales)
    return Call(_UPSAMPLE, [data], {"size": tuple(int(s) for s in size), "scales": factors, "method": str(method),
                                    "align_corners": bool(align_corners)})
