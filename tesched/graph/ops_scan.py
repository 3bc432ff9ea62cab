"""The running-sum graph op ``cumsum`` (see :mod:`tesched.nn.cumsum`) and its builder."""
from __future__ import annotations

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.pattern import Pattern

_CUMSUM = register_op("cumsum", Pattern.COMM_REDUCE,
                      lambda args, attrs: nn.cumsum(args[0], attrs["axis"], attrs["dtype"]),
                      lambda args, attrs: np.cumsum(args[0], axis=attrs["axis"], dtype=np.dtype(attrs["dtype"] or
                                                                                                  args[0].dtype)), 1)


def cumsum(data: Expr, axis: int, dtype: str | None = None) -> Call:
    """The running sum of ``data`` along ``axis``, in ``dtype`` (default: ``data``'s)."""
    return Call(_CUMSUM, [data], {"axis": int(axis), "dtype": dtype})
