"""Converters of the ATen ops that move, copy or create data: the view family (``view``, ``reshape``,
``squeeze``, ``unsqueeze``, ``flatten``: a ``reshape`` to the shape PyTorch inferred), ``permute`` and
``transpose``, ``expand``, ``cat``, ``split``/``split_with_sizes``/``unbind``, ``slice`` and ``select``,
``constant_pad_nd``, the identities (``clone``, ``alias``, ``contiguous``, ``lift_fresh_copy``,
inference ``dropout``), trace-time checks (``_assert_tensor_metadata``) and the constant factories
(``full``, ``zeros``, ``ones``, ``arange``, ``scalar_tensor``, the ``*_like`` forms), which become graph
constants.

Each converter takes an :class:`~.call.AtenCall` and returns a graph expression, or a tuple of them.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.frontend.convert_rearrange import padded
from tesched.graph.ir import Constant, Expr


def reshape_to_output(call: AtenCall) -> Expr:
    """The input with the output's shape (the same elements in row-major order)."""
    x = call.tensor("self")
    return x if x.tensor_type.extents == call.out.extents else G.reshape(x, call.out.extents)


def identity(call: AtenCall) -> Expr:
    """The input itself (a copy, an alias, or a cast to its own dtype)."""
    x = call.tensor("self") if "self" in call.args else call.tensor("input")
    if call.out.dtype != x.tensor_type.dtype:
        raise call.unsupported(f"a conversion from {x.tensor_type.dtype} to {call.out.dtype}",
                               "a model computing in one dtype (float32)")
    return x


def no_value(call: AtenCall) -> None:
    """An op computing nothing the graph needs (``_assert_tensor_metadata``: a check made at trace time)."""


def dropout(call: AtenCall) -> Expr:
    """Inference dropout: the input."""
    if call["train"]:
        raise call.unsupported("dropout in training mode", "model.eval() before importing")
    return call.tensor("input")


def permute(call: AtenCall) -> Expr:
    """``transpose`` by ``dims`` (the input itself for the identity permutation)."""
    x = call.tensor("self")
    dims = [int(d) % x.tensor_type.ndim for d in call["dims"]]
    return x if dims == list(range(len(dims))) else G.transpose(x, dims)


def transpose(call: AtenCall) -> Expr:
    """Axes ``dim0`` and ``dim1`` swapped."""
    x = call.tensor("self")
    ndim = x.tensor_type.ndim
    a, b = int(call["dim0"]) % ndim, int(call["dim1"]) % ndim
    if a == b:
        return x
    axes = list(range(ndim))
    axes[a], axes[b] = b, a
    return G.transpose(x, axes)


def expand(call: AtenCall) -> Expr:
    """``broadcast_to`` the output's shape."""
    x = call.tensor("self")
    return x if x.tensor_type.extents == call.out.extents else G.broadcast_to(x, call.out.extents)


def cat(call: AtenCall) -> Expr:
    """``concatenate`` along ``dim`` (one tensor: itself)."""
    tensors = [t for t in call["tensors"] if isinstance(t, Expr)]
    if len(tensors) != len(call["tensors"]):
        raise call.unsupported("a non-tensor in the list", "a list of tensors")
    if len(tensors) == 1:
        return tensors[0]
    return G.concatenate(tensors, axis=int(call["dim"]) % tensors[0].tensor_type.ndim)


def _static_size(call: AtenCall, x: Expr, axis: int) -> int:
    """The size of ``x`` along ``axis``; a dynamic one is refused naming the op and the dimension."""
    size = x.tensor_type.extents[axis]
    if not isinstance(size, int):
        raise call.unsupported(f"dimension {axis} is the dynamic dimension {size.name!r}, which this op cannot "
                               "cut", "a static size along that axis")
    return size


def _pieces(x: Expr, axis: int, sizes: Sequence[int]) -> tuple[Expr, ...]:
    shape = x.tensor_type.extents
    starts = np.cumsum([0] + list(sizes))
    return tuple(x if len(sizes) == 1 else
                 G.strided_slice(x, [0] * axis + [int(lo)], list(shape[:axis]) + [int(hi)])
                 for lo, hi in itertools.pairwise(starts))


def split_with_sizes(call: AtenCall) -> tuple[Expr, ...]:
    """Pieces of ``split_sizes`` along ``dim``."""
    x = call.tensor("self")
    return _pieces(x, int(call["dim"]) % x.tensor_type.ndim, [int(s) for s in call["split_sizes"]])


def split(call: AtenCall) -> tuple[Expr, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last one may be shorter)."""
    x = call.tensor("self")
    axis = int(call["dim"]) % x.tensor_type.ndim
    size, step = _static_size(call, x, axis), int(call["split_size"])
    return _pieces(x, axis, [min(step, size - start) for start in range(0, size, step)])


def unbind(call: AtenCall) -> tuple[Expr, ...]:
    """Each index along ``dim``, with that axis removed."""
    x = call.tensor("self")
    axis = int(call["dim"]) % x.tensor_type.ndim
    shape = x.tensor_type.extents
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(G.reshape(piece, rest) for piece in _pieces(x, axis, [1] * _static_size(call, x, axis)))


def slice_(call: AtenCall) -> Expr:
    """``self[..., start:end:step]`` along ``dim`` (an absent or huge bound means the end)."""
    x = call.tensor("self")
    shape = x.tensor_type.extents
    axis = int(call["dim"]) % len(shape)
    if call.out.extents == shape:
        return x
    size = _static_size(call, x, axis)
    start, end, step = call["start"], call["end"], int(call["step"])
    begin, stop = 0 if start is None else int(start), size if end is None else min(int(end), size)
    return G.strided_slice(x, [0] * axis + [begin], list(shape[:axis]) + [stop], [1] * axis + [step])


def select(call: AtenCall) -> Expr:
    """``self[..., index]`` along ``dim``: a slice of one, then that axis removed."""
    x = call.tensor("self")
    shape = x.tensor_type.extents
    axis = int(call["dim"]) % len(shape)
    index = int(call["index"]) % _static_size(call, x, axis)
    piece = G.strided_slice(x, [0] * axis + [index], list(shape[:axis]) + [index + 1])
    return G.reshape(piece, call.out.extents)


def constant_pad_nd(call: AtenCall) -> Expr:
    """Padding with a constant; ``pad`` lists (before, after) from the last axis backwards (a negative
    width crops)."""
    return padded(call.tensor("self"), call["pad"], "constant", float(call["value"]))


def constant_like_output(fill: float | None = None):
    """The converter of a factory op: a constant of the output's type filled with ``fill`` (``None``: the
    op's ``fill_value``)."""
    def convert(call: AtenCall) -> Expr:
        value = call["fill_value"] if fill is None else fill
        if isinstance(value, Expr):
            raise call.unsupported("a tensor fill value", "a number fill value")
        if call.out.is_dynamic:         # the fill broadcast to the dynamic shape (no constant of it exists)
            return G.broadcast_to(Constant(np.full((), value, dtype=call.out.dtype)), call.out.extents)
        return Constant(np.full(call.out.shape, value, dtype=call.out.dtype))
    return convert


def scalar_tensor(call: AtenCall) -> Expr:
    """A 0-d constant of value ``s``."""
    return Constant(np.array(call["s"], dtype=call.out.dtype))


def arange(call: AtenCall) -> Expr:
    """The constant ``arange(start, end, step)`` in the output's dtype."""
    start, end, step = call.args.get("start", 0), call["end"], call.args.get("step", 1)
    return Constant(np.arange(start, end, step, dtype=call.out.dtype))
