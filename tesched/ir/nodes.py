"""The loop IR that ``lower()`` returns, and its printer.

Statements: :class:`For` (with its kind: serial, parallel, vectorized, unrolled), :class:`IfThenElse`,
:class:`Block`, :class:`Store`, :class:`Allocate` (a buffer local to its body), :class:`Assign` (to a
local scalar, used for buffer offsets), :class:`LetStmt`, and :class:`Produce` (marks where a stage is
computed). Expressions are those of :mod:`tesched.te.expr` plus :class:`Load` from a :class:`Buffer`.

The printer shows one ``produce <stage>`` block per stage where it is computed, every loop with its
name, bounds and kind, and allocations with their extents. This module knows nothing of isl or C.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Sequence

from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Expr, Var
from tesched.te.printer import expr_str
from tesched.te.visit import rewrite


class BufferScope(StrEnum):
    """Where a buffer's memory comes from: a kernel argument (``arg``), a whole intermediate tensor
    allocated once (``global``), or a ``compute_at`` region (``local``: ``shape`` is the region's box and
    index ``i`` of the tensor lives at ``i - offsets`` in the buffer)."""

    ARG = "arg"
    GLOBAL = "global"
    LOCAL = "local"


class Buffer:
    """Memory for one tensor, with its :class:`BufferScope`."""

    def __init__(self, name: str, shape: Sequence[int | Expr], dtype: str, scope: BufferScope,
                 offsets: Sequence[Expr] | None = None):
        self.name, self.shape, self.dtype, self.scope = name, list(shape), dtype, scope
        self.offsets: list[Expr] = list(offsets) if offsets is not None else [Const(0, "int64")] * len(shape)

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
    """Combine the lanes of a vector into one scalar with ``op`` (add, max or min)."""

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


class Stmt:
    def __str__(self) -> str:
        return IRPrinter().stmt(self)


@dataclass(eq=False)
class For(Stmt):
    var: LoopVar
    begin: Expr
    end: Expr                  # exclusive upper bound
    kind: LoopKind
    body: Stmt
    step: int = 1
    extent_hint: int | None = None   # the loop's largest trip count when known (unroll factor)
    reduction: bool = False          # iterations accumulate into the same elements (a reduce loop)
    stage: str = ""                  # the stage whose loop this is


@dataclass(eq=False)
class IfThenElse(Stmt):
    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple
    value: Expr


@dataclass(eq=False)
class VStore(Stmt):
    """Store a vector at flat element offset ``index`` of ``buffer``."""

    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(eq=False)
class IntrinsicCall(Stmt):
    """A call of a tensor intrinsic's C function (``intrin`` carries its source)."""

    function: str
    args: list
    intrin: object


@dataclass(eq=False)
class Registers(Stmt):
    """Scalar or vector variables (promoted from a small local buffer) declared for ``body``."""

    variables: list
    body: Stmt


@dataclass(eq=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(eq=False)
class Assign(Stmt):
    var: Var
    value: Expr


@dataclass(eq=False)
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False)
class Produce(Stmt):
    stage: str
    body: Stmt


def flat_index(buf: Buffer, indices: Sequence[Expr]) -> Expr:
    """Row-major element offset of tensor coordinates ``indices`` in ``buf`` (its origin subtracted)."""
    total: Expr | None = None
    stride: Expr | int = 1
    for k in reversed(range(len(indices))):
        idx = indices[k]
        off = buf.offsets[k]
        if not (isinstance(off, Const) and off.value == 0):
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


def map_stmt(stmt: Stmt, on_expr, on_stmt=None) -> Stmt:
    """Rebuild ``stmt`` with ``on_expr`` applied to every expression; ``on_stmt(s)`` may replace a
    statement first (return None to recurse normally)."""
    def go(s: Stmt) -> Stmt:
        if on_stmt is not None:
            out = on_stmt(s)
            if out is not None:
                return out
        if isinstance(s, Block):
            return Block([go(c) for c in s.stmts])
        if isinstance(s, For):
            return For(s.var, on_expr(s.begin), on_expr(s.end), s.kind, go(s.body), s.step, s.extent_hint,
                       s.reduction, s.stage)
        if isinstance(s, IfThenElse):
            return IfThenElse(on_expr(s.cond), go(s.then_case), None if s.else_case is None else go(s.else_case))
        if isinstance(s, Store):
            return Store(s.buffer, tuple(on_expr(i) for i in s.indices), on_expr(s.value))
        if isinstance(s, VStore):
            return VStore(s.buffer, on_expr(s.index), on_expr(s.value))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, go(s.body))
        if isinstance(s, Registers):
            return Registers(s.variables, go(s.body))
        if isinstance(s, IntrinsicCall):
            return IntrinsicCall(s.function, [on_expr(a) for a in s.args], s.intrin)
        if isinstance(s, Assign):
            return Assign(s.var, on_expr(s.value))
        if isinstance(s, LetStmt):
            return LetStmt(s.var, on_expr(s.value), go(s.body))
        if isinstance(s, Produce):
            return Produce(s.stage, go(s.body))
        raise TypeError(f"unknown statement {type(s).__name__}")
    return go(stmt)


def rebind_buffer(stmt: Stmt, old: Buffer, new: Buffer) -> Stmt:
    """``stmt`` with every access to ``old`` made to ``new``."""

    def on_expr(e: Expr) -> Expr:
        def swap(n: Expr):
            if isinstance(n, (Load, VLoad, Address)) and n.buffer is old:
                kids = [rewrite(c, swap) for c in n.children()]
                if isinstance(n, Load):
                    return Load(new, kids)
                if isinstance(n, VLoad):
                    return VLoad(new, kids[0], n.lanes)
                return Address(new, kids)
            return None
        return rewrite(e, swap)

    def on_stmt(s: Stmt):
        if isinstance(s, Store) and s.buffer is old:
            return Store(new, tuple(on_expr(i) for i in s.indices), on_expr(s.value))
        if isinstance(s, VStore) and s.buffer is old:
            return VStore(new, on_expr(s.index), on_expr(s.value))
        return None
    return map_stmt(stmt, on_expr, on_stmt)


def seq(stmts: Sequence[Stmt]) -> Stmt:
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Block) else [s])
    return flat[0] if len(flat) == 1 else Block(flat)


class IRPrinter:
    """Pseudo-code for the loop IR. Loop variables that share a name get a numeric suffix."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.buffers: dict[int, str] = {}
        self.buffer_names: set[str] = set()

    def buffer(self, b: object) -> str:
        """A buffer's name; two buffers (or tensors) of the same name print as ``name`` and ``name#2``."""
        key = id(b)
        if key not in self.buffers:
            base, k, name = b.name, 1, b.name  # type: ignore[attr-defined]
            while name in self.buffer_names:
                k += 1
                name = f"{base}#{k}"
            self.buffer_names.add(name)
            self.buffers[key] = name
        return self.buffers[key]

    def name_of(self, v: Var) -> str:
        key = id(v)
        if key not in self.names:
            base, k, name = v.name, 1, v.name
            if isinstance(v, LoopVar):
                while name in self.used:
                    k += 1
                    name = f"{base}#{k}"
                self.used.add(name)
            self.names[key] = name
        return self.names[key]

    def expr(self, e: Expr) -> str:
        return expr_str(e, self.name_of, self.buffer)

    def stmt(self, s: Stmt, indent: int = 0) -> str:
        pad = "  " * indent
        if isinstance(s, Block):
            return "".join(self.stmt(c, indent) for c in s.stmts)
        if isinstance(s, For):
            kind = "" if s.kind is LoopKind.SERIAL else f"{s.kind} "
            step = "" if s.step == 1 else f" step {s.step}"
            head = (f"{pad}{kind}for {self.name_of(s.var)} in [{self.expr(s.begin)}, {self.expr(s.end)})"
                    f"{step} {{\n")
            return head + self.stmt(s.body, indent + 1) + f"{pad}}}\n"
        if isinstance(s, IfThenElse):
            out = f"{pad}if ({self.expr(s.cond)}) {{\n" + self.stmt(s.then_case, indent + 1)
            if s.else_case is not None:
                out += f"{pad}}} else {{\n" + self.stmt(s.else_case, indent + 1)
            return out + f"{pad}}}\n"
        if isinstance(s, Store):
            idx = ", ".join(self.expr(i) for i in s.indices)
            return f"{pad}{self.buffer(s.buffer)}[{idx}] = {self.expr(s.value)}\n"
        if isinstance(s, Allocate):
            b = s.buffer
            dims = " * ".join(self.expr(d) if isinstance(d, Expr) else str(d) for d in b.shape)
            origin = ", ".join(self.expr(o) for o in b.offsets)
            head = f"{pad}allocate {self.buffer(b)}[{b.dtype} * {dims}]"
            if b.scope is BufferScope.LOCAL:
                head += f"  // region of {self.buffer(b)} starting at [{origin}]"
            return head + "\n" + self.stmt(s.body, indent)
        if isinstance(s, Assign):
            return f"{pad}{self.name_of(s.var)} = {self.expr(s.value)}\n"
        if isinstance(s, VStore):
            lanes = split_dtype(s.value.dtype)[1]
            return f"{pad}{self.buffer(s.buffer)}[ramp({self.expr(s.index)}, {lanes})] = {self.expr(s.value)}\n"
        if isinstance(s, IntrinsicCall):
            return f"{pad}call {s.function}({', '.join(self.expr(a) for a in s.args)})\n"
        if isinstance(s, Registers):
            names = ", ".join(f"{self.name_of(v)}: {v.dtype}" for v in s.variables)
            return f"{pad}registers {names}\n" + self.stmt(s.body, indent)
        if isinstance(s, LetStmt):
            return f"{pad}let {self.name_of(s.var)} = {self.expr(s.value)}\n" + self.stmt(s.body, indent)
        if isinstance(s, Produce):
            return f"{pad}produce {s.stage} {{\n" + self.stmt(s.body, indent + 1) + f"{pad}}}\n"
        raise TypeError(f"unknown statement {type(s).__name__}")
