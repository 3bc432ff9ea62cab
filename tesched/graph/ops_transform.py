"""Injective graph ops and their builders: ``nn.pad``, ``reshape``, ``transpose``, ``concatenate``,
``strided_slice``, ``split`` (a tuple of ``strided_slice`` calls, so each piece fuses on its own),
``broadcast_to`` and ``take`` (a gather by integer indices; out-of-range indices are clipped).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

import tesched.nn as nn
from tesched.graph.ir import Call, Expr, Tuple
from tesched.graph.op import register_op
from tesched.graph.types import Dim
from tesched.nn.pattern import Pattern
from tesched.nn.shape import normalize_axis
from tesched.nn.transform import split_bounds

Attrs = Mapping[str, Any]


def _pad_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    return np.pad(args[0], attrs["pad_width"], constant_values=attrs["pad_value"])


_PAD = register_op("nn.pad", Pattern.INJECTIVE,
                   lambda args, attrs: nn.pad(args[0], attrs["pad_width"], attrs["pad_value"]), _pad_eval, 1)


def pad(data: Expr, pad_width: Sequence[Sequence[int]], pad_value: float = 0.0) -> Call:
    """``data`` padded with ``pad_width[k] = (before, after)`` elements of ``pad_value`` on axis ``k``."""
    widths = tuple(tuple(int(v) for v in w) for w in pad_width)
    return Call(_PAD, [data], {"pad_width": widths, "pad_value": float(pad_value)})


def _reshape_array(array: np.ndarray, newshape: Sequence[int | Dim]) -> np.ndarray:
    """``array`` reshaped; a dynamic dimension of ``newshape`` is inferred (the one ``-1``)."""
    return array.reshape([-1 if isinstance(d, Dim) else d for d in newshape])


_RESHAPE = register_op("reshape", Pattern.INJECTIVE, lambda args, attrs: nn.reshape(args[0], attrs["newshape"]),
                       lambda args, attrs: _reshape_array(args[0], attrs["newshape"]), 1)


def reshape(data: Expr, newshape: Sequence[int | Dim]) -> Call:
    """The same elements in row-major order with shape ``newshape`` (one entry may be -1; a dynamic
    dimension of ``data`` must appear in it unchanged)."""
    return Call(_RESHAPE, [data], {"newshape": tuple(d if isinstance(d, Dim) else int(d) for d in newshape)})


_TRANSPOSE = register_op("transpose", Pattern.INJECTIVE,
                         lambda args, attrs: nn.transpose(args[0], attrs["axes"]),
                         lambda args, attrs: np.ascontiguousarray(np.transpose(args[0], attrs["axes"])), 1)


def transpose(data: Expr, axes: Sequence[int] | None = None) -> Call:
    """Axes permuted: output axis ``k`` is input axis ``axes[k]`` (default: reversed)."""
    return Call(_TRANSPOSE, [data], {"axes": None if axes is None else tuple(int(a) for a in axes)})


_CONCATENATE = register_op("concatenate", Pattern.INJECTIVE,
                           lambda args, attrs: nn.concatenate(args, attrs["axis"]),
                           lambda args, attrs: np.concatenate(args, axis=attrs["axis"]), None)


def concatenate(data: Sequence[Expr], axis: int = 0) -> Call:
    """The tensors of ``data`` joined along ``axis``."""
    return Call(_CONCATENATE, list(data), {"axis": int(axis)})


def _slices(attrs: Attrs) -> tuple[slice, ...]:
    return tuple(slice(b, None if isinstance(e, Dim) else e, s)
                 for b, e, s in zip(attrs["begin"], attrs["end"], attrs["strides"]))


_STRIDED_SLICE = register_op("strided_slice", Pattern.INJECTIVE,
                             lambda args, attrs: nn.strided_slice(args[0], attrs["begin"], attrs["end"],
                                                                  attrs["strides"]),
                             lambda args, attrs: np.ascontiguousarray(args[0][_slices(attrs)]), 1)


def strided_slice(data: Expr, begin: Sequence[int], end: Sequence[int | Dim],
                  strides: Sequence[int] | None = None) -> Call:
    """``data[begin[0]:end[0]:strides[0], ...]`` (Python slice semantics). An axis of dynamic size is
    taken whole: begin 0, stride 1 and its dim as the end."""
    strides = [1] * len(begin) if strides is None else strides
    return Call(_STRIDED_SLICE, [data], {"begin": tuple(int(v) for v in begin),
                                         "end": tuple(v if isinstance(v, Dim) else int(v) for v in end),
                                         "strides": tuple(int(v) for v in strides)})


def split(data: Expr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Tuple:
    """NumPy's ``split`` as a tuple of ``strided_slice`` calls."""
    shape = data.tensor_type.shape
    axis = normalize_axis(axis, len(shape), "split")
    lead = [0] * axis
    return Tuple([strided_slice(data, lead + [lo], list(shape[:axis]) + [hi])
                  for lo, hi in split_bounds(shape[axis], indices_or_sections)])


_BROADCAST_TO = register_op("broadcast_to", Pattern.INJECTIVE,
                            lambda args, attrs: nn.broadcast_to(args[0], attrs["shape"]),
                            lambda args, attrs: np.ascontiguousarray(np.broadcast_to(args[0], attrs["shape"])), 1)


def broadcast_to(data: Expr, shape: Sequence[int | Dim]) -> Call:
    """``data`` broadcast to ``shape`` (NumPy's rules; an entry may be a dynamic dimension)."""
    return Call(_BROADCAST_TO, [data], {"shape": tuple(d if isinstance(d, Dim) else int(d) for d in shape)})


def _take_eval(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices = args
    return np.take(data, indices, axis=attrs["axis"], mode="clip")


_TAKE = register_op("take", Pattern.INJECTIVE, lambda args, attrs: nn.take(args[0], args[1], attrs["axis"]),
                    _take_eval, 2)


def take(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """Elements of ``data`` along ``axis`` at the integer ``indices`` (clipped to the axis), NumPy's
    ``take``: an embedding lookup is ``take(weight, ids)``."""
    return Call(_TAKE, [data, indices], {"axis": int(axis)})
