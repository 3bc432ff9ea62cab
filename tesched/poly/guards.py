"""Where a stage's reads run: the conditions around each read, and the accesses restricted to them.

A read under ``if_then_else(c, ...)`` or ``where=`` runs only where ``c`` holds, and the right operand of
``&``/``|`` only where the left one allows (C short-circuits). :func:`guarded_reads` lists every read of a
stage's body (and the element a scatter updates) with those conditions; :func:`restrict_to_guard` cuts an
access relation to the instances where the affine ones hold (a condition that depends on data cannot be
expressed, and is reported, so callers stay sound). The bounds check (:mod:`.bounds`) and the footprints
(:mod:`.domains`) use both. This module raises nothing.
"""
from __future__ import annotations

import itertools
from typing import Iterator

import islpy as isl

from tesched.poly.affine import NotAffine
from tesched.poly.model import PolyModel, StageModel
from tesched.te.expr import BinOp, Binary, Expr, Select, Unary
from tesched.te.reduction import Reduce
from tesched.te.tensor import TensorRead

_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "="}


def restrict_to_guard(model: PolyModel, sm: StageModel, access: isl.Map, guard: tuple) -> tuple[isl.Map, bool]:
    """``access`` (from ``sm``'s main statement) where the affine conditions of ``guard`` hold, and whether
    every condition was affine. A condition with data-dependent parts restricts the access by what it
    implies (``(i >= 1) & (C[i] > 0)`` implies ``i >= 1``); the read is then taken to run wherever that
    allows (inexact: never a false alarm)."""
    stmt = sm.main
    exact = True
    for cond, holds in guard:
        text, whole = _condition(model, sm, cond, negate=not holds)
        exact = exact and whole
        if text is None:
            continue
        where = isl.Set(f"{model.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] : {text} }}")
        access = access.intersect_domain(where)
    return access, exact


def guarded_reads(sm: StageModel) -> Iterator[tuple[TensorRead, tuple]]:
    """Every read of ``sm``'s body (and a scatter's element) with the conditions under which it runs."""
    return itertools.chain(_guarded_reads(sm.body, (), set()), _target_reads(sm))


def reads_with_guards(body: Expr) -> Iterator[tuple[TensorRead, tuple]]:
    """Every read of an expression with the conditions under which it runs (as :func:`guarded_reads`)."""
    return _guarded_reads(body, (), set())


def _target_reads(sm: StageModel) -> Iterator[tuple[TensorRead, tuple]]:
    """A scatter's element, read and written by its update where its ``where`` holds (an update
    definition's element, written wherever it runs)."""
    if sm.target is not None and sm.update_of is not None:   # an update definition: the element it writes
        return _guarded_reads(sm.target, (), set())
    if sm.target is None or not isinstance(sm.body, Reduce):
        return iter(())
    return _guarded_reads(sm.target, () if sm.body.where is None else ((sm.body.where, True),), set())


def _condition(model: PolyModel, sm: StageModel, cond: Expr, negate: bool = False) -> tuple[str | None, bool]:
    """isl text of a condition implied by ``cond`` (or by its negation), None when nothing affine is
    implied, and whether the text is exactly the condition (every part of it affine). Negations are
    pushed to the comparisons, so what is dropped is always a conjunct: the text stays implied."""
    try:
        if isinstance(cond, Unary) and cond.op == "not":
            return _condition(model, sm, cond.a, not negate)
        if isinstance(cond, Binary) and cond.op in (BinOp.AND, BinOp.OR):
            (a, exact_a), (b, exact_b) = _condition(model, sm, cond.a, negate), _condition(model, sm, cond.b, negate)
            exact = exact_a and exact_b
            if (cond.op == BinOp.AND) != negate:            # a conjunction: each affine side is implied
                if a is None or b is None:
                    return (a if b is None else b), False
                return f"(({a}) and ({b}))", exact
            if a is None or b is None:                  # a disjunction implies nothing from one side
                return None, False
            return f"(({a}) or ({b}))", exact
        if isinstance(cond, Binary) and cond.op in _NEGATE:
            op = _NEGATE[cond.op] if negate else cond.op
            a, b = model.isl_of(cond.a, sm.coord), model.isl_of(cond.b, sm.coord)
            return (f"({a} < {b} or {a} > {b})" if op == "ne" else f"{a} {_SYMBOL[op]} {b}"), True
    except NotAffine:
        return None, False
    return None, False


def _guarded_reads(e: Expr, guard: tuple, seen: set) -> Iterator[tuple[TensorRead, tuple]]:
    """Every tensor read of ``e`` with the conditions (expressions, polarity) under which it runs; a
    subexpression shared in the DAG is visited once per guard."""
    visit = (id(e), tuple((id(c), holds) for c, holds in guard))
    if visit in seen:
        return
    seen.add(visit)
    if isinstance(e, TensorRead):
        yield e, guard
        for idx in e.indices:
            yield from _guarded_reads(idx, guard, seen)
    elif isinstance(e, Select):
        yield from _guarded_reads(e.cond, guard, seen)
        yield from _guarded_reads(e.true_value, guard + ((e.cond, True),), seen)
        yield from _guarded_reads(e.false_value, guard + ((e.cond, False),), seen)
    elif isinstance(e, Reduce):
        inner = guard if e.where is None else guard + ((e.where, True),)
        if e.where is not None:
            yield from _guarded_reads(e.where, guard, seen)
        yield from _guarded_reads(e.source, inner, seen)
    elif isinstance(e, Binary) and e.op in (BinOp.AND, BinOp.OR):
        yield from _guarded_reads(e.a, guard, seen)
        yield from _guarded_reads(e.b, guard + ((e.a, e.op == BinOp.AND),), seen)
    else:
        for child in e.children():
            yield from _guarded_reads(child, guard, seen)
