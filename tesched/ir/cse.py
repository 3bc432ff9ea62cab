"""Bind shared subexpressions once: a DAG value becomes ``let`` bindings and a tree-sized expression.

Inlining a chain of stages whose values are used several times (``B[i] * B[i]``) gives an expression DAG
(see :mod:`tesched.schedule.inline`); printed or compiled as a tree it would grow exponentially with the
chain's depth. :func:`bind_shared` names every non-trivial node used more than once (Halide's ``let``),
children first, so the printed IR and the C code are linear in the DAG's size. It changes no value.
A store with a ``let`` is left to gcc's vectorizer (``#pragma omp simd``) rather than explicit SIMD.
:func:`bind_shared_stores` is the lowering pass (``bind shared subexpressions``): every store's value
bound so, right after the statements are emitted.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.ir.nodes import LetStmt, Load, Stmt, Store
from tesched.ir.visitor import map_stmt
from tesched.te import dtype as dt
from tesched.te.expr import Cast, Expr, Var
from tesched.te.visit import rewrite, walk


def _uses(value: Expr) -> tuple[dict[int, int], list[Expr]]:
    """How many parents use each node, and the nodes in post-order (children first)."""
    uses: dict[int, int] = {}
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(value, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in node.children():
            uses[id(child)] = uses.get(id(child), 0) + 1
            stack.append((child, False))
    return uses, order


def _cheap(node: Expr) -> bool:
    """Nodes repeated rather than bound: variables, constants, loads, index arithmetic and casts of them
    (repeating them costs nothing, and a store whose value has no ``let`` stays a plain store that the
    vectorizer handles)."""
    while isinstance(node, Cast):
        node = node.value
    if not node.children() or isinstance(node, Load):
        return True
    return dt.is_int(node.dtype) and not any(isinstance(n, Load) for n in walk(node))   # index arithmetic


def bind_shared(value: Expr) -> tuple[list[tuple[Var, Expr]], Expr]:
    """``(bindings, expr)``: ``expr`` (and each binding's value) refers to the bound variables instead of
    repeating the subexpressions they name; bindings come in the order they must be evaluated."""
    uses, order = _uses(value)
    shared = [n for n in order if uses.get(id(n), 0) > 1 and not _cheap(n)]
    if not shared:
        return [], value
    names: dict[int, Var] = {}
    bindings: list[tuple[Var, Expr]] = []
    for node in shared:
        def inner(e: Expr, node: Expr = node) -> Expr | None:
            return names.get(id(e)) if e is not node else None
        bound = rewrite(node, inner)
        var = Var(f"t{len(bindings)}", node.dtype)
        names[id(node)] = var
        bindings.append((var, bound))
    return bindings, rewrite(value, lambda e: names.get(id(e)))


def wrap_lets(bindings: list[tuple[Var, Expr]], body: Stmt) -> Stmt:
    """``let`` statements around ``body``, the first binding outermost."""
    for var, value in reversed(bindings):
        body = LetStmt(var, value, body)
    return body


def bind_shared_stores(body: Stmt) -> Stmt:
    """``body`` with the subexpressions each store's value shares bound once, by ``let`` statements
    around that store."""
    def visit(s: Stmt) -> Stmt | None:
        if not isinstance(s, Store):
            return None
        bindings, value = bind_shared(s.value)
        return wrap_lets(bindings, replace(s, value=value)) if bindings else s
    return map_stmt(body, None, visit)
