"""The parts of element offsets an innermost loop does not change, computed once before it.

In ``for (m = 0; m < 32; m++) C[32768*mo + 4*ko + 1024*m] ...`` the offset ``32768*mo + 4*ko`` is the
same in every iteration: :func:`loop_bases` names it (one name per distinct expression, shared by the
buffers that use it) so that the C generator writes ``const int64_t A_off = 32768*mo + 4*ko;`` before the
loop and ``A[A_off + 1024*m]`` inside it, the way such loops are written by hand (gcc's
strength reduction gives the same machine code; this is for the reader of the C). Offsets are taken
after :func:`~tesched.arith.simplify.simplify`; constants stay in the accesses, so unrolled copies
share one base. Reads of memory and indices checked at run time (which may sit under a condition) are
never moved. This module writes no C.

It runs as the C is written, not as a pass of :data:`tesched.lower.pipeline.PASSES`: the offsets it names
are those the code generator writes, after the GPU one (which shares the C one's statements) rewrote
register tiles and cross-thread reductions as it writes; and the loop IR has no form for the element
offset of an access to a one-dimensional buffer with an origin (its index is a coordinate).
"""
from __future__ import annotations

from tesched.arith.interval import VarRanges, linear_terms
from tesched.arith.simplify import rebuild, simplify
from tesched.ir import nodes as ir
from tesched.ir.visitor import bound_inside, child_fields, walk_stmts
from tesched.te.expr import BinOp, Binary, Expr, Var
from tesched.te.visit import structural_key, walk

Bases = dict[tuple, Var]        # structural key of an invariant part -> the variable holding it


def _offsets(body: ir.Stmt) -> list[tuple[ir.Buffer, Expr]]:
    """Every element offset of ``body``'s memory accesses, with its buffer."""
    found: list[tuple[ir.Buffer, Expr]] = []
    for s in walk_stmts(body):
        if isinstance(s, ir.Store):
            found.append((s.buffer, ir.flat_index(s.buffer, s.indices)))
        elif isinstance(s, ir.VStore):
            found.append((s.buffer, s.index))
        for value in _expressions(s):
            for n in walk(value):
                if isinstance(n, (ir.Load, ir.Address)):
                    found.append((n.buffer, ir.flat_index(n.buffer, n.indices)))
                elif isinstance(n, (ir.VLoad, ir.VLoadStrided, ir.VLoadMasked)):
                    found.append((n.buffer, n.index))
    return found


def _expressions(s: ir.Stmt) -> list[Expr]:
    out: list[Expr] = []
    for _, value in child_fields(s):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, Expr):
                out.append(item)
    return out


def _changing(body: ir.Stmt, var: Var) -> set[int]:
    """The variables that may change inside the loop: its own and those its body assigns or binds."""
    return {id(var)} | bound_inside(body)


def split_invariant(offset: Expr, changing: set[int]) -> tuple[Expr | None, Expr]:
    """``offset`` as ``(invariant terms, the rest)``; the invariant part is None when it is a single
    variable or nothing (naming it would not help)."""
    atoms: dict = {}
    terms, const = linear_terms(offset, "int64", atoms)
    fixed: dict[tuple, int] = {}
    moving: dict[tuple, int] = {}
    for key, coeff in terms.items():
        atom = atoms[key]
        invariant = all(not (isinstance(n, Var) and id(n) in changing)
                        and not isinstance(n, (ir.Load, ir.VLoad, ir.CheckedIndex)) for n in walk(atom))
        (fixed if invariant else moving)[key] = coeff
    if not fixed or (len(fixed) == 1 and next(iter(fixed.values())) == 1):
        return None, offset
    return rebuild(fixed, 0, atoms, "int64"), rebuild(moving, const, atoms, "int64")


def loop_bases(loop: ir.For, ranges: VarRanges) -> tuple[list[tuple[Var, Expr]], set[int]]:
    """Variables for the invariant parts of the offsets of innermost ``loop`` (``ranges``: the loop's own
    included), in order of first use (none when the loop holds another loop), and the identities of the
    variables that change inside the loop (for :func:`with_bases`)."""
    changing = _changing(loop.body, loop.var)
    if any(isinstance(s, ir.For) for s in walk_stmts(loop.body)):
        return [], changing
    named: dict[tuple, tuple[Var, Expr]] = {}
    for buffer, offset in _offsets(loop.body):
        fixed, _ = split_invariant(simplify(offset, ranges), changing)
        if fixed is not None:
            key = structural_key(fixed)
            if key not in named:
                named[key] = (ir.LoopVar(f"{buffer.name}_off"), fixed)
    return list(named.values()), changing


def with_bases(offset: Expr, bases: Bases, changing: set[int]) -> Expr:
    """``offset`` (simplified) written with the variable of its invariant part when one was named."""
    fixed, rest = split_invariant(offset, changing)
    if fixed is None:
        return offset
    var = bases.get(structural_key(fixed))
    return offset if var is None else simplify(Binary(BinOp.ADD, var, rest, "int64"))
