"""Peel the last, partial tile off a loop so that the loops it holds that are marked ``unroll`` can be.

A split that does not divide (197 rows in tiles of 8) gives the loops inside the outer loop a trip count
that depends on it: ``for i in [0, min(197, 8*io + 8) - 8*io)``. Such a loop cannot be unrolled, and a
register tile whose rows stay a loop keeps its accumulators in memory. When an ``unroll`` loop's bounds
hold a ``min`` or ``max`` of two operands whose difference is ``p * io + q`` (constants ``p``, ``q``),
the serial loop over ``io`` (constant bounds) is split where that difference changes sign, into the full
tiles (``io`` in ``[0, 24)``) and the rest (``io = 24``: one iteration is the body with ``io`` replaced). Each part is simplified knowing its range, which
decides the ``min``: the full tiles get constant trip counts (8), the last tile its own (5), and both
unroll. Nothing else changes: a loop is split only when an ``unroll`` loop inside it asks for it, so the
code grows only where the schedule unrolls. :func:`peel_tails` splits every such loop of a function body
(the pass before :mod:`.unroll`, which unrolls); this module unrolls nothing.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.linear import constant_difference, constant_value, linear
from tesched.ir import nodes as ir
from tesched.ir.visitor import map_stmt, walk_stmts
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Var
from tesched.te.visit import walk
from tesched.transform.simplify_indices import simplify_indices
from tesched.transform.unroll import substitute_loop_var


def _sign_change(node: Binary, var: Var) -> int | None:
    """The first value of ``var`` at which ``node.a - node.b`` (of the form ``p * var + q``, ``p != 0``)
    has another sign than just before it, or None when the difference is not of that form."""
    terms, q = linear(Binary("sub", node.a, node.b, node.dtype))
    if set(terms) != {("var", id(var))}:
        return None
    p = terms[("var", id(var))]
    return q // -p + 1 if p < 0 else -(q // p)   # p < 0: a >= b up to q // -p; p > 0: from ceil(-q / p) on


def split_point(loop: ir.For) -> tuple[int, int, int] | None:
    """``(begin, point, end)``: ``loop``'s constant bounds and where to split it (serial, unit step) so
    that an ``unroll`` loop inside it gets a constant trip count on both sides; None when there is none."""
    begin, end = constant_value(loop.begin), constant_value(loop.end)
    if loop.kind is not LoopKind.SERIAL or loop.step != 1 or begin is None or end is None:
        return None
    for inner in walk_stmts(loop.body):
        if not (isinstance(inner, ir.For) and inner.kind is LoopKind.UNROLLED
                and constant_difference(inner.end, inner.begin) is None):
            continue
        for bound in (inner.begin, inner.end):
            for node in walk(bound):
                if isinstance(node, Binary) and node.op in ("min", "max"):
                    point = _sign_change(node, loop.var)
                    if point is not None and begin < point < end:
                        return begin, point, end
    return None


def peel(loop: ir.For) -> ir.Stmt | None:
    """``loop`` as two loops, before and from its :func:`split_point`, each simplified over its own range;
    None when it has no split point."""
    split = split_point(loop)
    if split is None:
        return None
    begin, point, end = split
    return ir.seq([_part(loop, begin, point), _part(loop, point, end)])


def _part(loop: ir.For, begin: int, end: int) -> ir.Stmt:
    """``loop`` over ``[begin, end)``, simplified; one iteration is its body with the variable replaced."""
    if end - begin == 1:
        return simplify_indices(substitute_loop_var(loop.body, loop.var, Const(begin, loop.var.dtype)))
    return simplify_indices(replace(loop, begin=Const(begin, loop.begin.dtype), end=Const(end, loop.end.dtype)))


def peel_tails(stmt: ir.Stmt) -> ir.Stmt:
    """``stmt`` with every loop that has a :func:`split_point` split there, and its parts split again
    (not at or inside a loop whose unrolled loops stay loops: the pragma ``unroll_explicit=False``)."""
    def visit(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.For) and ("unroll_explicit", False) in s.pragmas:
            return s
        parts = peel(s) if isinstance(s, ir.For) else None
        return peel_tails(parts) if parts is not None else None
    return map_stmt(stmt, lambda e: e, visit)
