"""Promote small local buffers to scalar or vector variables, so gcc keeps them in registers.

A ``compute_at`` buffer of constant size (a register tile made with ``cache_write``, say) qualifies when,
after unrolling, every access to it is at a constant offset: each distinct (offset, lanes) slot becomes
one variable, and a single element only read inside a vector slot (the partial results of ``rfactor``
lanes, combined after them) is a lane of that vector's variable when it is the buffer's only vector
read that way. Small serial loops whose iterations address different parts of the buffer (the copy-out
loop of a register tile, typically) are unrolled to get there. Buffers accessed inside a parallel loop
of their own scope are left in memory (threads would share them). A masked vector read (padding inside
a vectorized loop) becomes a lane-wise select of its variable and zeros when some store writes exactly
its slot (so the variable holds every lane it reads); otherwise the buffer stays in memory.

Promotion is bounded by the target's register file (:class:`RegisterBudget`): each variable takes one
register (a vector wider than the target's, several), and a buffer whose variables would take more
registers than the target has stays an array, as does one of more bytes than the register file holds
(checked first, before any unrolling). Portable C counts :data:`~tesched.tiling.PORTABLE_REGISTERS` scalar
registers, GPU targets the registers of one thread. :func:`promote_with_report` also says, per buffer
of constant size, whether it was promoted or kept in memory for its size (:class:`Promotion`); buffers
kept in memory for their accesses (offsets known only at run time, an address passed on) are not listed.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from tesched.arith.linear import constant_difference, constant_value, simplify
from tesched.ir import nodes as ir
from tesched.ir.visitor import map_stmt
from tesched.ir.kinds import LoopKind
from tesched.target import Target, current_target
from tesched.te import dtype as dt
from tesched.te.expr import Const, Expr, Select, Var
from tesched.te.visit import rewrite, walk
from tesched.tiling import PORTABLE_REGISTERS
from tesched.transform.unroll import unroll_copies

MAX_AUTO_UNROLL = 16
PORTABLE_REGISTER_BYTES = 8
"""Bytes of one scalar register of portable C (an element of any dtype up to float64 and int64)."""
GPU_THREAD_REGISTERS = 255
"""32-bit registers one GPU thread may use (CUDA's limit; OpenCL devices are alike)."""


@dataclass(frozen=True)
class RegisterBudget:
    """The registers promoted variables may take: ``registers`` of ``register_bytes`` each, on the target
    named ``target``."""

    registers: int
    register_bytes: int
    target: str = ""

    @classmethod
    def of(cls, target: Target) -> "RegisterBudget":
        """The register file of ``target``: its SIMD registers (16 or 32 on x86-64), the scalar registers
        assumed for portable C, or a GPU thread's registers."""
        if target.backend != "c":
            return cls(GPU_THREAD_REGISTERS, 4, target.name)
        if target.vector_registers:
            return cls(target.vector_registers, target.vector_bytes, target.name)
        return cls(PORTABLE_REGISTERS, PORTABLE_REGISTER_BYTES, target.name)

    @property
    def bytes(self) -> int:
        return self.registers * self.register_bytes

    def registers_for(self, nbytes: int) -> int:
        """Registers one variable of ``nbytes`` takes."""
        return max(1, math.ceil(nbytes / self.register_bytes))

    def __str__(self) -> str:
        return f"{self.registers} registers of {self.register_bytes} B"


@dataclass(frozen=True)
class Promotion:
    """What promotion did with one local buffer of constant size: ``promoted`` to variables taking
    ``registers`` registers, or kept in memory because it needs ``registers`` (at least, when
    ``over_bytes``: its bytes exceed the whole register file) and the target has fewer."""

    buffer: str
    elements: int
    dtype: str
    registers: int
    budget: RegisterBudget
    promoted: bool
    over_bytes: bool = False

    @property
    def nbytes(self) -> int:
        return self.elements * dt.itemsize(self.dtype)

    def __str__(self) -> str:
        what, on = f"{self.buffer} ({self.elements} x {self.dtype}, {self.nbytes} B)", self.budget.target
        if self.promoted:
            return f"{what}: promoted to registers on {on} ({self.registers} of its {self.budget})"
        if self.over_bytes:
            return (f"{what}: kept in memory on {on}, larger than its register file ({self.budget}: "
                    f"{self.budget.bytes} B)")
        return (f"{what}: kept in memory on {on}, its variables would take {self.registers} registers of the "
                f"{self.budget.registers} it has")


Access = ir.Load | ir.VLoad | ir.VLoadMasked | ir.VGather | ir.Address | ir.Store | ir.VStore
_READS = (ir.Load, ir.VLoad, ir.VLoadMasked, ir.VGather, ir.Address)
_VECTOR = (ir.VLoad, ir.VLoadMasked, ir.VStore)


def _accesses(stmt: ir.Stmt, buf: ir.Buffer) -> list[Access]:
    found: list[Access] = []

    def on_expr(e: Expr) -> Expr:
        for n in walk(e):
            if isinstance(n, _READS) and n.buffer is buf:
                found.append(n)
        return e

    def on_stmt(s: ir.Stmt):
        if isinstance(s, (ir.Store, ir.VStore)) and s.buffer is buf:
            found.append(s)
        return None

    map_stmt(stmt, on_expr, on_stmt)
    return found


def _slot(access, buf: ir.Buffer) -> tuple[int, int] | None:
    if isinstance(access, (ir.Address, ir.VGather)):   # its address escapes (to an intrinsic), or each lane
        return None                                     # reads where the data says: it must stay in memory
    if isinstance(access, _VECTOR):
        lanes = ir.split_dtype(access.value.dtype if isinstance(access, ir.VStore) else access.dtype)[1]
        offset = constant_value(simplify(access.index))
    else:
        lanes = 1
        offset = constant_value(simplify(ir.flat_index(buf, access.indices)))
    return None if offset is None else (offset, lanes)


def _lanes_read(stmt: ir.Stmt, buf: ir.Buffer, slots: dict[tuple[int, int], None]) -> dict[tuple[int, int], tuple[int, int]]:
    """Single elements only read (never stored) inside a vector slot: ``{element slot: vector slot}``,
    read as a lane of the vector's variable (partial results of vectorized lanes combined after them).

    Only when one vector slot is read lane by lane: the lanes of several vectors (one per output of a
    tile, as in a dense matrix-vector product) are combined by a loop over the vectors, which the C
    compiler vectorizes across them while the buffer stays in memory (each output's lanes still combined
    in order); as lanes of variables they become dependent chains of scalar extracts, far slower."""
    stored = {_slot(a, buf) for a in _accesses(stmt, buf) if isinstance(a, (ir.Store, ir.VStore))}
    vectors = [slot for slot in slots if slot[1] > 1]
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for offset, lanes in slots:
        inside = [v for v in vectors if v[0] <= offset < v[0] + v[1]]
        if lanes == 1 and (offset, 1) not in stored and len(inside) == 1:
            out[(offset, 1)] = inside[0]
    return out if len(set(out.values())) <= 1 else {}


def _unroll_addressing_loops(stmt: ir.Stmt, buf: ir.Buffer) -> ir.Stmt:
    def visit(s: ir.Stmt):
        if isinstance(s, ir.For) and s.kind in (LoopKind.SERIAL, LoopKind.UNROLLED):
            inner = _unroll_addressing_loops(s.body, buf)
            loop = replace(s, body=inner)
            if any(_slot(a, buf) is None and any(n is s.var for n in _index_vars(a, buf))
                   for a in _accesses(inner, buf)):
                trips = constant_difference(loop.end, loop.begin)
                if trips is not None and trips <= MAX_AUTO_UNROLL:
                    copies = unroll_copies(loop)
                    if copies is not None:
                        return copies
            return loop
        return None
    return map_stmt(stmt, lambda e: e, visit)


def _index_vars(access, buf: ir.Buffer):
    if isinstance(access, ir.Address):
        return []
    index = access.index if isinstance(access, (*_VECTOR, ir.VGather)) else ir.flat_index(buf, access.indices)
    return [n for n in walk(index) if isinstance(n, Var)]


def _in_parallel_loop(stmt: ir.Stmt, buf: ir.Buffer) -> bool:
    hit = []

    def visit(s: ir.Stmt):
        if isinstance(s, ir.For) and s.kind is LoopKind.PARALLEL and _accesses(s.body, buf):
            hit.append(s)
        return None
    map_stmt(stmt, lambda e: e, visit)
    return bool(hit)


def promote(stmt: ir.Stmt, target: Target | None = None) -> ir.Stmt:
    """Replace qualifying local buffers of ``stmt`` by variables, within the register file of ``target``
    (the current one by default)."""
    return promote_with_report(stmt, target or current_target())[0]


def promote_with_report(stmt: ir.Stmt, target: Target) -> tuple[ir.Stmt, tuple[Promotion, ...]]:
    """:func:`promote` for ``target``, and what it did with each local buffer of constant size (outer
    buffers first)."""
    budget = RegisterBudget.of(target)
    report: list[Promotion] = []
    return _promote(stmt, budget, report), tuple(report)


def _promote(stmt: ir.Stmt, budget: RegisterBudget, report: list[Promotion]) -> ir.Stmt:
    def visit(s: ir.Stmt):
        if not isinstance(s, ir.Allocate):
            return None
        inner: list[Promotion] = []
        out, decision = _promote_buffer(s.buffer, _promote(s.body, budget, inner), budget)
        report.extend(([decision] if decision is not None else []) + inner)
        return out
    return map_stmt(stmt, lambda e: e, visit)


def _promote_buffer(buf: ir.Buffer, body: ir.Stmt, budget: RegisterBudget) -> tuple[ir.Stmt, Promotion | None]:
    """``buf`` replaced by variables in ``body`` (a :class:`~tesched.ir.nodes.Registers`), or its allocation
    kept; with the decision when ``buf`` is a local buffer of constant size (None otherwise, and when its
    accesses keep it in memory)."""
    kept = ir.Allocate(buf, body)
    sizes = buf.constant_shape()
    if (buf.scope is not ir.BufferScope.LOCAL or sizes is None
            or any(isinstance(o, ir.OriginVar) for o in buf.offsets) or _in_parallel_loop(body, buf)):
        return kept, None
    elements = math.prod(sizes)
    decision = functools.partial(Promotion, buf.name, elements, buf.dtype, budget=budget)
    if elements * dt.itemsize(buf.dtype) > budget.bytes:     # before unrolling anything
        return kept, decision(budget.registers_for(elements * dt.itemsize(buf.dtype)), promoted=False, over_bytes=True)
    unrolled = _unroll_addressing_loops(body, buf)
    slots: dict[tuple[int, int], None] = {}
    accesses = _accesses(unrolled, buf)
    for a in accesses:
        slot = _slot(a, buf)
        if slot is None:
            return kept, None
        slots[slot] = None
    stored = {_slot(a, buf) for a in accesses if isinstance(a, (ir.Store, ir.VStore))}
    if any(isinstance(a, ir.VLoadMasked) and _slot(a, buf) not in stored for a in accesses):
        return kept, None      # a masked read of lanes no store writes as one slot
    lanes_read = _lanes_read(unrolled, buf, slots)
    ordered = sorted(slot for slot in slots if slot not in lanes_read)
    for (o1, l1), (o2, _) in zip(ordered, ordered[1:]):
        if o1 + l1 > o2:   # overlapping slots of different widths: keep the memory
            return kept, None
    needed = sum(budget.registers_for(lanes * dt.itemsize(buf.dtype)) for _, lanes in ordered)
    if needed > budget.registers:
        return kept, decision(needed, promoted=False)
    registers = [ir.RegisterVar(f"{buf.name}.r{k}", buf.dtype if slot[1] == 1 else ir.vector_dtype(buf.dtype, slot[1]))
                 for k, slot in enumerate(ordered)]
    variables: dict[tuple[int, int], Expr] = dict(zip(ordered, registers))
    variables.update({slot: ir.Lane(variables[vector], slot[0] - vector[0]) for slot, vector in lanes_read.items()})
    return ir.Registers(registers, _replace(unrolled, buf, variables)), decision(needed, promoted=True)


def _replace(stmt: ir.Stmt, buf: ir.Buffer, variables: dict) -> ir.Stmt:
    def on_expr(e: Expr) -> Expr:
        def swap(n: Expr):
            if isinstance(n, ir.VLoadMasked) and n.buffer is buf:   # the lanes off the mask read 0
                zero = ir.Broadcast(Const(0, buf.dtype), n.lanes)
                return Select(rewrite(n.mask, swap), variables[_slot(n, buf)], zero)
            if isinstance(n, _READS) and n.buffer is buf:
                return variables[_slot(n, buf)]
            return None
        return rewrite(e, swap)

    def on_stmt(s: ir.Stmt):
        if isinstance(s, (ir.Store, ir.VStore)) and s.buffer is buf:
            return ir.Assign(variables[_slot(s, buf)], on_expr(s.value))
        return None
    return map_stmt(stmt, on_expr, on_stmt)
