"""Collapsing the loops of a fuse over a symbolic extent (``tesched/poly/collapse.py``) on hand-made loop
nests: one loop over the product of the trip counts, each component recovered by ``//`` and ``%`` (the
recovered values are checked by interpreting the collapsed nest), and a clear error where the nest is not
perfectly nested and rectangular."""
import itertools

import pytest

import tesched as ts
from tesched.errors import LoweringError
from tesched.ir import nodes as ir
from tesched.poly.collapse import collapse_fused
from tesched.poly.fused import FusedGroup
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Expr, Var
from tesched.te.tensor import IterType, IterVar, Range


def _i(v: int) -> Const:
    return Const(v, "int64")


def _group(components, kinds=(LoopKind.PARALLEL,), factor=None) -> FusedGroup:
    fused = IterVar(Range(0, 1), ".".join(c.name for c in components) + ".fused", IterType.DATA_PAR)
    pieces = (fused,) if factor is None else (IterVar(None, fused.name + ".outer", IterType.DATA_PAR),
                                              IterVar(None, fused.name + ".inner", IterType.DATA_PAR))
    return FusedGroup("S", fused, tuple(components), pieces, factor, tuple(kinds), tuple(() for _ in pieces),
                      tuple("" for _ in pieces))


def _eval(e: Expr, env: dict) -> int:
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[id(e)]
    assert isinstance(e, Binary), e
    a, b = _eval(e.a, env), _eval(e.b, env)
    ops = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__, "floordiv": int.__floordiv__,
           "floormod": int.__mod__, "min": min, "max": max}
    return ops[e.op](a, b)


def _run(s: ir.Stmt, env: dict, seen: list, marks: dict) -> None:
    if isinstance(s, ir.For):
        for v in range(_eval(s.begin, env), _eval(s.end, env), s.step):
            _run(s.body, {**env, id(s.var): v}, seen, marks)
    elif isinstance(s, ir.LetStmt):
        _run(s.body, {**env, id(s.var): _eval(s.value, env)}, seen, marks)
    elif isinstance(s, ir.Block) and id(s) in marks:
        seen.append(tuple(env[id(v)] for v in marks[id(s)]))
    else:
        raise AssertionError(f"unexpected {s}")


def _nest(bounds, group_vars):
    """Loops over ``bounds`` (begin, end expressions) around a leaf; the leaf's id -> the loop variables."""
    loops = [ir.LoopVar(v.name) for v in group_vars]
    leaf = ir.Block([])
    body: ir.Stmt = leaf
    for var, (lo, hi) in reversed(list(zip(loops, bounds))):
        body = ir.For(var, lo, hi, LoopKind.SERIAL, body)
    return body, loops, {id(leaf): loops}


@pytest.mark.parametrize("factor", [None, 3])
@pytest.mark.parametrize("extents", [(2, 3), (1, 4), (3, 1), (0, 5), (4, 0), (2, 3, 2)])
def test_collapsed_loop_runs_every_point_in_order(extents, factor):
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ijk"[:len(extents)]]
    size = Var("n", "int64")
    bounds = [(_i(1), size + (e + 1) if k == 0 else _i(e + 1)) for k, e in enumerate(extents)]
    body, loops, marks = _nest(bounds, variables)
    group = _group(variables, (LoopKind.PARALLEL, LoopKind.VECTORIZED)[:1 if factor is None else 2], factor)
    out = collapse_fused(body, {id(v): group for v in loops})
    assert isinstance(out, ir.For) and out.kind is LoopKind.PARALLEL and out.var.name.endswith(".fused" if factor
                                                                                              is None else ".outer")
    for n in (0, 2):
        seen: list = []
        _run(out, {id(size): n}, seen, marks)
        ranges = [range(1, n + e + 1 if k == 0 else e + 1) for k, e in enumerate(extents)]
        assert seen == list(itertools.product(*ranges))


def test_plain_group_stays_a_nest():
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ij"]
    body, loops, _ = _nest([(_i(0), _i(2)), (_i(0), _i(3))], variables)
    out = collapse_fused(body, {id(v): _group(variables, (LoopKind.SERIAL,)) for v in loops})
    assert isinstance(out, ir.For) and out.var is loops[0] and isinstance(out.body, ir.For)


def test_bounds_depending_on_an_outer_component_are_refused():
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ij"]
    outer = ir.LoopVar("i")
    inner = ir.LoopVar("j")
    body = ir.For(outer, _i(0), _i(4), LoopKind.SERIAL, ir.For(inner, _i(0), outer + 1, LoopKind.SERIAL, ir.Block([])),
                  stage="S")
    group = _group(variables)
    with pytest.raises(LoweringError, match=r"stage S: loop i.j.fused \(the fuse of i, j\) cannot be generated as "
                                            r"one loop: the bounds of loop j depend on the enclosing loop values"):
        collapse_fused(body, {id(outer): group, id(inner): group})


def test_a_guard_between_the_components_is_refused():
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ij"]
    outer, inner = ir.LoopVar("i"), ir.LoopVar("j")
    guarded = ir.IfThenElse(Binary("lt", outer, _i(2), "bool"),
                            ir.For(inner, _i(0), _i(3), LoopKind.SERIAL, ir.Block([])))
    body = ir.For(outer, _i(0), _i(4), LoopKind.SERIAL, guarded)
    group = _group(variables)
    with pytest.raises(LoweringError, match=r"loop i.j.fused .*with a guard or other statements between them"):
        collapse_fused(body, {id(outer): group, id(inner): group})


def test_a_statement_between_the_components_is_refused():
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ij"]
    outer, inner = ir.LoopVar("i"), ir.LoopVar("j")
    between = ir.Block([ir.Block([]), ir.For(inner, _i(0), _i(3), LoopKind.SERIAL, ir.Block([]))])
    body = ir.For(outer, _i(0), _i(4), LoopKind.SERIAL, between)
    group = _group(variables)
    with pytest.raises(LoweringError, match=r"keep the fused loop serial"):
        collapse_fused(body, {id(outer): group, id(inner): group})


def test_size_variables_are_trip_counts_without_max():
    n = ts.var("n")
    variables = [IterVar(Range(0, 1), name, IterType.DATA_PAR) for name in "ij"]
    body, loops, _ = _nest([(_i(0), n), (_i(0), n)], variables)
    out = collapse_fused(body, {id(v): _group(variables) for v in loops})
    assert isinstance(out, ir.For) and "max" not in str(out.end)
