"""Unroll loops marked ``unrolled`` whose trip count is a compile-time constant.

The body is copied once per iteration with the loop variable replaced by ``begin + k``, and index
arithmetic is folded, so that later passes see constant offsets (what makes register tiles possible).
Loops whose trip count is only known at run time (a split that does not divide), and loops at or inside
a loop with the pragma ``unroll_explicit=False``, keep a ``#pragma GCC unroll`` in C instead.
"""
from __future__ import annotations

from tesched.arith.linear import constant_difference
from tesched.ir import nodes as ir
from tesched.ir.visitor import map_stmt, rebind_buffer
from tesched.ir.kinds import LoopKind
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.te.visit import substitute, walk

MAX_UNROLL = 64


def unroll_copies(loop: ir.For) -> ir.Stmt | None:
    """The loop's body copied per iteration, or None if its trip count is not a small constant."""
    trips = constant_difference(loop.end, loop.begin)
    if trips is None or trips > MAX_UNROLL * loop.step or trips <= 0:
        return None
    copies = []
    for k in range(0, trips, loop.step):
        value: Expr = loop.begin if k == 0 else Binary(BinOp.ADD, loop.begin, Const(k, "int64"), "int64")
        copies.append(substitute_loop_var(loop.body, loop.var, value))
    return ir.seq(copies)


def substitute_loop_var(stmt: ir.Stmt, var: Var, value: Expr) -> ir.Stmt:
    """``stmt`` with ``var`` replaced by ``value``, buffer origins included (a local buffer whose origin
    depends on ``var`` becomes a new buffer in each copy)."""
    def on_stmt(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.Allocate) and any(_mentions(o, var) for o in s.buffer.offsets):
            old = s.buffer
            new = old.relocated([substitute(o, {var: value}) for o in old.offsets])
            return ir.Allocate(new, substitute_loop_var(rebind_buffer(s.body, old, new), var, value))
        return None
    return map_stmt(stmt, lambda e: substitute(e, {var: value}), on_stmt)


def _mentions(e: Expr, var: Var) -> bool:
    return any(n is var for n in walk(e))


def unroll(stmt: ir.Stmt) -> ir.Stmt:
    """``stmt`` with its constant-trip ``unrolled`` loops copied out, except at or inside a loop with
    the pragma ``unroll_explicit=False`` (those stay loops; C asks gcc to unroll them)."""
    def visit(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.For) and ("unroll_explicit", False) in s.pragmas:
            return s
        if isinstance(s, ir.For) and s.kind is LoopKind.UNROLLED:
            copies = unroll_copies(s)
            if copies is not None:
                return unroll(copies)
        return None
    return map_stmt(stmt, lambda e: e, visit)
