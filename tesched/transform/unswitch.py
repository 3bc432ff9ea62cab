"""Loop unswitching for the loops :mod:`.vectorize` leaves scalar: a select whose condition does not change
with the loop (``c < 32 ? upsampled : skip``, a concatenation along an outer axis) moves out of it, as
``if (c < 32) loop(upsampled) else loop(skip)``, so each version's body is free of that branch and the C
compiler's vectorizer, which gives up on a loop whose body reads memory under a condition, can take it.
The ``unswitch loops left scalar`` pass (:func:`unswitch_scalar_loops`) runs before the vectorizing
passes, on the ``vectorized`` loops they would not take (:func:`~tesched.transform.vectorize.vectorizes`);
each version is asked again, so a version they take is vectorized by them. This module only moves conditions.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.ir.kinds import LoopKind
from tesched.ir.visitor import bound_inside, map_stmt, walk_stmts
from tesched.te.expr import Expr, Select
from tesched.te.visit import rewrite, structural_key, walk
from tesched.transform.simplify_indices import RangeMutator
from tesched.transform.unroll import substitute_loop_var
from tesched.transform.vectorize import vectorizes


def _invariant_condition(loop: ir.For) -> Expr | None:
    """The condition of the first select in ``loop``'s body that nothing the loop does changes: it uses no
    variable bound inside the loop (its own, an inner loop's, a let's, an assignment's, the origin of a
    buffer allocated there: :func:`~tesched.ir.visitor.bound_inside`), and it reads no buffer the loop
    writes (any buffer, where the loop calls an intrinsic that writes through pointers)."""
    statements = list(walk_stmts(loop.body))
    inner = bound_inside(loop)
    written = {id(st.buffer) for st in statements if isinstance(st, (ir.Store, ir.VStore))}
    opaque = any(isinstance(st, ir.IntrinsicCall) for st in statements)

    def invariant(cond: Expr) -> bool:
        for n in walk(cond):
            if id(n) in inner:
                return False
            buffer = getattr(n, "buffer", None)
            if isinstance(buffer, ir.Buffer) and (opaque or id(buffer) in written):
                return False
        return True

    found: list[Expr] = []

    def look(e: Expr) -> Expr:
        if not found:
            found.extend(n.cond for n in walk(e) if isinstance(n, Select) and invariant(n.cond))
        return e

    map_stmt(loop.body, look)
    return found[0] if found else None


def _decided(stmt: ir.Stmt, cond: Expr, taken: bool) -> ir.Stmt:
    key = structural_key(cond)

    def pick(n: Expr) -> Expr | None:
        if isinstance(n, Select) and structural_key(n.cond) == key:
            return rewrite(n.true_value if taken else n.false_value, pick)
        return None

    return map_stmt(stmt, lambda e: rewrite(e, pick))


def unswitch(loop: ir.For) -> ir.Stmt | None:
    """``if (cond) loop[cond := true] else loop[cond := false]`` for a loop-invariant select condition of
    ``loop``'s body, or ``None`` when there is none."""
    cond = _invariant_condition(loop)
    if cond is None:
        return None
    then_loop = replace(loop, body=_decided(loop.body, cond, True))
    var = ir.LoopVar(loop.var.name)
    else_loop = replace(loop, var=var, body=substitute_loop_var(_decided(loop.body, cond, False), loop.var, var))
    return ir.IfThenElse(cond, then_loop, else_loop)


def unswitch_scalar_loops(stmt: ir.Stmt, vector_bytes: int, features: frozenset[str]) -> ir.Stmt:
    """``stmt`` with the ``vectorized`` loops that the vectorizing passes would leave scalar unswitched, as
    long as one has a loop-invariant condition (a target without SIMD, ``vector_bytes`` 0, keeps them)."""
    return _Unswitch(vector_bytes, features).visit(stmt) if vector_bytes > 0 else stmt


class _Unswitch(RangeMutator):
    def __init__(self, vector_bytes: int, features: frozenset[str]):
        super().__init__(VarRanges())
        self.vector_bytes, self.features = vector_bytes, features

    def visit_For(self, s: ir.For) -> ir.Stmt:
        if s.kind is LoopKind.VECTORIZED:
            if vectorizes(s, self.vector_bytes, self.features, self.ranges):
                return s
            unswitched = unswitch(s)
            if unswitched is not None:
                return self.visit(unswitched)
        return super().visit_For(s)
