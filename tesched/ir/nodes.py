"""The nodes of the loop IR that ``lower()`` returns.

Statements: :class:`For` (with its :class:`~tesched.schedule.kinds.LoopKind`), :class:`IfThenElse`,
:class:`Block`, :class:`Store`/:class:`VStore`, :class:`Allocate` (a buffer local to its body),
:class:`Assign` (to a local scalar: buffer origins, promoted registers), :class:`LetStmt`,
:class:`Registers`, :class:`IntrinsicCall`, :class:`Produce` (marks where a stage is computed) and
:class:`Timer` (profiling instrumentation).
Expressions are those of :mod:`tesched.te.expr` plus :class:`Load`/:class:`VLoad` from a :class:`Buffer`,
:class:`VLoadStrided`, :class:`VLoadMasked`, :class:`Ramp`, :class:`Broadcast`, :class:`HReduce`, :class:`VCast`,
:class:`Address` and :class:`CheckedIndex` (a data-dependent index checked against its tensor's extent when
the kernel runs).

A statement's children are its fields that hold expressions, statements or sequences of them, except
the variables it declares (``binds``); :mod:`.visitor` walks and rebuilds statements from that alone, so
a new node is one dataclass here plus one method in the printer (:mod:`.printer`) and the C generator.
This module knows nothing of isl or C.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, ClassVar, Sequence

from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Expr, Var
from tesched.te.intrinsic import TensorIntrin


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
                 aligns: dict[int, tuple[int, int]] | None = None):
        self.name, self.shape, self.dtype, self.scope = name, list(shape), dtype, scope
        self.offsets: list[Expr] = list(offsets) if offsets is not None else [Const(0, "int64")] * len(shape)
        self.folds: dict[int, int] = dict(folds or {})     # dimension -> slices kept (index modulo it)
        self.aligns: dict[int, tuple[int, int]] = dict(aligns or {})  # dimension -> (factor, offset) of its stride

    def strides(self) -> list[int]:
        """Elements between neighbours along each dimension of a buffer with constant shape: row-major,
        except that the stride of an aligned dimension (``storage_align``) is raised to the next value
        congruent to its offset modulo its factor (TVM's rule)."""
        sizes = self.constant_shape()
        assert sizes is not None, f"strides of {self.name}: its shape is not constant"
        out, stride = [1] * len(sizes), 1
        for d in reversed(range(len(sizes))):
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
        return self.strides()[0] * sizes[0] if sizes else 1

    def constant_shape(self) -> list[int] | None:
        """The shape when every extent is a constant, else None."""
        sizes = [d for d in self.shape if isinstance(d, int)]
        return sizes if len(sizes) == len(self.shape) else None

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.shape}, {self.dtype}, {self.scope})"


class Load(Expr):
    """Read ``buffer[indices]`` (indices are tensor coordinates; local offsets are applied in C)."""

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


class VLoad(Expr):
    """``lanes`` consecutive elements of ``buffer`` starting at flat element offset ``index``."""

    __slots__ = ("buffer", "index", "lanes")

    def __init__(self, buffer: Buffer, index: Expr, lanes: int):
        self.buffer, self.index, self.lanes = buffer, index, lanes
        self.dtype = vector_dtype(buffer.dtype, lanes)

    def children(self):
        return (self.index,)

    def with_children(self, children):
        return VLoad(self.buffer, children[0], self.lanes)


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


class RegisterVar(Var):
    """A variable holding a promoted buffer slot; its dtype may be a vector (``float32x16``)."""

    __slots__ = ()

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype


_format: Callable[["Stmt"], str] | None = None


def set_formatter(format_stmt: Callable[["Stmt"], str]) -> None:
    """Install the text ``str()`` gives a statement (:mod:`.printer` does, when imported)."""
    global _format
    _format = format_stmt


class Stmt:
    """Base class of statements."""

    binds: ClassVar[tuple[str, ...]] = ()   # fields naming variables the statement declares (not children)

    def __str__(self) -> str:
        return _format(self) if _format is not None else type(self).__name__


@dataclass(eq=False)
class For(Stmt):
    """``for var in [begin, end) step step: body``."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: LoopVar
    begin: Expr
    end: Expr                  # exclusive upper bound
    kind: LoopKind
    body: Stmt
    step: int = 1
    extent_hint: int | None = None   # the loop's largest trip count when known (unroll factor)
    reduction: bool = False          # iterations accumulate into the same elements (a reduce loop)
    stage: str = ""                  # the stage whose loop this is
    origin: str = ""                 # the schedule primitive that made its variable (``split(i, factor=32)``)
    pragmas: tuple[tuple[str, bool | int], ...] = ()   # C loop hints (``Stage.pragma``): name, value


@dataclass(eq=False)
class IfThenElse(Stmt):
    """``if cond: then_case else: else_case``."""

    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(eq=False)
class Block(Stmt):
    """Statements in order."""

    stmts: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class Store(Stmt):
    """``buffer[indices] = value`` (tensor coordinates). ``atomic``: ``value`` is ``buffer[indices] + x``,
    done as one atomic addition (a scatter whose updates run on several threads)."""

    buffer: Buffer
    indices: tuple
    value: Expr
    atomic: bool = False


@dataclass(eq=False)
class VStore(Stmt):
    """Store a vector at flat element offset ``index`` of ``buffer``."""

    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(eq=False)
class Prefetch(Stmt):
    """A hint to bring the cache line holding ``address`` in for reading (``__builtin_prefetch``)."""

    address: Address


@dataclass(eq=False)
class IntrinsicCall(Stmt):
    """A call of a tensor intrinsic's C function (``intrin`` carries its source)."""

    function: str
    args: list[Expr]
    intrin: TensorIntrin


@dataclass(eq=False)
class Registers(Stmt):
    """Scalar or vector variables (promoted from a small local buffer) declared for ``body``."""

    binds: ClassVar[tuple[str, ...]] = ("variables",)
    variables: list["RegisterVar"]
    body: Stmt


@dataclass(eq=False)
class Allocate(Stmt):
    """``buffer`` exists inside ``body``."""

    buffer: Buffer
    body: Stmt


@dataclass(eq=False)
class Assign(Stmt):
    """``var = value`` for a variable declared by an enclosing statement."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: Var
    value: Expr


@dataclass(eq=False)
class LetStmt(Stmt):
    """``var`` bound to ``value`` (computed once) inside ``body``."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False)
class Timer(Stmt):
    """Time ``body`` into profile counter ``slot`` (``build(..., profile=True)``). ``label`` names what is
    timed; ``parallel`` tells that it runs inside a parallel loop, so its time is summed over threads."""

    slot: int
    label: str
    body: Stmt
    parallel: bool = False


@dataclass(eq=False)
class Produce(Stmt):
    """The computation of stage ``stage`` (a marker for readers of the IR)."""

    stage: str
    body: Stmt


def flat_index(buf: Buffer, indices: Sequence[Expr]) -> Expr:
    """Row-major element offset of tensor coordinates ``indices`` in ``buf`` (its origin subtracted, or
    the index taken modulo the fold along a folded dimension; aligned strides from ``storage_align``)."""
    total: Expr | None = None
    stride: Expr | int = 1
    aligned = buf.strides() if buf.aligns else None
    for k in reversed(range(len(indices))):
        if aligned is not None:
            stride = aligned[k]
        idx = indices[k]
        off = buf.offsets[k]
        if k in buf.folds:
            idx = Binary("floormod", idx, Const(buf.folds[k], "int64"), "int64")
        elif not (isinstance(off, Const) and off.value == 0):
            idx = Binary("sub", idx, off, "int64")
        if not (isinstance(stride, int) and stride == 1):
            idx = Binary("mul", idx, stride if isinstance(stride, Expr) else Const(stride, "int64"), "int64")
        total = idx if total is None else Binary("add", idx, total, "int64")
        dim = buf.shape[k]
        if isinstance(stride, int) and isinstance(dim, int):
            stride = stride * dim
        else:
            s_expr = stride if isinstance(stride, Expr) else Const(stride, "int64")
            d_expr = dim if isinstance(dim, Expr) else Const(dim, "int64")
            stride = Binary("mul", s_expr, d_expr, "int64")
    return total if total is not None else Const(0, "int64")


def seq(stmts: Sequence[Stmt]) -> Stmt:
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Block) else [s])
    return flat[0] if len(flat) == 1 else Block(flat)
