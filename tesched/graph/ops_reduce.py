"""Reduction graph ops (``comm_reduce``) and their builders: ``sum``, ``mean``, ``max`` over ``axis``
(``None``: all axes) with NumPy's ``keepdims``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern

Axes = int | Sequence[int] | None


def _reduce_op(name: str, declare: Callable, evaluate: Callable) -> Callable[..., Call]:
    op = register_op(name, Pattern.COMM_REDUCE,
                     lambda args, attrs: declare(args[0], attrs["axis"], attrs["keepdims"]),
                     lambda args, attrs: np.asarray(evaluate(args[0].astype(np.float64), axis=attrs["axis"],
                                                             keepdims=attrs["keepdims"])).astype(args[0].dtype), 1)

    def build(data: Expr, axis: Axes = None, keepdims: bool = False) -> Call:
        axes = None if axis is None else (int(axis) if isinstance(axis, int) else tuple(int(a) for a in axis))
        return Call(op, [data], {"axis": axes, "keepdims": bool(keepdims)})

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``{name}`` over ``axis`` (all axes when None), NumPy's ``keepdims``."
    return build


sum = _reduce_op("sum", nn.sum, np.sum)  # noqa: A001 - Relay's name
mean = _reduce_op("mean", nn.mean, np.mean)
max = _reduce_op("max", nn.max, np.max)  # noqa: A001 - Relay's name
