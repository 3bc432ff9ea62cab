"""Domains of stages stored outside the loop they are computed at (sliding windows) and of bounded stages.

Every kernel is compared with NumPy; the points a producer computes are counted from the lowered model
(isl card of its statement's domain), so a sliding window that recomputes shows up as a count, not as a
timing."""
from __future__ import annotations

import islpy as isl
import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.arith.linear import constant_difference
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.poly import domains
from tesched.poly.buffers import computed_points
from .helpers import model_of


def blur(n: int, m: int):
    """A 3x3 box blur as two 3-tap passes (Halide's lesson 5/8 pipeline), without borders."""
    A = ts.placeholder((n + 2, m + 2), name="A")
    bx = ts.compute((n + 2, m), lambda y, x: A[y, x] + A[y, x + 1] + A[y, x + 2], name="blur_x")
    by = ts.compute((n, m), lambda y, x: bx[y, x] + bx[y + 1, x] + bx[y + 2, x], name="blur_y")
    return A, bx, by


def blur_ref(a: np.ndarray) -> np.ndarray:
    bx = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    return bx[:-2] + bx[1:-1] + bx[2:]


def evaluations(func, stage: str) -> int:
    """How many times the lowered function evaluates ``stage``: the points of its statement's domain."""
    sm = next(sm for sm in func.model.stages if sm.name == stage)
    return int(sm.main.domain.count_val().to_python())


def build_and_check(s, A, out, ref_fn, rand, shape):
    f = ts.build(s, [A, out])
    a = rand(shape)
    np.testing.assert_allclose(f(a), ref_fn(a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, m", [(16, 12), (13, 7)])
def test_store_root_slides_and_computes_each_row_once(n, m, rand):
    A, bx, by = blur(n, m)
    s = ts.create_schedule(by.op)
    s[bx].store_root()
    s[bx].compute_at(s[by], s[by].op.axis[0])
    func = ts.lower(s, [A, by])
    assert evaluations(func, "blur_x") == (n + 2) * m        # every point once, no recomputed halo
    assert func.redundancy["blur_x"] == pytest.approx(1.0)
    buf = next(sm.buffer for sm in func.model.stages if sm.name == "blur_x")
    assert buf.folds == {0: 4} and buf.shape == [4, m]      # a circular buffer of 4 rows
    build_and_check(s, A, by, blur_ref, rand, (n + 2, m + 2))


def test_compute_at_alone_recomputes_the_halo(rand):
    A, bx, by = blur(16, 8)
    s = ts.create_schedule(by.op)
    s[bx].compute_at(s[by], s[by].op.axis[0])
    func = ts.lower(s, [A, by])
    assert evaluations(func, "blur_x") == 3 * 16 * 8          # three rows per output row
    build_and_check(s, A, by, blur_ref, rand, (18, 10))


def test_sliding_window_producer_count_at_2048_is_within_five_percent():
    A, bx, by = blur(2048, 2048)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    yo, yi = s[by].split(y, factor=64)
    s[by].parallel(yo)
    s[bx].store_at(s[by], yo)
    s[bx].compute_at(s[by], yi)
    func = ts.lower(s, [A, by])
    sm = next(sm for sm in func.model.stages if sm.name == "blur_x")
    points = computed_points(func.model, sm)
    assert points == 2048 * (2048 + 2 * 32)                # 66 rows per strip of 64: the strips' halos
    assert points <= 1.05 * 2050 * 2048


@pytest.mark.parametrize("schedule", ["strips", "tiles", "inner_x", "store_x", "unrolled"])
def test_store_at_levels_match_numpy(schedule, rand):
    A, bx, by = blur(19, 13)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    if schedule == "strips":          # Halide's parallel strips: slide within each strip
        yo, yi = s[by].split(y, factor=8)
        s[by].parallel(yo)
        xo, xi = s[by].split(x, factor=4)
        s[by].vectorize(xi)
        s[bx].store_at(s[by], yo)
        s[bx].compute_at(s[by], yi)
    elif schedule == "tiles":
        yo, xo, yi, xi = s[by].tile(y, x, 8, 5)
        s[bx].store_at(s[by], xo)
        s[bx].compute_at(s[by], yi)
    elif schedule == "unrolled":      # an unrolled loop between storage and computation runs in order
        yo, yi = s[by].split(y, factor=4)
        s[by].unroll(yi)
        s[bx].store_at(s[by], yo)
        s[bx].compute_at(s[by], yi)
    elif schedule == "inner_x":       # storage at the root, computed per point: slides along y.inner
        s[by].split(y, factor=3)
        s[bx].store_root()
        s[bx].compute_at(s[by], x)
    else:                             # slides along x: nothing to reuse (each x needs a new column)
        s[bx].store_at(s[by], y)
        s[bx].compute_at(s[by], x)
    build_and_check(s, A, by, blur_ref, rand, (21, 15))


def test_store_at_the_compute_level_is_compute_at(rand):
    A, bx, by = blur(9, 6)
    s = ts.create_schedule(by.op)
    y = s[by].op.axis[0]
    s[bx].compute_at(s[by], y)
    s[bx].store_at(s[by], y)
    func = ts.lower(s, [A, by])
    assert evaluations(func, "blur_x") == 3 * 9 * 6
    build_and_check(s, A, by, blur_ref, rand, (11, 8))


def test_three_stage_chain_slides_both_producers(rand):
    n, m = 12, 9
    A = ts.placeholder((n + 4, m), name="A")
    B = ts.compute((n + 4, m), lambda y, x: A[y, x] * 2.0, name="B")
    C = ts.compute((n + 2, m), lambda y, x: B[y, x] + B[y + 1, x] + B[y + 2, x], name="C")
    D = ts.compute((n, m), lambda y, x: C[y, x] - C[y + 2, x], name="D")
    s = ts.create_schedule(D.op)
    y = s[D].op.axis[0]
    s[C].store_root()
    s[C].compute_at(s[D], y)
    s[B].store_root()
    s[B].compute_at(s[D], y)
    func = ts.lower(s, [A, D])
    assert evaluations(func, "B") == (n + 4) * m and evaluations(func, "C") == (n + 2) * m
    a = rand((n + 4, m))
    c = 2 * a[:-2] + 2 * a[1:-1] + 2 * a[2:]
    np.testing.assert_allclose(ts.build(s, [A, D])(a), c[:-2] - c[2:], rtol=1e-5, atol=1e-5)


def test_growing_window_is_not_folded(rand):
    n, m = 10, 4
    A = ts.placeholder((n + 1, m), name="A")
    P = ts.compute((n + 1, m), lambda y, x: A[y, x] + 1.0, name="P")
    Q = ts.compute((n, m), lambda y, x: P[0, x] + P[y + 1, x], name="Q")   # row 0 stays live throughout
    s = ts.create_schedule(Q.op)
    s[P].store_root()
    s[P].compute_at(s[Q], s[Q].op.axis[0])
    func = ts.lower(s, [A, Q])
    buf = next(sm.buffer for sm in func.model.stages if sm.name == "P")
    assert buf.folds == {} and buf.shape == [n + 1, m]
    assert evaluations(func, "P") == (n + 1) * m
    build_and_check(s, A, Q, lambda a: (a[0] + 1.0) + (a[1:] + 1.0), rand, (n + 1, m))


def test_parallel_loop_between_storage_and_computation_is_refused():
    A, bx, by = blur(16, 8)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    yo, yi = s[by].split(y, factor=4)
    s[by].parallel(yo)
    s[bx].store_root()
    s[bx].compute_at(s[by], yi)
    with pytest.raises(ts.ScheduleError, match=r"store_root of blur_x: loop y\.outer of stage blur_y is "
                                               r"parallel.*sliding window.*in order"):
        ts.lower(s, [A, by])


def test_vectorized_loop_between_storage_and_computation_is_refused():
    A, bx, by = blur(8, 8)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    s[by].vectorize(x)
    s[bx].store_at(s[by], y)
    s[bx].compute_at(s[by], x)
    with pytest.raises(ts.ScheduleError, match=r"store_at of blur_x: loop x of stage blur_y is vectorized"):
        ts.lower(s, [A, by])


def test_storage_inside_the_compute_level_is_refused():
    A, bx, by = blur(8, 8)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    s[bx].compute_at(s[by], y)
    s[bx].store_at(s[by], x)
    with pytest.raises(ts.ScheduleError, match=r"store_at of blur_x at blur_y\.x: blur_x is computed at "
                                               r"blur_y\.y.*at or outside.*blur_y\.y"):
        ts.lower(s, [A, by])


@pytest.mark.parametrize("placement", ["root", "inline"])
def test_store_at_without_compute_at_is_refused(placement):
    A, bx, by = blur(8, 8)
    s = ts.create_schedule(by.op)
    s[bx].store_at(s[by], s[by].op.axis[0])
    if placement == "inline":
        s[bx].compute_inline()
    with pytest.raises(ts.ScheduleError, match=r"store_at of blur_x: blur_x is (computed at the root|inlined)"
                                               r".*need compute_at"):
        ts.lower(s, [A, by])


# bounds -----------------------------------------------------------------------------------------------
def test_bound_on_a_root_producer_computes_only_that_region(rand):
    n = 12
    A = ts.placeholder((n,), name="A")
    P = ts.compute((n,), lambda i: A[i] * 3.0, name="P")
    Q = ts.compute((4,), lambda i: P[i + 2] + P[i + 4], name="Q")
    s = ts.create_schedule(Q.op)
    s[P].bound(P.op.axis[0], 2, 6)
    func = ts.lower(s, [A, Q])
    assert evaluations(func, "P") == 6
    build_and_check(s, A, Q, lambda a: 3 * a[2:6] + 3 * a[4:8], rand, (n,))


def test_bound_smaller_than_what_a_reader_needs_is_refused():
    A = ts.placeholder((12,), name="A")
    P = ts.compute((12,), lambda i: A[i] * 3.0, name="P")
    Q = ts.compute((4,), lambda i: P[i + 2] + P[i + 4], name="Q")
    s = ts.create_schedule(Q.op)
    s[P].bound(P.op.axis[0], 2, 5)
    with pytest.raises(ts.ScheduleError, match=r"bound of P \(i: \[2, 7\)\): Q \(reading P\[i \+ 4\]\) "
                                               r"requests P\[7\]"):
        ts.lower(s, [A, Q])


def test_reads_of_a_bounded_producer_count_only_where_their_guard_holds(rand):
    n = 10
    A = ts.placeholder((n,), name="A")
    P = ts.compute((n,), lambda i: A[i] + 1.0, name="P")
    Q = ts.compute((n,), lambda i: ts.if_then_else(ts.all(i >= 2, i < 7), P[i], 0.0), name="Q")
    s = ts.create_schedule(Q.op)
    s[P].bound(P.op.axis[0], 2, 5)
    assert evaluations(ts.lower(s, [A, Q]), "P") == 5
    build_and_check(s, A, Q, lambda a: np.where((np.arange(n) >= 2) & (np.arange(n) < 7), a + 1.0, 0.0),
                    rand, (n,))


def test_bound_extent_of_a_compute_at_producer_fixes_its_region(rand):
    A, bx, by = blur(10, 6)
    s = ts.create_schedule(by.op)
    s[bx].compute_at(s[by], s[by].op.axis[0])
    s[bx].bound_extent(bx.op.axis[0], 4)         # one row more than the 3 each iteration needs
    func = ts.lower(s, [A, by])
    buf = next(sm.buffer for sm in func.model.stages if sm.name == "blur_x")
    assert buf.shape == [4, 6]
    build_and_check(s, A, by, blur_ref, rand, (12, 8))


def test_bound_extent_smaller_than_the_footprint_is_refused():
    A, bx, by = blur(10, 6)
    s = ts.create_schedule(by.op)
    s[bx].compute_at(s[by], s[by].op.axis[0])
    s[bx].bound_extent(bx.op.axis[0], 2)
    with pytest.raises(ts.ScheduleError, match=r"bound of blur_x \(y: extent 2\): the loop blur_y\.y it is "
                                               r"computed at requests blur_x\[\d+, \d+\]"):
        ts.lower(s, [A, by])


def test_bound_on_a_compute_at_producer_with_a_fixed_region(rand):
    A, bx, by = blur(6, 8)
    s = ts.create_schedule(by.op)
    s[bx].compute_at(s[by], s[by].op.axis[0])
    s[bx].bound(bx.op.axis[1], 0, 8)             # the whole row at every iteration
    func = ts.lower(s, [A, by])
    assert evaluations(func, "blur_x") == 3 * 6 * 8
    build_and_check(s, A, by, blur_ref, rand, (8, 10))


def test_bound_on_a_symbolic_output_that_may_exceed_it_is_refused():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].bound(B.op.axis[0], 0, 16)
    with pytest.raises(ts.ScheduleError, match=r"bound of B \(i: \[0, 16\)\): the kernel's output requests "
                                               r"B\[16\]"):
        ts.lower(s, [A, B])


# property: random store/compute level pairs -----------------------------------------------------------
LEVELS = ("y.outer", "x.outer", "y.inner", "x.inner")     # the loop order after the reorder below


@st.composite
def storage_plans(draw):
    three = draw(st.booleans())
    factors = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    compute = draw(st.sampled_from(LEVELS))
    store = draw(st.sampled_from(("root",) + LEVELS[:LEVELS.index(compute) + 1]))
    first = None
    if three:
        first = (draw(st.sampled_from(("root", "inline", "at"))), draw(st.booleans()))
    return three, factors, compute, store, first, draw(st.integers(5, 11)), draw(st.integers(3, 9))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=storage_plans())
def test_random_store_and_compute_levels_match_numpy(plan, rand):
    three, (fy, fx), compute, store, first, n, m = plan
    note(f"plan={plan}")
    A = ts.placeholder((n + 4, m + 2), name="A")
    B = ts.compute((n + 4, m + 2), lambda y, x: A[y, x] * 0.5 + 1.0, name="B")
    src = B if three else A
    bx = ts.compute((n + 2, m), lambda y, x: src[y, x] + src[y + 1, x + 1] + src[y + 2, x + 2], name="bx")
    by = ts.compute((n, m), lambda y, x: bx[y, x] - bx[y + 1, x] + 2.0 * bx[y + 2, x], name="by")
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    yo, yi = s[by].split(y, factor=fy)
    xo, xi = s[by].split(x, factor=fx)
    s[by].reorder(yo, xo, yi, xi)
    loops = dict(zip(LEVELS, (yo, xo, yi, xi)))
    s[bx].compute_at(s[by], loops[compute])
    if store == "root":
        s[bx].store_root()
    else:
        s[bx].store_at(s[by], loops[store])
    if three and first is not None:
        where, slide = first
        if where == "inline":
            s[B].compute_inline()
        elif where == "at":
            s[B].compute_at(s[bx], bx.op.axis[0])
            if slide:
                s[B].store_at(s[by], loops[compute])
    f = ts.build(s, [A, by])
    a = rand((n + 4, m + 2))
    b = a * 0.5 + 1.0 if three else a
    bxr = b[:n + 2, :m] + b[1:n + 3, 1:m + 1] + b[2:n + 4, 2:m + 2]
    np.testing.assert_allclose(f(a), bxr[:n] - bxr[1:n + 1] + 2.0 * bxr[2:n + 2], rtol=1e-5, atol=1e-5)


def test_a_stage_computed_inside_a_sliding_window_keeps_its_own_origin(rand):
    # the sliding producer's first iteration computes more rows than the others; the stage computed at
    # its row loop must get the origin of each row (a split of that loop into pieces once copied the
    # allocation with the origin of the first piece: out-of-bounds writes)
    n, m = 9, 5
    A = ts.placeholder((n + 2, m + 2), name="A")
    B = ts.compute((n + 2, m + 2), lambda y, x: A[y, x] * 2.0, name="B")
    bx = ts.compute((n + 2, m), lambda y, x: B[y, x] + B[y, x + 1] + B[y, x + 2], name="blur_x")
    by = ts.compute((n, m), lambda y, x: bx[y, x] + bx[y + 1, x] + bx[y + 2, x], name="blur_y")
    s = ts.create_schedule(by.op)
    s[bx].store_root()
    s[bx].compute_at(s[by], s[by].op.axis[0])
    s[B].compute_at(s[bx], bx.op.axis[0])
    func = ts.lower(s, [A, by])
    assert evaluations(func, "blur_x") == (n + 2) * m
    allocations = [a for a in walk_stmts(func.body) if isinstance(a, ir.Allocate) and a.buffer.name == "B"]
    assert allocations
    for alloc in allocations:        # one row of B: each store's row is the buffer's origin
        stores = [st for st in walk_stmts(alloc.body) if isinstance(st, ir.Store) and st.buffer.name == "B"]
        assert stores and all(constant_difference(st.indices[0], alloc.buffer.offsets[0]) == 0 for st in stores)
    build_and_check(s, A, by, lambda a: blur_ref(2 * a), rand, (n + 2, m + 2))


def test_a_sliding_reduction_initializes_and_accumulates_each_row_once(rand):
    n, m = 11, 7
    A = ts.placeholder((n + 2, m + 3), name="A")
    k = ts.reduce_axis((0, 4), name="k")
    P = ts.compute((n + 2, m), lambda y, x: ts.sum(A[y, x + k], axis=k), name="P")
    Q = ts.compute((n, m), lambda y, x: P[y, x] + P[y + 2, x], name="Q")
    s = ts.create_schedule(Q.op)
    s[P].store_root()
    s[P].compute_at(s[Q], s[Q].op.axis[0])
    func = ts.lower(s, [A, Q])
    sm = next(sm for sm in func.model.stages if sm.name == "P")
    assert int(sm.init.domain.count_val().to_python()) == (n + 2) * m
    assert sm.buffer.folds == {0: 4}

    def ref(a):
        p = sum(a[:, i:i + m] for i in range(4))
        return p[:-2] + p[2:]
    build_and_check(s, A, Q, ref, rand, (n + 2, m + 3))


def test_a_symbolic_height_slides_in_a_constant_circular_buffer(rand):
    N = ts.var("N")
    A = ts.placeholder((N + 2, 6), name="A")
    bx = ts.compute((N + 2, 4), lambda y, x: A[y, x] + A[y, x + 2], name="bx")
    by = ts.compute((N, 4), lambda y, x: bx[y, x] * bx[y + 2, x], name="by")
    s = ts.create_schedule(by.op)
    s[bx].store_root()
    s[bx].compute_at(s[by], s[by].op.axis[0])
    func = ts.lower(s, [A, by])
    buf = next(sm.buffer for sm in func.model.stages if sm.name == "bx")
    assert buf.folds == {0: 4} and buf.shape == [4, 4]
    f = ts.build(s, [A, by])
    for rows in (1, 2, 5, 13):
        a = rand((rows + 2, 6))
        b = a[:, :4] + a[:, 2:]
        np.testing.assert_allclose(f(a), b[:-2] * b[2:], rtol=1e-5)


def test_a_window_sliding_along_both_dimensions_computes_each_point_once(rand):
    n, m = 14, 11
    A = ts.placeholder((n + 2, m + 2), name="A")
    P = ts.compute((n + 2, m + 2), lambda y, x: A[y, x] * 2.0, name="P")
    Q = ts.compute((n, m), lambda y, x: P[y, x] + P[y + 1, x + 1] + P[y + 2, x + 2] + P[y, x + 2], name="Q")
    s = ts.create_schedule(Q.op)
    s[P].store_root()
    s[P].compute_at(s[Q], s[Q].op.axis[1])           # per point of Q: one new point of P (after the first)
    func = ts.lower(s, [A, Q])
    assert evaluations(func, "P") == (n + 2) * (m + 2)
    buf = next(sm.buffer for sm in func.model.stages if sm.name == "P")
    assert buf.folds == {0: 4} and buf.shape == [4, m + 2]
    build_and_check(s, A, Q, lambda a: 2 * (a[:-2, :-2] + a[1:-1, 1:-1] + a[2:, 2:] + a[:-2, 2:]), rand,
                    (n + 2, m + 2))


def test_a_bounded_extent_box_keeps_no_existential_variables(rand):
    """The box of a ``bound_extent`` stage is built from the footprint's per-iteration minimum, defined
    where the footprint is: a projection with existential variables, one copy per bound. Within that
    domain they are implied, so the box (and the statement's domain) has none: isl took seconds on each
    later question about such a domain (a fuzz campaign find, schedules case 1158)."""
    A = ts.placeholder((8, 12), name="A")
    B = ts.compute((8, 12), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    C = ts.compute((8, 12), lambda i, j: B[i, j] * B[i, j] - A[i, j], name="C")
    D = ts.compute((8, 12), lambda i, j: C[i, j] + B[i, j], name="D")
    s = ts.create_schedule(D.op)
    jo, ji = s[D].split(D.op.axis[1], factor=2)
    s[D].reorder(ji, D.op.axis[0], jo)
    s[C].compute_at(s[D], D.op.axis[0])
    _, cjo, cii, _ = s[C].tile(*C.op.axis, 4, 4)
    s[C].fuse(cjo, cii)
    s[B].compute_at(s[D], ji)
    s[B].bound_extent(B.op.axis[1], 12)
    f = ts.build(s, [A, D], name="bounded_extent_box")
    sm = next(sm for sm in f.lowered.model.stages if sm.name == "B")
    pieces = sm.statements[0].domain.get_basic_set_list()
    assert all(pieces.get_at(k).dim(isl.dim_type.div) == 0 for k in range(pieces.n_basic_set())), \
        sm.statements[0].domain
    a = rand((8, 12))
    b = 2 * a + 1
    np.testing.assert_allclose(f(a), b * b - a + b, rtol=1e-5)


# the footprint of the producer B computed at tiles of C's split row-and-reduce fused loop over n rows
# (tests/poly/test_stages.py, the symbolic_rows chain): exact bounds along the row-element axis in 24 pieces
NESTED_FLOORS_FOOTPRINT = (
    "[N0] -> { [i0, i1] -> T0[o0, o1] : 0 <= o0 < N0 and o1 >= 25i1 - 6o0 and 0 <= o1 <= 5 and "
    "o1 <= 24 + 25i1 - 6o0 and -4 - 5i0 + 3o0 + 3o1 <= 15*floor((o0 + o1)/5) <= -5i0 + 3o0 + 3o1 }")


def _between(fp: isl.Map, d: int, low: isl.PwAff, high: isl.PwAff) -> isl.Map:
    """``iteration -> point`` with ``low <= point[d] <= high`` (any other coordinate)."""
    n = fp.dim(isl.dim_type.out)
    box = isl.Map.universe(fp.get_space())
    for bound, cmp in ((low, ">="), (high, "<=")):
        rel = isl.Map(f"[N0] -> {{ [v] -> T0[{', '.join(f'x{k}' for k in range(n))}] : x{d} {cmp} v }}")
        box = box.intersect(isl.Map.from_pw_aff(bound).apply_range(rel))
    return box


def test_bounds_too_complex_to_keep_exact_are_relaxed_to_a_superset():
    fp = isl.Map(NESTED_FLOORS_FOOTPRINT)
    exact = fp.dim_min(1).n_piece() + fp.dim_max(1).n_piece()
    assert exact > domains.BOX_PIECES
    for d in range(2):
        found = domains._extremes(fp, d)
        assert found is not None
        low, high = found
        assert low.n_piece() + high.n_piece() <= domains.BOX_PIECES
        assert fp.is_subset(_between(fp, d, low, high))     # every point read is still computed
    # the rows' bounds (12 pieces) are cheap enough to stay exact
    assert fp.dim_min(0).n_piece() + fp.dim_max(0).n_piece() <= domains.BOX_PIECES
    assert domains._extremes(fp, 0)[0].is_equal(fp.dim_min(0))


@pytest.mark.parametrize("placement", ["compute_at", "store_root", "bound_extent"])
def test_boxes_widened_to_whole_dimensions_still_match_numpy(placement, monkeypatch, rand):
    """With no bound kept exact (as when every footprint is too complex), a producer computes whole
    dimensions of its tensor at each iteration: more work, the same answer."""
    monkeypatch.setattr(domains, "BOX_PIECES", 0)
    A, bx, by = blur(13, 7)
    s = ts.create_schedule(by.op)
    yo, yi = s[by].split(by.op.axis[0], factor=4)
    if placement == "store_root":
        s[bx].store_root()
    if placement == "bound_extent":
        s[bx].bound_extent(bx.op.axis[0], 6)
    s[bx].compute_at(s[by], yo)
    func = ts.lower(s, [A, by])
    if placement == "compute_at":
        assert evaluations(func, "blur_x") == 4 * 15 * 7     # all 15 rows at each of the 4 row tiles
    build_and_check(s, A, by, blur_ref, rand, (15, 9))


def _upsampling(tile: int):
    """A coarse stage ``C`` computed at row tiles of ``tile`` rows of a 2x upsampling ``F`` (reads at ``y // 2``
    and at ``clamp(y // 2 - 1 + 2 * (y % 2), 0, 7)``, Halide's ``[1/4 3/4]``): the schedule, its arguments,
    ``C``'s footprint, the box it must equal, and ``F``'s reference on a random input and that input."""
    A = ts.placeholder((8, 8), name="A")
    C = ts.compute((8, 8), lambda y, x: A[y, x] * 2.0, name="C")
    F = ts.compute((16, 16), lambda y, x: 0.25 * C[ts.clamp(y // 2 - 1 + 2 * (y % 2), 0, 7), x // 2]
                   + 0.75 * C[ts.minimum(y // 2, 7), x // 2], name="F")
    s = ts.create_schedule(F.op)
    yo, _ = s[F].split(F.op.axis[0], tile)
    s[C].compute_at(s[F], yo)
    fp = next(sm for sm in model_of(s, [A, F]).stages if sm.name == "C").footprint
    rows = tile // 2
    box = isl.Map(f"{{ [t] -> {fp.get_tuple_name(isl.dim_type.out)}[y, x] : 0 <= t < {16 // tile} and "
                  f"{rows} * t - 1 <= y <= {rows} * t + {rows} and 0 <= y <= 7 and 0 <= x <= 7 }}")
    a = np.random.default_rng(5).standard_normal((8, 8)).astype(np.float32)
    c = 2 * a
    y = np.arange(16)
    near, far = np.minimum(y // 2, 7), np.clip(y // 2 - 1 + 2 * (y % 2), 0, 7)
    expected = 0.25 * c[far][:, y // 2] + 0.75 * c[near][:, y // 2]
    return s, [A, F], fp, box, a, expected


@pytest.mark.parametrize("tile", [4, 8])
def test_a_resampled_footprint_is_kept_as_its_box_without_floors(tile):
    """A coarse stage computed at row tiles of a 2x upsampling (:func:`_upsampling`): its footprint is
    exactly its box, but isl writes the union of the reads through existential variables, which slowed every
    later step (buffers, the dependence check, the AST). The model keeps the box, in one piece (over two
    tiles too, whose bounds are constants per tile), and the kernel computes the reference."""
    s, args, fp, box, a, expected = _upsampling(tile)
    assert fp.is_equal(box), fp
    assert fp.n_basic_map() == 1 and all(b.dim(isl.dim_type.div) == 0 for b in fp.get_basic_maps()), fp
    np.testing.assert_allclose(ts.build(s, args)(a), expected, rtol=1e-5, atol=1e-6)


def test_a_box_whose_hull_exceeds_the_budget_is_kept_as_it_is(monkeypatch):
    """When isl cannot join a resampled footprint's box into one piece within BOX_BUDGET operations (a
    convex hull through nested floors of split and fused loops took 8 s of a fuzzed schedule's lowering),
    the box is kept in its pieces: the same points, and the kernel computes the reference."""
    def over_budget(self):
        raise isl.Error("maximal number of operations exceeded (simulated)")

    monkeypatch.setattr(isl.Map, "simple_hull", over_budget)
    monkeypatch.setattr(isl.Map, "convex_hull", over_budget)
    s, args, fp, box, a, expected = _upsampling(8)
    assert fp.is_equal(box), fp
    np.testing.assert_allclose(ts.build(s, args)(a), expected, rtol=1e-5, atol=1e-6)
