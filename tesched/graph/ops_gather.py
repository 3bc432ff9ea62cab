"""The graph op ``gather`` (PyTorch's ``torch.gather``, NumPy's ``take_along_axis``, clipped indices) and its
builder; the declaration is :func:`tesched.nn.gather.gather`. ``take`` (an embedding lookup,
``index_select``) is in :mod:`.ops_transform`."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.gather import gather as declare_gather
from tesched.nn.pattern import Pattern


def _gather_eval(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    data, indices = args
    axis = attrs["axis"] % data.ndim
    window = tuple(slice(0, n) if a != axis else slice(None) for a, n in enumerate(indices.shape))
    return np.take_along_axis(data[window], np.clip(indices, 0, data.shape[axis] - 1), axis=axis)


_GATHER = register_op("gather", Pattern.INJECTIVE,
                      lambda args, attrs: declare_gather(args[0], args[1], attrs["axis"]), _gather_eval, 2)


def gather(data: Expr, indices: Expr, axis: int) -> Call:
    """``data`` read along ``axis`` at the integer ``indices`` (same rank; the output has their shape)."""
    return Call(_GATHER, [data, indices], {"axis": int(axis)})
