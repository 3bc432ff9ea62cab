"""Which indices the kernel checks when it runs: those the lowering could not prove inside their tensor.

The bounds check (:mod:`.bounds`) proves the affine dimensions of every read with isl. A dimension read at
a data-dependent index (``A[I[i]]``, a lookup table at a computed value), at a non-affine one, or kept
inside only by a data-dependent condition, is left in ``model.unproven``. Before such a read becomes a
load (the ``index checks`` pass, :func:`checked_bodies`), :func:`checked_body` tries once more with interval
arithmetic (``clamp(x, 0, 255)``, a ``uint8`` value, ``x % 16``, an axis's range, a float clamped then
scaled and converted, ``int32(clamp(v, 0.0, 1.0) * 10.0 + 0.5)``, an integer read from a plain compute
stage, by that stage's body (a bin computed once), all bound an index without isl; such a float-derived
index is still clamped, for NaN), and wraps what remains unproven in an
:class:`~tesched.ir.nodes.CheckedIndex`: the kernel compares it with the extent and, outside, reports the
read (tensor, stage, index, dimension, shape), which the caller raises as
:class:`~tesched.errors.BoundsError`. This module changes no loop and knows nothing of C.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np

from tesched.ir.nodes import CheckedIndex
from tesched.poly import intervals
from tesched.poly.model import PolyModel, StageModel
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Select, Var
from tesched.te.tensor import ComputeOp, IterVar, TensorRead
from tesched.te.visit import collect, rewrite

Interval = tuple[int, int]


class Checked(NamedTuple):
    """A stage's value and the element a scatter or update definition writes (None for others), each with
    its unproven indices checked."""

    body: Expr
    target: Expr | None


StageBodies = Mapping[int, Checked]
"""The checked value of every stage of a model, by ``id`` of its :class:`~tesched.poly.model.StageModel`."""


def index_range(e: Expr) -> Interval | None:
    """Lowest and highest value ``e`` can take (integer expressions), or None when unknown.

    Parameters
    ----------
    e : Expr
        An integer expression (constants, axes with constant ranges, tensor reads, casts, ``+ - *``,
        ``min``/``max``, ``//``/``%`` by a positive constant, ``if_then_else``).

    Returns
    -------
    tuple of int, or None
    """
    if not dt.is_int(e.dtype) or e.dtype == "bool":
        return None
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, IterVar) and e.dom is not None and isinstance(e.dom.min, int) \
            and isinstance(e.dom.extent, int):
        return e.dom.min, e.dom.min + e.dom.extent - 1
    if isinstance(e, TensorRead):
        body = _stage_value(e)
        inner = index_range(body) if body is not None else None
        return inner if inner is not None else _dtype_range(e.dtype)
    if isinstance(e, Var):
        return None
    if isinstance(e, Cast) and dt.is_float(e.value.dtype):
        return _float_cast_range(e)
    if isinstance(e, Cast):
        inner = index_range(e.value) if dt.is_int(e.value.dtype) else None
        low, high = _dtype_range(e.dtype)
        return inner if inner is not None and low <= inner[0] and inner[1] <= high else (low, high)
    if isinstance(e, Select):
        a, b = index_range(e.true_value), index_range(e.false_value)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, Binary):
        return _binary_range(e)
    return None


def _stage_value(read: TensorRead) -> Expr | None:
    """The value of every element ``read`` can load: the body of the integer stage it reads (a plain
    compute without reduction: each element is its body at a point of its axes, whatever the schedule),
    else None."""
    op = read.tensor.op
    if type(op) is ComputeOp and not op.reduce_axis and dt.is_int(read.dtype):     # not a scatter's or scan's
        return op.bodies[read.tensor.value_index]
    return None


def _float_converted(e: Expr) -> bool:
    """Whether ``e`` converts a float to an integer, itself or in the integer stages it reads (through
    which :func:`index_range` bounded it): a NaN there converts to an undefined integer."""
    if any(dt.is_float(c.value.dtype) for c in collect(e, Cast)):
        return True
    return any(body is not None and _float_converted(body) for body in map(_stage_value, collect(e, TensorRead)))


def _float_cast_range(e: Cast) -> Interval:
    """The range of a floating value converted to an integer: interval arithmetic through the float
    expression (``clamp``, scaling, rounding, with rounding errors), loops at their ranges; outside the
    type, the type's range."""
    leaves: dict[int, intervals.Span] = {}
    for v in collect(e.value, IterVar):
        if v.dom is not None and isinstance(v.dom.min, int) and isinstance(v.dom.extent, int):
            leaves[id(v)] = (np.array(float(v.dom.min)), np.array(float(v.dom.min + v.dom.extent - 1)))
    lo, hi = intervals.span(e, leaves)
    return int(lo), int(hi)


def _dtype_range(dtype: str) -> Interval:
    low, high = dt.value_range(dtype)
    return int(low), int(high)


def _binary_range(e: Binary) -> Interval | None:
    b = index_range(e.b)
    if e.op in (BinOp.FLOORDIV, BinOp.FLOORMOD) and b is not None and b[0] == b[1] and b[0] > 0:
        if e.op == BinOp.FLOORMOD:
            return 0, b[0] - 1
        a = index_range(e.a)
        return None if a is None else (a[0] // b[0], a[1] // b[0])
    a = index_range(e.a)
    if a is None or b is None:
        return None
    if e.op == BinOp.ADD:
        out = (a[0] + b[0], a[1] + b[1])
    elif e.op == BinOp.SUB:
        out = (a[0] - b[1], a[1] - b[0])
    elif e.op == BinOp.MUL:
        products = [x * y for x in a for y in b]
        out = (min(products), max(products))
    elif e.op == BinOp.MIN:
        out = (min(a[0], b[0]), min(a[1], b[1]))
    elif e.op == BinOp.MAX:
        out = (max(a[0], b[0]), max(a[1], b[1]))
    else:
        return None
    low, high = dt.value_range(e.dtype)
    return out if low <= out[0] and out[1] <= high else None   # C wraps: the interval would lie


def checked_body(model: PolyModel, sm: StageModel, body: Expr) -> Expr:
    """``body`` with every unproven index of its reads wrapped in a :class:`CheckedIndex`."""
    def visit(e: Expr) -> Expr | None:
        if not isinstance(e, TensorRead):
            return None
        dims = model.unproven.get(id(e), frozenset())
        indices = []
        for k, index in enumerate(e.indices):
            index = rewrite(index, visit)
            extent = e.tensor.shape[k]
            span = index_range(index)
            proven = span is not None and isinstance(extent, int) and 0 <= span[0] and span[1] < extent
            if k in dims and not proven:
                index = CheckedIndex(index, extent, _message(sm, e, k))
            elif k in dims and _float_converted(index):
                index = _nan_safe(index, extent)
            indices.append(index)
        return TensorRead(e.tensor, tuple(indices))

    return rewrite(body, visit) if model.unproven else body


def checked_bodies(model: PolyModel) -> dict[int, Checked]:
    """Every stage's :func:`checked_body` (and its written element's), once per lowering."""
    return {id(sm): Checked(checked_body(model, sm, sm.body),
                            None if sm.target is None else checked_body(model, sm, sm.target))
            for sm in model.stages}


def _nan_safe(index: Expr, extent: int) -> Expr:
    """``index``, proved in ``[0, extent)`` for every number its float part can hold, clamped there anyway:
    a NaN converted to an integer is undefined in C (x86 gives the type's minimum), so a NaN pixel reads
    an edge element instead of memory outside the tensor. Two integer operations, no branch: the loop
    still vectorizes."""
    low, high = Const(0, index.dtype), Const(extent - 1, index.dtype)
    return Binary(BinOp.MIN, Binary(BinOp.MAX, index, low, index.dtype), high, index.dtype)


def _message(sm: StageModel, read: TensorRead, dim: int) -> str:
    tensor = read.tensor
    text = ", ".join(repr(i) for i in read.indices)
    shape = ", ".join(repr(d) for d in tensor.shape) + ("," if tensor.ndim == 1 else "")
    verb = "writes" if read is sm.target else "reads"     # a scatter's update writes where it reads
    return (f"{tensor.name} is accessed out of bounds by stage {sm.name}: {tensor.name}[{text}] {verb} "
            f"dimension {dim} at a data-dependent index outside [0, {tensor.shape[dim]!r}); {tensor.name} has "
            f"shape ({shape}). Clamp the index (ts.clamp) or fix the index data")
