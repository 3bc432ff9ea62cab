"""Split a vectorized loop where the conditions of its selects change, so each part vectorizes.

A select whose branches read memory (padding: ``x >= 1 and x <= W ? A[x - 1] : 0``) cannot run both
branches in every lane: the lanes outside the condition would read out of bounds. When each comparison of
such a condition that changes with the loop variable is affine in it with coefficient +-1, the comparison
flips at one point (``x >= 1`` at ``x = 1``); with every such point a constant distance from the others
(so they can be ordered without knowing the outer loops), the loop splits at them into parts in which
every comparison is decided: an interior that reads ``A[x - 1]`` without a condition, and borders that
store ``0``. The split points are clamped to the loop's bounds at run time, so a tile that contains no
border gets empty border parts. Comparisons that do not change with the loop stay, as scalar conditions.
This module only splits; :mod:`.vectorize` vectorizes each part.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.linear import coefficient, constant_difference, linear, rebuild
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtVisitor, bound_inside, map_stmt, walk_stmts
from tesched.te.expr import BinOp, Binary, Const, Expr, Select, Unary, Var
from tesched.te.visit import rewrite, substitute, walk
from tesched.transform.unroll import substitute_loop_var

_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
MAX_POINTS = 8


def _depends(e: Expr, var: Var) -> bool:
    return any(n is var for n in walk(e))


def _comparisons(cond: Expr) -> list[Binary]:
    """The comparisons combined by ``and``/``or``/``not`` into ``cond``."""
    if isinstance(cond, Binary) and cond.op in (BinOp.AND, BinOp.OR):
        return _comparisons(cond.a) + _comparisons(cond.b)
    if isinstance(cond, Unary) and cond.op == "not":
        return _comparisons(cond.a)
    return [cond] if isinstance(cond, Binary) and cond.op in _COMPARE else []


def _guarded_selects(stmt: ir.Stmt, var: Var) -> list[Select]:
    """Selects of ``stmt`` whose condition changes with ``var`` and whose branches read memory."""
    found: list[Select] = []

    class Find(StmtVisitor):
        def visit_expr(self, e: Expr) -> None:
            for n in walk(e):
                if isinstance(n, Select) and _depends(n.cond, var) and any(
                        isinstance(m, ir.Load) for branch in (n.true_value, n.false_value) for m in walk(branch)):
                    found.append(n)
    Find().visit(stmt)
    return found


def _flip_points(comparison: Binary, var: Var) -> list[Expr] | None:
    """Where ``comparison`` may change value as ``var`` grows (None if not affine with coefficient +-1)."""
    if comparison.a.dtype not in ("int32", "int64") or comparison.b.dtype not in ("int32", "int64"):
        return None
    diff = Binary(BinOp.SUB, comparison.a, comparison.b, "int64")
    step = coefficient(diff, var)
    if step not in (1, -1):
        return None
    atoms: dict = {}
    terms, const = linear(diff, atoms)
    terms = {k: v for k, v in terms.items() if not (k[0] == "var" and atoms[k] is var)}
    rest = rebuild((terms, const), atoms)                       # diff = step * var + rest
    if _depends(rest, var):
        return None
    zero = rest if step == -1 else Unary("neg", rest)           # where step * var + rest == 0
    after = Binary(BinOp.ADD, zero, Const(1, "int64"), "int64")
    if comparison.op in (BinOp.EQ, BinOp.NE):
        return [zero, after]
    # step 1: var < z (lt) and var >= z (ge) flip at z, var <= z and var > z at z + 1; step -1: the reverse
    return [zero if (comparison.op in (BinOp.LT, BinOp.GE)) == (step == 1) else after]


def split_points(loop: ir.For) -> list[Expr] | None:
    """The ordered points where the guarded selects' comparisons flip, or None if they cannot be ordered."""
    if any(isinstance(s, ir.For) for s in walk_stmts(loop.body)):
        return None              # a body with loops is not vectorized: nothing to gain
    inner = bound_inside(loop.body)
    points: list[Expr] = []
    for sel in _guarded_selects(loop.body, loop.var):
        for comparison in _comparisons(sel.cond):
            if not _depends(comparison, loop.var):
                continue
            flips = _flip_points(comparison, loop.var)
            if flips is None or any(id(n) in inner for p in flips for n in walk(p)):
                return None      # not affine, or the point moves inside the body
            points += flips
    if not points:
        return None
    offsets: dict[int, Expr] = {}
    for p in points:
        d = constant_difference(p, points[0])
        if d is None:
            return None
        offsets.setdefault(d, p)
    if len(offsets) > MAX_POINTS:
        return None
    return [simplify(offsets[d]) for d in sorted(offsets)]


def split_at_conditions(loop: ir.For) -> tuple[list[tuple[Var, Expr]], list[ir.For]] | None:
    """``loop`` as consecutive parts in each of which every guarded select's condition is decided (the
    comparisons that change with the loop replaced by constants), with the ``let`` bindings of the split
    points computed at run time; None when that is not possible."""
    points = split_points(loop)
    if points is None:
        return None
    var = loop.var
    bindings: list[tuple[Var, Expr]] = []
    bounds = [loop.begin]
    for k, p in enumerate(points):
        at = simplify(Binary(BinOp.MIN, Binary(BinOp.MAX, p, loop.begin, "int64"), loop.end, "int64"))
        if not isinstance(at, Const):
            bindings.append((ir.LoopVar(f"{var.name}.split{k}"), at))
            at = bindings[-1][0]
        bounds.append(at)
    bounds.append(loop.end)
    samples = [Binary(BinOp.SUB, points[0], Const(1, "int64"), "int64")] + points
    selects = _guarded_selects(loop.body, var)
    comparisons = {id(c): c for sel in selects for c in _comparisons(sel.cond) if _depends(c, var)}
    parts: list[ir.For] = []
    for begin, end, sample in zip(bounds, bounds[1:], samples):
        decided: dict[int, Expr] = {}
        for key, c in comparisons.items():
            value = simplify(substitute(c, {var: sample}))
            if not isinstance(value, Const):
                return None
            decided[key] = value
        body = _replace(loop.body, decided)
        part_var = ir.LoopVar(var.name)
        parts.append(replace(loop, var=part_var, begin=begin, end=end, body=substitute_loop_var(body, var, part_var),
                             extent_hint=None))
    return bindings, parts


def _replace(stmt: ir.Stmt, decided: dict[int, Expr]) -> ir.Stmt:
    """``stmt`` with the comparisons of ``decided`` (by identity) replaced, and selects folded."""
    return map_stmt(stmt, lambda e: simplify(rewrite(e, lambda n: decided.get(id(n)))))
