"""Tests of tesched.poly.astgen: isl AST expressions turned into IR expressions, and the loop nest from
isl's AST generator walked into loop IR with the user's loop names and kinds."""
import islpy as isl
import numpy as np
import pytest

import tesched as ts
from tesched.errors import InternalError
from tesched.ir import nodes as ir
from tesched.poly.tree import ScheduleTree
from tesched.poly.astgen import _plus_one, ast_expr_to_ir, generate_ast
from tesched.te.expr import Binary, Const, Select, Unary, Var

_INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "floordiv": lambda a, b: a // b, "min": min, "max": max,
            "cdiv": lambda a, b: int(a / b), "cmod": lambda a, b: a - b * int(a / b),
            "eq": lambda a, b: a == b, "le": lambda a, b: a <= b, "lt": lambda a, b: a < b,
            "ge": lambda a, b: a >= b, "gt": lambda a, b: a > b,
            "and": lambda a, b: a and b, "or": lambda a, b: a or b}


def evaluate(e, values):
    """Value of an integer IR expression with C semantics for cdiv/cmod (truncating)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return values[e.name]
    if isinstance(e, Unary):
        return -evaluate(e.a, values)
    if isinstance(e, Select):
        return evaluate(e.true_value if evaluate(e.cond, values) else e.false_value, values)
    assert isinstance(e, Binary), e
    return _INT_OPS[e.op](evaluate(e.a, values), evaluate(e.b, values))


@pytest.mark.parametrize("affine, python", [
    ("floor((N + 3)/4)", lambda n: (n + 3) // 4),
    ("min(N, 7) - 2", lambda n: min(n, 7) - 2),
    ("N mod 3", lambda n: n % 3),
    ("-2N + 5", lambda n: -2 * n + 5),
    ("max(2N - 9, 1)", lambda n: max(2 * n - 9, 1)),
])
def test_ast_expressions_become_ir_expressions(affine, python):
    context = isl.Set("[N] -> { : N > 0 }")
    expr = isl.AstBuild.from_context(context).expr_from_pw_aff(isl.PwAff(f"[N] -> {{ [({affine})] }}"))
    converted = ast_expr_to_ir(expr, {"N": Var("n", "int64")})
    for n in range(1, 20):
        assert evaluate(converted, {"n": n}) == python(n), n


def test_unbound_identifier_is_an_internal_error():
    expr = isl.AstBuild.from_context(isl.Set("[N] -> { : }")).expr_from_pw_aff(isl.PwAff("[N] -> { [(N)] }"))
    with pytest.raises(InternalError, match="unbound isl identifier N"):
        ast_expr_to_ir(expr, {})


def test_plus_one_folds_constants():
    n = Var("n", "int64")
    assert _plus_one(Const(4, "int64")).value == 5
    assert _plus_one(Binary("sub", n, Const(1, "int64"), "int64")) is n
    folded = _plus_one(Binary("add", n, Const(2, "int64"), "int64"))
    assert folded.op == "add" and folded.a is n and folded.b.value == 3
    assert evaluate(_plus_one(Binary("mul", n, Const(2, "int64"), "int64")), {"n": 5}) == 11


def test_generate_ast_names_iterators_by_depth():
    domain = isl.UnionSet("{ S[i, j] : 0 <= i < 4 and 0 <= j < 3 }")
    schedule = isl.Schedule.from_domain(domain).insert_partial_schedule(
        isl.MultiUnionPwAff("[{ S[i, j] -> [(i)] }, { S[i, j] -> [(j)] }]"))
    text = generate_ast(ScheduleTree(schedule, schedule, {}, 2), isl.Set("{ : }")).c_text()
    assert "for (int L0 = 0; L0 <= 3; L0 += 1)" in text
    assert "for (int L1 = 0; L1 <= 2; L1 += 1)" in text


def loops_of(stmt):
    """Every For of a loop-IR statement, outermost first."""
    if isinstance(stmt, ir.For):
        return [stmt] + loops_of(stmt.body)
    out = []
    for child in getattr(stmt, "stmts", None) or [getattr(stmt, name, None) for name in
                                                  ("body", "then_case", "else_case")]:
        if child is not None:
            out += loops_of(child)
    return out


def test_loops_keep_user_names_and_kinds():
    A = ts.placeholder((10, 6), name="A")
    B = ts.compute((10, 6), lambda row, col: A[row, col] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    ro, ri = s[B].split(B.op.axis[0], factor=3)            # non-dividing: isl bounds the inner loop
    s[B].parallel(ro)
    s[B].unroll(B.op.axis[1])
    loops = loops_of(ts.lower(s, [A, B]).body)
    assert [(l.var.name, l.kind) for l in loops] == [("row.outer", "parallel"), ("row.inner", "serial"),
                                                     ("col", "unrolled")]
    assert loops[2].extent_hint == 6


def test_single_iteration_loops_become_lets(rand):
    A = ts.placeholder((1, 5), name="A")
    B = ts.compute((1, 5), lambda i, j: A[i, j] + 1.0, name="B")
    lowered = ts.lower(ts.create_schedule(B.op), [A, B])
    assert [l.var.name for l in loops_of(lowered.body)] == ["j"]
    f = ts.build(ts.create_schedule(B.op), [A, B], name="single_row")
    a = rand((1, 5))
    np.testing.assert_allclose(f(a), a + 1)


def test_split_producer_at_a_fused_consumer_loop(rand):
    """Regression: isl's AST generator used to drop half of these producer instances (a single-iteration
    band whose value is a modulo depending on the fused loop); such bands are now left out."""
    A = ts.placeholder((9, 2), name="A")
    P = ts.compute((9, 2), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((9, 2), lambda i, j: P[i, j] * 3.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=2)
    s[C].reorder(io, j, ii)
    s[C].fuse(io, j)
    s[P].split(P.op.axis[0], factor=5)
    s[P].compute_at(s[C], ii)
    f = ts.build(s, [A, C], name="split_producer_fused_consumer")
    a = rand((9, 2))
    np.testing.assert_allclose(f(a), 3 * (a + 1), rtol=1e-6)


@pytest.mark.parametrize("factor", [2, 4])
@pytest.mark.parametrize("parallel", [False, True])
def test_a_producer_needed_by_some_iterations_only_shares_the_consumers_buffer(factor, parallel):
    """R is needed only at io = 0 (C reads it under i < 3). isl's AST generator may peel R's iterations
    out of the io loop; the buffer must stay one scope (it used to be allocated twice, and C read a copy
    never written)."""
    A = ts.placeholder((3,), name="A")
    R = ts.compute((3,), lambda i: A[i] * 2.0, name="R")
    C = ts.compute((8,), lambda i: ts.if_then_else(i < 3, R[i], 0.5), name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=factor)
    s[R].compute_at(s[C], io)
    if parallel:
        s[C].parallel(io)
    f = ts.build(s, [A, C], name=f"peeled_producer_{factor}_{parallel}")
    assert str(f.lowered).count("allocate R") == 1
    a = np.arange(3, dtype=np.float32) + 1
    np.testing.assert_array_equal(f(a), np.r_[2 * a, np.full(5, 0.5, np.float32)])


def _tiled_at_fused():
    """C tiled and computed at D's fused loop: C's loops are left out, their values floors of D's loop."""
    A = ts.placeholder((9, 15), name="A")
    C = ts.compute((9, 15), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
    D = ts.compute((9, 15), lambda i, j: C[i, j] - A[i, j], name="D")
    s = ts.create_schedule(D.op)
    fused = s[D].fuse(*D.op.axis)
    s[C].compute_at(s[D], fused)
    s[C].tile(*C.op.axis, 6, 5)
    return A, D, s


@pytest.mark.parametrize("budget", [None, 1])
def test_coordinates_of_left_out_loops(rand, monkeypatch, budget):
    """Coordinates at each AST leaf: found directly from the iterators (``i // 15``), or, past the operation
    budget, composed from the loop values; both exact. Printed as C indexes them: the one-element region
    of C at its start, D and A at the fused loop's value (``(i // 15) * 15 + i % 15``)."""
    from tesched.poly import astgen
    if budget is not None:
        monkeypatch.setattr(astgen, "DIRECT_COORDINATES_BUDGET", budget)
    A, D, s = _tiled_at_fused()
    text = str(ts.lower(s, [A, D]))
    if budget is None:
        assert "C[0] = A[i.j.fused] * 2.0f + 1.0f" in text and "D[i.j.fused] = C[0] - A[i.j.fused]" in text, text
    f = ts.build(s, [A, D], name=f"left_out_loops_{budget}")
    a = rand((9, 15))
    np.testing.assert_allclose(f(a), a + 1, rtol=1e-6)


def test_iterations_isl_would_leave_out_raise_instead_of_a_wrong_answer(rand):
    """Fusing a reduction loop with a split loop of a stage computed at its reader's loop gives a loop of
    stride 2 whose start depends on the reader's loop; isl's generator runs only its first value. The
    instances are checked against the domain: the lowering fails naming the stage (a fuzz find that
    computed a wrong sum), and the same schedule at the root still matches NumPy."""
    def schedule(attach):
        A = ts.placeholder((11,), name="A")
        k = ts.reduce_axis((2, 4), name="k")
        S = ts.compute((7,), lambda i: ts.sum(A[i + k], axis=k), name="S")
        O = ts.compute((7,), lambda i: S[i] * 2.0, name="O")
        s = ts.create_schedule(O.op)
        if attach:
            s[S].compute_at(s[O], O.op.axis[0])
        io, ii = s[S].split(S.op.axis[0], factor=4)
        s[S].reorder(ii, k, io)
        s[S].fuse(k, io)
        return s, [A, O]
    with pytest.raises(ts.LoweringError, match="stage S: isl's loop generator left out some of its iterations"):
        ts.lower(*schedule(True))
    f = ts.build(*schedule(False))
    a = rand(11)
    np.testing.assert_allclose(f(a), np.array([a[i + 2:i + 4].sum() for i in range(7)]) * 2, rtol=1e-5)


def test_a_fused_tile_computed_inside_a_fused_tile_is_refused_not_miscompiled():
    """Found by the random schedules: the consumer's tile loops fused, the producer tiled by 5, its tile loop
    fused with the inner one and computed at the consumer's inner loop. isl's generator drops iterations of
    the producer over both trees (its domain is strided by a modulo); lowering names the stage instead."""
    A = ts.placeholder((9, 12), name="A")
    P = ts.compute((9, 12), lambda i, j: A[i, j] * 2.0 + 1.0, name="P")
    C = ts.compute((9, 10), lambda i, j: P[i, j] + P[i, j + 1] * 2.0 + P[i, j + 2] * 3.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    io, jo, ii, _ = s[C].tile(i, j, 2, 1)
    s[C].fuse(io, jo)
    _, pjo, pii, _ = s[P].tile(P.op.axis[0], P.op.axis[1], 5, 1)
    s[P].fuse(pjo, pii)
    s[P].compute_at(s[C], ii)
    with pytest.raises(ts.LoweringError, match="stage P: isl's loop generator left out some of its iterations"):
        ts.lower(s, [A, C])


@pytest.mark.parametrize("tree_budget", [None, (("loop values", 1), ("coordinates", 1))])
def test_either_schedule_tree_gives_the_same_loops(rand, monkeypatch, tree_budget):
    """With no isl operations to spare, both trees run out of their budget and the tree over loop values is
    generated without a limit: the same loops as within the budget, the budget lifted afterwards."""
    from tesched.poly import astgen
    A, D, s = _tiled_at_fused()
    within = str(ts.lower(s, [A, D]))
    if tree_budget is not None:
        monkeypatch.setattr(astgen, "TREE_ATTEMPTS", tree_budget)
    assert str(ts.lower(s, [A, D])) == within
    assert isl.DEFAULT_CONTEXT.get_max_operations() == 0
    f = ts.build(s, [A, D], name=f"either_tree_{tree_budget is None}")
    a = rand((9, 15))
    np.testing.assert_allclose(f(a), a + 1, rtol=1e-6)


def test_a_tree_isl_finds_hard_gives_way_to_the_other(run_python, isolated_cache):
    """A fuzz campaign find (schedules case 1916): C tiled, its reduction split, computed at D's fused
    loop. Over loop values isl recovers C's four left-out loops from the fused one as convoluted pieces
    at every statement (seconds, minutes on a busy machine); over coordinates they are two divisions.
    In a child process with a hard timeout, built and compared with NumPy."""
    done = run_python("""
        import numpy as np
        import tesched as ts
        A, B = ts.placeholder((12, 10), name="A"), ts.placeholder((10, 10), name="B")
        bias = ts.placeholder((10,), name="bias")
        k = ts.reduce_axis((0, 10), name="k")
        C = ts.compute((12, 10), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
        D = ts.compute((12, 10), lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="D")
        s = ts.create_schedule(D.op)
        fused = s[D].fuse(*D.op.axis)
        s[C].compute_at(s[D], fused)
        io, jo, ii, ji = s[C].tile(*C.op.axis, 5, 3)
        ko, ki = s[C].split(k, nparts=1)
        s[C].reorder(ji, jo, ii, io, ki, ko)
        f = ts.build(s, [A, B, bias, D], name="tiled_at_fused_matmul")
        rng = np.random.default_rng(0)
        a, b = rng.random((12, 10), dtype=np.float32), rng.random((10, 10), dtype=np.float32)
        c = rng.random(10, dtype=np.float32)
        np.testing.assert_allclose(f(a, b, c), np.maximum(a @ b + c, 0), rtol=1e-4, atol=1e-5)
        print("matches NumPy")
    """)       # the default hang guard (300 s wall): CI machines may be loaded several times over
    assert "matches NumPy" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("loop_needs, coordinate_needs", [(600_000, 30_000), (10**7, 200_000), (60_000, 10**7),
                                                         (10**7, 10**7)])
def test_trees_take_turns_with_growing_budgets(monkeypatch, loop_needs, coordinate_needs):
    """isl operations cost a hundredfold more on one tree than on the other, so the trees take turns with
    growing budgets: the operations spent stay within a small factor of what the cheaper tree needs (a
    tree needing more than every budget is generated without a limit, loop values first)."""
    from tesched.poly import astgen
    spent: list[tuple[str, int]] = []

    def fake(schedule, coordinates, depth, context, budget=0):
        needs = loop_needs if coordinates else coordinate_needs
        spent.append((schedule, min(needs, budget or needs)))
        return None if budget and needs > budget else (schedule, set())

    monkeypatch.setattr(astgen, "_generate", fake)
    tree = type("Tree", (), {"loop_schedule": "loop values", "coordinates": {"S": None},
                             "schedule": "coordinates", "depth": 1, "stage_of": {}})()
    made = generate_ast(tree, isl.Set("{ : }"))
    cheaper = min(loop_needs, coordinate_needs)
    if cheaper <= max(budget for _, budget in astgen.TREE_ATTEMPTS):
        assert made.node == ("loop values" if loop_needs == cheaper else "coordinates")
        assert sum(n for _, n in spent) <= 9 * cheaper, spent
    else:
        assert made.node == "loop values" and spent[-1] == ("loop values", loop_needs)


def test_a_tiled_stage_at_a_loop_uses_the_tree_isl_generates_cheaply(monkeypatch, rand):
    """A fuzz campaign find (schedules case 875): C tiled, its outer tiles fused, computed at D's row loop.
    Over loop values isl ran through 500,000 operations (over a second) before the coordinates were tried;
    they generate it within a small budget, so the other tree never gets a large one."""
    from tesched.poly import astgen
    calls: list[tuple[bool, int, bool]] = []
    generate = astgen._generate

    def record(schedule, coordinates, depth, context, budget=0):
        made = generate(schedule, coordinates, depth, context, budget)
        calls.append((bool(coordinates), budget, made is not None))
        return made

    monkeypatch.setattr(astgen, "_generate", record)
    A, B = ts.placeholder((10, 10), name="A"), ts.placeholder((10, 11), name="B")
    bias = ts.placeholder((11,), name="bias")
    k = ts.reduce_axis((0, 10), name="k")
    C = ts.compute((10, 11), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = ts.compute((10, 11), lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="D")
    s = ts.create_schedule(D.op)
    s[D].reorder(*reversed(D.op.axis))
    s[C].compute_at(s[D], D.op.axis[0])
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 5)
    s[C].reorder(ii, k, ji, jo, io)
    s[C].fuse(jo, io)
    f = ts.build(s, [A, B, bias, D], name="tiled_fused_at_row")
    largest = max(budget for _, budget in astgen.TREE_ATTEMPTS)
    assert calls[-1][2] and all(budget < largest for _, budget, _ in calls), calls
    a, b, c = rand((10, 10)), rand((10, 11)), rand(11)
    np.testing.assert_allclose(f(a, b, c), np.maximum(a @ b + c, 0), rtol=1e-4, atol=1e-5)
