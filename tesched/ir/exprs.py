"""The expressions and buffers of the loop IR: :class:`Buffer` (with its :class:`BufferScope`), reads
(:class:`Load`, :class:`VLoad`, :class:`VLoadStrided`, :class:`VLoadMasked`, :class:`VGather`,
:class:`CheckedIndex`),
vector values (:class:`Ramp`, :class:`Broadcast`, :class:`HReduce`, :class:`Lane`, :class:`VCast`),
:class:`Address`, the IR's own variables (:class:`LoopVar`, :class:`OriginVar`, :class:`RegisterVar`,
:class:`ReduceInput`) and the flattened
index of an element in a buffer. Statements are :mod:`.stmts`; :mod:`.nodes` gathers both.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Sequence

from tesched.te.expr import BinOp, Binary, Const, Expr, Var


class BufferScope(StrEnum):
    """Where a buffer's memory comes from: a kernel argument (``arg``), a whole intermediate tensor
    allocated once (``global``), or a ``compute_at`` region (``local``: ``shape`` is the region's box and
    index ``i`` of the tensor lives at ``i - offsets`` in the buffer, or, along a dimension in ``folds``
    (a circular buffer, from ``store_at``), at ``i`` modulo the fold)."""

    ARG = "arg"
    GLOBAL = "global"
    LOCAL = "local"


class Buffer:
    """Memory for one tensor, with its :class:`BufferScope`."""

    def __init__(self, name: str, shape: Sequence[int | Expr], dtype: str, scope: BufferScope,
                 offsets: Sequence[Expr] | None = None, folds: dict[int, int] | None = None,
                 aligns: dict[int, tuple[int, int]] | None = None, order: Sequence[int] | None = None):
        self.name, self.shape, self.dtype, self.scope = name, list(shape), dtype, scope
        self.offsets: list[Expr] = list(offsets) if offsets is not None else [Const(0, "int64")] * len(shape)
        self.folds: dict[int, int] = dict(folds or {})     # dimension -> slices kept (index modulo it)
        self.aligns: dict[int, tuple[int, int]] = dict(aligns or {})  # dimension -> (factor, offset) of its stride
        # the dimensions from the outermost in memory to the innermost (``reorder_storage``); None: in order
        self.order: tuple[int, ...] | None = tuple(order) if order is not None else None

    def relocated(self, offsets: Sequence[Expr]) -> "Buffer":
        """The same buffer (name, shape, scope, layout) with other origins."""
        return Buffer(self.name, self.shape, self.dtype, self.scope, offsets, self.folds, self.aligns, self.order)

    @property
    def row_major(self) -> bool:
        """Whether the strides are the dense row-major ones of the shape (no ``storage_align`` padding and
        no ``reorder_storage``)."""
        return not self.aligns and self.order is None

    def memory_order(self) -> tuple[int, ...]:
        """The dimensions from the outermost in memory to the innermost."""
        return self.order if self.order is not None else tuple(range(len(self.shape)))

    def strides(self) -> list[int]:
        """Elements between neighbours along each dimension of a buffer with constant shape: dense in
        :meth:`memory_order` (row-major by default), except that the stride of an aligned dimension
        (``storage_align``) is raised to the next value congruent to its offset modulo its factor (TVM's rule)."""
        sizes = self.constant_shape()
        assert sizes is not None, f"strides of {self.name}: its shape is not constant"
        out, stride = [1] * len(sizes), 1
        for d in reversed(self.memory_order()):
            if d in self.aligns:
                factor, offset = self.aligns[d]
                stride += (offset - stride) % factor
            out[d] = stride
            stride *= sizes[d]
        return out

    def element_count(self) -> int | None:
        """Elements to allocate (padding of aligned strides included), or None for a symbolic shape."""
        sizes = self.constant_shape()
        if sizes is None:
            return None
        if not sizes:
            return 1
        outermost = self.memory_order()[0]
        return self.strides()[outermost] * sizes[outermost]

    def constant_shape(self) -> list[int] | None:
        """The shape when every extent is a constant, else None."""
        sizes = [d for d in self.shape if isinstance(d, int)]
        return sizes if len(sizes) == len(self.shape) else None

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.shape}, {self.dtype}, {self.scope})"


class Load(Expr):
    """Read ``buffer[indices]``: indices are tensor coordinates (local offsets are applied in C), or one
    element offset from the buffer's start for a buffer of several dimensions (:func:`is_flat`)."""

    __slots__ = ("buffer", "indices")

    def __init__(self, buffer: Buffer, indices: Sequence[Expr]):
        self.buffer, self.indices, self.dtype = buffer, tuple(indices), buffer.dtype

    def children(self):
        return self.indices

    def with_children(self, children):
        return Load(self.buffer, children)


class CheckedIndex(Expr):
    """An index the lowering could not prove inside ``[0, extent)`` (it depends on data, or is not affine):
    the kernel compares it with ``extent`` when it runs; outside, it records ``message`` as its failure
    (the caller raises :class:`~tesched.errors.BoundsError` with it) and reads index 0 instead."""

    __slots__ = ("value", "extent", "message")

    def __init__(self, value: Expr, extent: int | Expr, message: str):
        self.value, self.extent, self.message = value, extent, message
        self.dtype = value.dtype

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return CheckedIndex(children[0], self.extent, self.message)


class _LanesOf(Expr):
    """A vector of ``lanes`` elements of ``buffer`` read at ``index``: what ``index`` means is the
    subclass's (never matched itself: passes match :class:`VLoad` or :class:`VGather`)."""

    __slots__ = ("buffer", "index", "lanes")

    def __init__(self, buffer: Buffer, index: Expr, lanes: int):
        self.buffer, self.index, self.lanes = buffer, index, lanes
        self.dtype = vector_dtype(buffer.dtype, lanes)

    def children(self):
        return (self.index,)

    def with_children(self, children):
        return type(self)(self.buffer, children[0], self.lanes)


class VLoad(_LanesOf):
    """``lanes`` consecutive elements of ``buffer`` starting at flat element offset ``index``."""

    __slots__ = ()


class VLoadStrided(Expr):
    """``lanes`` elements of ``buffer`` ``stride`` elements apart, starting at flat offset ``index`` (a
    transposed read); ``stride`` is an expression, so it may be a symbolic size."""

    __slots__ = ("buffer", "index", "stride", "lanes")

    def __init__(self, buffer: Buffer, index: Expr, stride: Expr, lanes: int):
        self.buffer, self.index, self.stride, self.lanes = buffer, index, stride, lanes
        self.dtype = vector_dtype(buffer.dtype, lanes)

    def children(self):
        return (self.index, self.stride)

    def with_children(self, children):
        return VLoadStrided(self.buffer, children[0], children[1], self.lanes)


class VLoadMasked(Expr):
    """``lanes`` consecutive elements of ``buffer`` from flat offset ``index``, read only in the lanes where
    ``mask`` (an integer vector of the elements' size, -1 or 0 per lane) is set; the others are 0."""

    __slots__ = ("buffer", "index", "mask", "lanes")

    def __init__(self, buffer: Buffer, index: Expr, mask: Expr, lanes: int):
        self.buffer, self.index, self.mask, self.lanes = buffer, index, mask, lanes
        self.dtype = vector_dtype(buffer.dtype, lanes)

    def children(self):
        return (self.index, self.mask)

    def with_children(self, children):
        return VLoadMasked(self.buffer, children[0], children[1], self.lanes)


class VGather(_LanesOf):
    """``lanes`` elements of ``buffer``, each at its own flat element offset: ``index`` is an ``int32``
    vector of ``lanes`` offsets (a lookup at computed indices, in a vectorized loop)."""

    __slots__ = ()


class Ramp(Expr):
    """``base, base + 1, ..., base + lanes - 1``: the vector form of a loop variable used as a value."""

    __slots__ = ("base", "lanes")

    def __init__(self, base: Expr, lanes: int):
        self.base, self.lanes = base, lanes
        self.dtype = vector_dtype(base.dtype, lanes)

    def children(self):
        return (self.base,)

    def with_children(self, children):
        return Ramp(children[0], self.lanes)


class Broadcast(Expr):
    """A scalar repeated in every lane."""

    __slots__ = ("value", "lanes")

    def __init__(self, value: Expr, lanes: int):
        self.value, self.lanes = value, lanes
        self.dtype = vector_dtype(value.dtype, lanes)

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return Broadcast(children[0], self.lanes)


class HReduce(Expr):
    """Combine the lanes of a vector into one scalar with ``op`` (add, mul, max or min)."""

    __slots__ = ("op", "value")

    def __init__(self, op: str, value: Expr):
        self.op, self.value = op, value
        self.dtype = split_dtype(value.dtype)[0]

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return HReduce(self.op, children[0])


class Lane(Expr):
    """Lane ``index`` (a constant) of a vector, as a scalar."""

    __slots__ = ("value", "index")

    def __init__(self, value: Expr, index: int):
        base, lanes = split_dtype(value.dtype)
        if not 0 <= index < lanes:
            raise ValueError(f"lane {index} of a vector of {lanes} lanes")
        self.value, self.index, self.dtype = value, index, base

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return Lane(children[0], self.index)


class VCast(Expr):
    """Lane-wise conversion of a vector to another element type of the same size."""

    __slots__ = ("value",)

    def __init__(self, dtype: str, value: Expr):
        self.dtype, self.value = dtype, value

    def children(self):
        return (self.value,)

    def with_children(self, children):
        return VCast(self.dtype, children[0])


def vector_dtype(scalar: str, lanes: int) -> str:
    """``float32x16`` for 16 lanes of float32."""
    return f"{scalar}x{lanes}"


def split_dtype(dtype: str) -> tuple[str, int]:
    """``("float32", 16)`` for ``float32x16``; scalars have one lane."""
    base, sep, lanes = dtype.rpartition("x")
    return (base, int(lanes)) if sep and lanes.isdigit() else (dtype, 1)


class LoopVar(Var):
    """The variable of one generated loop; ``name`` is the user's axis name (e.g. ``i.outer``)."""

    __slots__ = ()

    def __init__(self, name: str):
        super().__init__(name, "int64")


class OriginVar(Var):
    """The origin of a local buffer in one dimension, when it must be computed at run time."""

    __slots__ = ()

    def __init__(self, name: str):
        super().__init__(name, "int64")


class Address(Expr):
    """The address of ``buffer[indices]`` (tensor coordinates), passed to an intrinsic."""

    __slots__ = ("buffer", "indices")

    def __init__(self, buffer: Buffer, indices: Sequence[Expr]):
        self.buffer, self.indices, self.dtype = buffer, tuple(indices), "handle"

    def children(self):
        return self.indices

    def with_children(self, children):
        return Address(self.buffer, children)


class ReduceInput(Var):
    """The value one iteration of a tuple reduction's update combines into ``buffer`` (its component),
    bound by a ``let`` before the combination reads it: the combination is then an expression of the
    accumulators and these variables only, which the vectorizer reuses to combine partial results."""

    __slots__ = ("buffer",)

    def __init__(self, name: str, dtype: str, buffer: Buffer):
        super().__init__(name, dtype)
        self.buffer = buffer


class RegisterVar(Var):
    """A variable holding a promoted buffer slot; its dtype may be a vector (``float32x16``)."""

    __slots__ = ()

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype


def is_flat(buf: Buffer, indices: Sequence[Expr]) -> bool:
    """Whether ``indices`` is one element offset into ``buf`` rather than tensor coordinates: a single
    index into a buffer of several dimensions (see :mod:`tesched.transform.flatten_indices`)."""
    return len(indices) == 1 and len(buf.shape) > 1


def flat_index(buf: Buffer, indices: Sequence[Expr]) -> Expr:
    """Element offset of tensor coordinates ``indices`` in ``buf``: row-major (or in the buffer's
    :meth:`~Buffer.memory_order`), its origin subtracted, or the index taken modulo the fold along a folded
    dimension; aligned strides from ``storage_align``. An access that already is an element offset
    (:func:`is_flat`) gives it unchanged."""
    if is_flat(buf, indices):
        return indices[0]
    total: Expr | None = None
    stride: Expr | int = 1
    aligned = buf.strides() if buf.aligns else None
    for k in reversed(buf.memory_order()):
        if aligned is not None:
            stride = aligned[k]
        idx = indices[k]
        off = buf.offsets[k]
        if k in buf.folds:
            idx = Binary(BinOp.FLOORMOD, idx, Const(buf.folds[k], "int64"), "int64")
        elif not (isinstance(off, Const) and off.value == 0):
            idx = Binary(BinOp.SUB, idx, off, "int64")
        if not (isinstance(stride, int) and stride == 1):
            idx = Binary(BinOp.MUL, idx, stride if isinstance(stride, Expr) else Const(stride, "int64"), "int64")
        total = idx if total is None else Binary(BinOp.ADD, idx, total, "int64")
        dim = buf.shape[k]
        if isinstance(stride, int) and isinstance(dim, int):
            stride = stride * dim
        else:
            s_expr = stride if isinstance(stride, Expr) else Const(stride, "int64")
            d_expr = dim if isinstance(dim, Expr) else Const(dim, "int64")
            stride = Binary(BinOp.MUL, s_expr, d_expr, "int64")
    return total if total is not None else Const(0, "int64")
