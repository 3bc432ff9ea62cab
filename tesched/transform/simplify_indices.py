"""Simplify every expression of a loop nest knowing the range of each loop variable.

Walks the nest keeping the range of every enclosing loop variable (``[begin, end - 1]``, bounded over
the ranges of the loops outside it: the bounds isl generated), narrowed inside ``if`` branches whose
condition compares a loop variable with something bounded (the guard of a split that does not divide),
and of every ``let`` variable (the bounds of its value). Each expression is rewritten by
:func:`tesched.arith.simplify.simplify`: a packed layout's ``B[n // 32, k, n % 32]`` with
``n = 32*n.outer + n.inner`` reads ``B[n.outer, k, n.inner]``, and ``if`` statements whose condition
is decided disappear. The same ranges serve the C generator (:func:`loop_range`; conditions narrow them by
:func:`tesched.arith.interval.refine`).

:func:`normalize_loops` (run before code generation) makes every loop start at 0: ``for n in
[32*n.outer, 32*n.outer + 32)`` becomes ``for n in [0, 32)`` with ``32*n.outer + n`` in its body, so
that the offset of a tile (``n - 32*n.outer``) and the division of a packed layout (``n // 32``)
cancel exactly, which interval bounds alone cannot see.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.interval import INDEX_TYPES, VarRanges, bound, refine
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtMutator, map_stmt
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.transform.unroll import substitute_loop_var


def loop_range(loop: ir.For, ranges: VarRanges) -> VarRanges:
    """``ranges`` with ``loop``'s variable in ``[begin, end - 1]`` (bounded over the outer loops)."""
    low = bound(simplify(loop.begin, ranges), ranges)[0]
    high = bound(simplify(loop.end, ranges), ranges)[1] - 1
    return ranges.where(loop.var, low, high)


class RangeMutator(StmtMutator):
    """A statement mutator that knows, at each statement, the ranges of the variables around it
    (``self.ranges``); ``if`` statements whose condition mutates to a constant keep the branch taken."""

    def __init__(self, ranges: VarRanges):
        self.ranges = ranges

    def within(self, ranges: VarRanges, s: ir.Stmt) -> ir.Stmt:
        saved, self.ranges = self.ranges, ranges
        try:
            return self.visit(s)
        finally:
            self.ranges = saved

    def visit_For(self, s: ir.For) -> ir.Stmt:
        begin, end = self.mutate_expr(s.begin), self.mutate_expr(s.end)
        body = self.within(loop_range(s, self.ranges), s.body)
        if begin is s.begin and end is s.end and body is s.body:
            return s
        return replace(s, begin=begin, end=end, body=body)

    def visit_IfThenElse(self, s: ir.IfThenElse) -> ir.Stmt:
        cond = self.mutate_expr(s.cond)
        if isinstance(cond, Const):
            taken = s.then_case if cond.value else s.else_case
            return self.visit(taken) if taken is not None else ir.Block([])
        then_case = self.within(refine(cond, self.ranges), s.then_case)
        else_case = self.visit(s.else_case) if s.else_case is not None else None
        if cond is s.cond and then_case is s.then_case and else_case is s.else_case:
            return s
        return ir.IfThenElse(cond, then_case, else_case)

    def visit_LetStmt(self, s: ir.LetStmt) -> ir.Stmt:
        # a chain of lets (one per shared subexpression of an inlined chain: hundreds) is walked in a loop,
        # not by recursion
        chain: list[tuple[ir.LetStmt, Expr]] = []
        ranges = self.ranges
        stmt: ir.Stmt = s
        while isinstance(stmt, ir.LetStmt):
            saved, self.ranges = self.ranges, ranges
            value = self.mutate_expr(stmt.value)
            self.ranges = saved
            if value.dtype in INDEX_TYPES:
                ranges = ranges.where(stmt.var, *bound(value, ranges))
            chain.append((stmt, value))
            stmt = stmt.body
        body = self.within(ranges, stmt)
        for let, value in reversed(chain):
            body = let if value is let.value and body is let.body else ir.LetStmt(let.var, value, body)
        return body


class _Simplify(RangeMutator):
    def mutate_expr(self, e: Expr) -> Expr:
        return simplify(e, self.ranges)

    def visit_Allocate(self, s: ir.Allocate) -> ir.Stmt:
        """The buffer's origin simplified as well, under the loops around its allocation (where every
        access to it is): isl writes the origin's divisions as C's (``cdiv``), which the accesses lose
        when simplified, and the two would no longer cancel in an element's offset. The buffer keeps its
        identity (stages and checks know it by it), as when ``lower`` sets its origin."""
        s.buffer.offsets = [self.mutate_expr(o) for o in s.buffer.offsets]
        return self.visit_default(s)


def simplify_indices(stmt: ir.Stmt, ranges: VarRanges | None = None) -> ir.Stmt:
    """``stmt`` with every expression simplified under the ranges of the loops around it."""
    return _Simplify(ranges or VarRanges()).visit(stmt)


def normalize_loops(stmt: ir.Stmt) -> ir.Stmt:
    """``stmt`` with every unit-step loop whose start is not a constant rewritten to start at 0."""
    def visit(s: ir.Stmt) -> ir.Stmt | None:
        if not (isinstance(s, ir.For) and s.step == 1 and not isinstance(s.begin, Const)):
            return None
        var = ir.LoopVar(s.var.name)
        body = substitute_loop_var(s.body, s.var, Binary(BinOp.ADD, s.begin, var, "int64"))
        return replace(s, var=var, begin=Const(0, "int64"), end=Binary(BinOp.SUB, s.end, s.begin, "int64"),
                       body=map_stmt(body, None, visit))
    return map_stmt(stmt, None, visit)
