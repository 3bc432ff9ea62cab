"""Turning a scatter into a gather: which points of a consumer read a given element of a producer.

A stage ``C`` reads ``U[f(v)]`` at each point ``v`` of its loops (its axes and reduce axes). The adjoint
of ``U`` needs, for each element ``j`` of ``U``, every ``v`` with ``f(v) = j``. When ``f`` is affine in
``v`` (sizes may appear as parameters), :func:`invert` solves ``f(v) = j`` by integer elimination: each
equation fixes one loop variable as an affine function of ``j`` (the longest loop of the equation, divided
exactly when its coefficient is not +-1, so a stride-2 pool sums over its 2x2 taps, not over its outputs),
the loop variables no equation fixes stay free and become reduce axes of the gather, and the
solved variables' ranges become its conditions. A convolution's read ``X[h + r]`` gives
``dX[j] = sum over r of dY[j - r] * W[r]`` with ``0 <= j - r < H``: the textbook adjoint, in gather form,
parallel over ``j`` without atomics.

Conditions that hold for every ``j`` in the producer's shape (an elementwise read, a transpose) are
proved by interval reasoning on linear forms and dropped. An index that is not affine in the loop
variables (a data-dependent gather, a clamped boundary read) gives ``None``: the caller scatters instead.
This module knows expressions and ranges only, not stages or schedules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tesched.arith.linear import linear, rebuild
from tesched.te.expr import BinOp, Binary, Const, Expr, Var, binary, cast_to
from tesched.te.tensor import IterVar, Range, reduce_axis
from tesched.te.visit import substitute, walk


@dataclass(frozen=True)
class LoopVar:
    """A loop of the consumer: its variable and the half-open range ``[low, low + extent)``."""

    var: IterVar
    low: Expr
    extent: Expr


@dataclass(frozen=True)
class Gather:
    """The points reading element ``j``: loop variable -> expression of ``j`` and of the ``free`` reduce
    axes, under ``conditions`` (all must hold)."""

    mapping: dict[int, Expr]
    free: list[IterVar]
    conditions: list[Expr]


def _int(e: Expr | int) -> Expr:
    return Const(e, "int32") if isinstance(e, int) else e


def loop_vars(axes: Sequence[IterVar]) -> list[LoopVar]:
    """The consumer's loops as :class:`LoopVar` (axes start at 0; reduce axes keep their ranges)."""
    return [LoopVar(a, _int(a.range.min), _int(a.range.extent)) for a in axes]


def _is_affine(atoms: dict) -> bool:
    """Every atom of a linear form is a plain variable (a loop variable or a size)."""
    return all(key[0] == "var" and isinstance(atom, Var) for key, atom in atoms.items())


def invert(indices: Sequence[Expr], loops: Sequence[LoopVar], point: Sequence[Expr],
           bounds: dict[int, tuple[Expr, Expr]]) -> Gather | None:
    """Solve ``indices(v) = point`` for the loop variables ``v``; ``None`` when an index is not affine.

    ``bounds`` gives inclusive bounds of the variables of ``point`` (the producer's axes), used to drop
    conditions that always hold."""
    by_id = {id(lp.var): lp for lp in loops}
    solved: dict[int, Expr] = {}
    conditions: list[Expr] = []
    for index, target in zip(indices, point):
        atoms: dict = {}
        terms, const = linear(substitute(index, _as_vars(solved, by_id)), atoms)
        if not _is_affine(atoms):
            return None
        unknown = [(key, c) for key, c in terms.items() if key[1] in by_id and key[1] not in solved]
        if not unknown:
            conditions.append(binary(BinOp.EQ, _narrow((terms, const), atoms), target))
            continue
        key, coeff = min(unknown, key=lambda kc: _solve_first(by_id[kc[0][1]], kc[1]))
        rest = ({k: -c for k, c in terms.items() if k != key}, -const)
        numerator = _plus(_narrow(rest, atoms), target)            # coeff * v = target - rest
        if coeff < 0:
            numerator, coeff = _negate(numerator), -coeff
        value = numerator
        if coeff != 1:
            conditions.append(binary(BinOp.EQ, binary(BinOp.FLOORMOD, numerator, coeff), 0))
            value = binary(BinOp.FLOORDIV, numerator, coeff)
        solved = {k: substitute(v, {by_id[key[1]].var: value}) for k, v in solved.items()}
        solved[key[1]] = value
    return _gather(loops, solved, conditions, bounds)


def _solve_first(lp: LoopVar, coeff: int) -> tuple[float, bool, int]:
    """Which unknown of an equation to solve: the longest loop (a size counts as longest), so the loops
    left free, which the gather sums over, are the short ones (a strided window's taps, not its outputs);
    then a unit coefficient."""
    extent = float(lp.extent.value) if isinstance(lp.extent, Const) else float("inf")
    return -extent, abs(coeff) != 1, abs(coeff)


def _narrow(form: tuple[dict, int], atoms: dict) -> Expr:
    """A linear form as an expression, in int32 when its variables are int32."""
    dtype = "int32" if all(a.dtype == "int32" for a in atoms.values()) and abs(form[1]) < 1 << 31 else "int64"
    return rebuild(form, atoms, dtype)


def _as_vars(solved: dict[int, Expr], by_id: dict[int, LoopVar]) -> dict[Var, Expr]:
    return {by_id[k].var: v for k, v in solved.items()}


def _plus(a: Expr, b: Expr) -> Expr:
    return binary(BinOp.ADD, a, b)


def _negate(e: Expr) -> Expr:
    return binary(BinOp.SUB, Const(0, e.dtype), e)


def _gather(loops: Sequence[LoopVar], solved: dict[int, Expr], conditions: list[Expr],
            bounds: dict[int, tuple[Expr, Expr]]) -> Gather | None:
    """Free loops become new reduce axes; each solved loop's range becomes a condition unless proved."""
    mapping: dict[int, Expr] = {}
    free: list[IterVar] = []
    renamed: dict[Var, Expr] = {}
    for lp in loops:
        if id(lp.var) in solved:
            continue
        if _uses_loops((lp.low, lp.extent), loops, lp):
            return None     # a free loop whose range depends on another loop: not a box
        axis = reduce_axis(Range(lp.var.range.min, lp.var.range.extent), f"{lp.var.name}.adj")
        free.append(axis)
        renamed[lp.var] = axis
        mapping[id(lp.var)] = axis
    box = dict(bounds)
    box.update({id(a): (_int(a.range.min), _plus(_int(a.range.min), _int(a.range.extent)) - 1) for a in free})
    solved_loops = [lp for lp in loops if id(lp.var) in solved]
    for lp in solved_loops:
        mapping[id(lp.var)] = cast_to(substitute(solved[id(lp.var)], renamed), lp.var.dtype)
    at_point = {lp.var: mapping[id(lp.var)] for lp in loops}
    for lp in solved_loops:
        value = mapping[id(lp.var)]
        low = substitute(lp.low, at_point)
        last = _plus(substitute(lp.low, at_point), substitute(lp.extent, at_point)) - 1
        for lower, upper in ((low, value), (value, last)):
            if not _proved_le(lower, upper, box):
                conditions.append(binary(BinOp.LE, lower, upper))
    conditions = [substitute(c, renamed) for c in conditions]
    return Gather(mapping, free, [c for c in conditions if not _trivially_true(c, box)])


def _uses_loops(exprs: tuple[Expr, ...], loops: Sequence[LoopVar], own: LoopVar) -> bool:
    """Whether a range of loop ``own`` depends on another loop (a triangular reduction)."""
    ids = {id(lp.var) for lp in loops if lp is not own}
    return any(isinstance(n, Var) and id(n) in ids for e in exprs for n in walk(e))


def _trivially_true(cond: Expr, box: dict[int, tuple[Expr, Expr]]) -> bool:
    if isinstance(cond, Binary) and cond.op == BinOp.EQ:
        (ta, ca), (tb, cb) = linear(cond.a), linear(cond.b)
        return ta == tb and ca == cb
    return False


def _extreme(e: Expr, box: dict[int, tuple[Expr, Expr]], lowest: bool, depth: int = 4) -> tuple[dict, int] | None:
    """The linear form of the least (``lowest``) or greatest value of ``e`` over ``box``: each bounded
    variable replaced by the bound that minimises (maximises) its term, repeatedly, until only sizes are
    left. None when ``e`` is not linear."""
    atoms: dict = {}
    terms, const = linear(e, atoms)
    if any(key[0] != "var" for key in terms):
        return None
    if depth == 0 or not any(key[1] in box for key in terms):
        return terms, const
    replaced: Expr = Const(const, "int64" if abs(const) >= 1 << 31 else "int32")
    for key, coeff in terms.items():
        var = atoms[key]
        if key[1] in box:
            low, high = box[key[1]]
            bound = low if (coeff > 0) == lowest else high
            replaced = binary(BinOp.ADD, replaced, binary(BinOp.MUL, coeff, bound))
        else:
            replaced = binary(BinOp.ADD, replaced, binary(BinOp.MUL, coeff, var))
    return _extreme(replaced, box, lowest, depth - 1)


def _proved_le(a: Expr, b: Expr, box: dict[int, tuple[Expr, Expr]]) -> bool:
    """``a <= b`` for every point of ``box`` (sizes are unknown but cancel when they appear on both sides)."""
    diff = binary(BinOp.SUB, b, a)
    least = _extreme(diff, box, lowest=True)
    if least is None:
        return False
    terms, const = least
    return not terms and const >= 0
