"""Converters of the ATen ops that tile, reverse, rotate, pad, gather or accumulate along axes of any rank:
``repeat`` (``Tensor.repeat``, ``tile``: a reshape, ``broadcast_to`` and reshape), ``flip`` (slices with
step -1), ``roll`` (two slices joined), ``pad`` (``F.pad`` in every mode: ``constant`` as ``nn.pad`` after
cropping negative widths, ``reflect``/``replicate``/``circular`` as ``take`` by constant indices along each
padded axis; :mod:`.decompose` keeps it whole), ``index_select`` (slices when the index is a constant run or
rotation, ``take`` otherwise), ``fmod.Scalar`` of a constant (what ``roll`` decomposes to:
``index_select`` by ``(arange + shift) % n``, folded here at import) and ``cumsum`` (``nn.cumsum``).

Each converter takes an :class:`~.call.AtenCall` and returns a graph expression.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.interpret import evaluate_constant, is_constant_expr
from tesched.graph.ir import Constant, Expr


def repeat(call: AtenCall) -> Expr:
    """``self`` tiled ``repeats[k]`` times along axis ``k`` (extra leading repeats add axes)."""
    x, repeats = call.tensor("self"), [int(r) for r in call["repeats"]]
    shape = (1,) * (len(repeats) - x.tensor_type.ndim) + x.tensor_type.shape
    interleaved = [d for size in shape for d in (1, size)]
    tiled = [d for r, size in zip(repeats, shape) for d in (r, size)]
    out = G.broadcast_to(G.reshape(x, interleaved), tiled)
    return G.reshape(out, call.out.shape)


def _reversed(x: Expr, axes: Sequence[int]) -> Expr:
    shape = x.tensor_type.shape
    last = max(axes) + 1
    begin = [shape[a] - 1 if a in axes else 0 for a in range(last)]
    end = [-shape[a] - 1 if a in axes else shape[a] for a in range(last)]
    return G.strided_slice(x, begin, end, [-1 if a in axes else 1 for a in range(last)])


def flip(call: AtenCall) -> Expr:
    """``self`` reversed along ``dims``."""
    x = call.tensor("self")
    axes = sorted({int(d) % x.tensor_type.ndim for d in call["dims"]})
    return _reversed(x, axes) if axes else x


def _rotated(x: Expr, axis: int, shift: int) -> Expr:
    """``x`` rolled by ``shift`` along ``axis``: element ``i`` moves to ``(i + shift) % n``."""
    shape = x.tensor_type.shape
    cut = (-shift) % shape[axis]
    if cut == 0:
        return x
    lead, ends = [0] * axis, list(shape[:axis])
    tail = G.strided_slice(x, lead + [cut], ends + [shape[axis]])
    head = G.strided_slice(x, lead + [0], ends + [cut])
    return G.concatenate([tail, head], axis=axis)


def roll(call: AtenCall) -> Expr:
    """``torch.roll``: each of ``dims`` rotated by its shift; without ``dims``, the flattened tensor."""
    x = call.tensor("self")
    shifts, dims = [int(s) for s in call["shifts"]], [int(d) for d in call["dims"]]
    if not dims:
        flat = _rotated(G.reshape(x, (-1,)), 0, shifts[0])
        return G.reshape(flat, x.tensor_type.shape)
    for shift, dim in zip(shifts, dims):
        x = _rotated(x, dim % x.tensor_type.ndim, shift)
    return x


_NUMPY_MODES: dict[str, Literal["reflect", "edge", "wrap"]] = {"reflect": "reflect", "replicate": "edge",
                                                               "circular": "wrap"}


def padded(x: Expr, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Expr:
    """``x`` padded by ``pad`` (``(before, after)`` pairs from the last axis backwards, as ``F.pad``); a
    negative width crops (constant mode)."""
    shape = x.tensor_type.shape
    widths = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):
        widths[len(shape) - 1 - k] = (int(pad[2 * k]), int(pad[2 * k + 1]))
    if mode == "constant":
        if any(w < 0 for pair in widths for w in pair):
            ends = [d - max(0, -hi) for d, (_, hi) in zip(shape, widths)]
            x = G.strided_slice(x, [max(0, -lo) for lo, _ in widths], ends)
            widths = [(max(0, lo), max(0, hi)) for lo, hi in widths]
        return G.nn.pad(x, widths, pad_value=value) if any(lo or hi for lo, hi in widths) else x
    if mode not in _NUMPY_MODES:
        raise ValueError(f"padding mode {mode!r} (constant, reflect, replicate or circular)")
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            if min(lo, hi) < 0:
                raise ValueError(f"negative {mode} padding {(lo, hi)}")
            index = np.pad(np.arange(shape[axis]), (lo, hi), mode=_NUMPY_MODES[mode])
            x = G.take(x, Constant(index.astype(np.int64)), axis=axis)
    return x


def pad(call: AtenCall) -> Expr:
    """``F.pad`` in any mode (``value`` for the constant mode)."""
    value = call["value"]
    return padded(call.tensor("self"), call["pad"], str(call["mode"]), 0.0 if value is None else float(value))


def constant_value(expr: Expr) -> np.ndarray | None:
    """The value of an expression without inputs (a factory op and arithmetic on it), else ``None``."""
    if isinstance(expr, Constant):
        return expr.data
    return evaluate_constant(expr).data if is_constant_expr(expr) else None


def fmod(call: AtenCall) -> Expr:
    """C's ``fmod`` by a number, of a value known at import (index arithmetic, as ``roll`` decomposes to)."""
    value = constant_value(call.tensor("self"))
    if value is None:
        raise call.unsupported("fmod of a computed tensor (only constant index arithmetic is folded)",
                               "x - y * torch.trunc(x / y) on the computed tensor")
    return Constant(np.fmod(value, call["other"]).astype(call.out.dtype))


def index_select(call: AtenCall) -> Expr:
    """``self`` gathered along ``dim`` at 1-D ``index``: a slice or a rotation when the index is a
    constant run (``roll``'s), ``take`` otherwise (indices outside the axis are clipped)."""
    x, index = call.tensor("self"), call.tensor("index")
    axis = int(call["dim"]) % max(1, x.tensor_type.ndim)
    size = x.tensor_type.shape[axis] if x.tensor_type.ndim else 1
    value = constant_value(index)
    if value is not None and value.ndim == 1 and x.tensor_type.ndim:
        start = int(value[0]) % size
        if value.size == size and np.array_equal(value % size, (np.arange(size) + start) % size):
            return _rotated(x, axis, -start)
        if np.array_equal(value, np.arange(start, start + value.size)) and start + value.size <= size:
            shape = x.tensor_type.shape
            return G.strided_slice(x, [0] * axis + [start], list(shape[:axis]) + [start + value.size])
    return G.take(x, index, axis=axis) if x.tensor_type.ndim else G.reshape(x, call.out.shape)


def cumsum(call: AtenCall) -> Expr:
    """The running sum along ``dim``, in the output's dtype."""
    x = call.tensor("self")
    return G.cumsum(x, int(call["dim"]) % max(1, x.tensor_type.ndim), call.out.dtype)
