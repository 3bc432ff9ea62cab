"""The graph op ``nn.winograd_conv2d``: a 3x3 stride-1 convolution by Winograd's F(m x m, 3 x 3), on weights
already transformed (see :mod:`tesched.nn.winograd`). Its result is the convolution's NCHW output tile by
tile, ``(N, K, H/m, m, W/m, m)``, the same memory as ``(N, K, H, W)``: ``alter_op_layout`` puts it in
place of a ``nn.conv2d`` followed by a ``reshape`` to the NCHW shape, which costs nothing (a view).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from tesched.graph.ir import Call, Constant, Expr
from tesched.graph.op import register_op
from tesched.nn import winograd
from tesched.nn.pattern import Pattern
from tesched.nn.shape import padding4


def _evaluate(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    data, transformed = args
    return winograd.reference(data, transformed, transformed.shape[0] - 2, attrs["padding"]).astype(data.dtype)


_WINOGRAD = register_op("nn.winograd_conv2d", Pattern.OUT_ELEMWISE_FUSABLE,
                        lambda args, attrs: winograd.winograd_conv2d(args[0], args[1], padding=attrs["padding"]),
                        _evaluate, 2)


def winograd_conv2d(data: Expr, weight: np.ndarray, m: int, padding: int | Sequence[int] = 1) -> Call:
    """The convolution of ``data`` by OIHW 3x3 ``weight`` (a NumPy array, transformed here) with tiles of
    ``m`` x ``m``, as a ``(N, K, H/m, m, W/m, m)`` tensor."""
    return Call(_WINOGRAD, [data, Constant(winograd.transform_weight(weight, m))],
                {"padding": padding4(padding, "nn.winograd_conv2d padding")})
