"""Fuse over a symbolic extent (``tesched/poly/fused.py``): ``fuse(i, j)`` with ``j`` over a size ``n``,
then ``parallel``, ``split``, ``vectorize``, ``compute_at`` at the fused loop; every kernel against NumPy at
several run-time sizes (1 included; sizes are positive, and an extent ``n - 1`` gives empty loops)."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.poly.fused import fused_groups
from tesched.schedule.kinds import LoopKind

SIZES = [(1, 1), (1, 5), (4, 1), (3, 7), (17, 9)]


def _scale(m, n):
    A = ts.placeholder((m, n), name="A")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return A, B


def test_groups_replace_the_fused_loop_by_the_loops_it_fuses():
    m, n = ts.var("m"), ts.var("n")
    A, B = _scale(m, n)
    s = ts.create_schedule(B.op)
    i, j = B.op.axis
    fused = s[B].fuse(i, j)
    s[B].parallel(fused)
    leaves, groups, kept_out = fused_groups(s[B], s[B].extents())
    assert leaves == [i, j] and len(groups) == 1 and id(fused) in kept_out
    assert groups[0].components == (i, j) and groups[0].check_kind is LoopKind.PARALLEL and not groups[0].plain


def test_a_fuse_over_a_constant_extent_stays_in_the_model():
    n = ts.var("n")
    A, B = _scale(n, 4)
    s = ts.create_schedule(B.op)
    s[B].fuse(*B.op.axis)
    leaves, groups, kept_out = fused_groups(s[B], s[B].extents())
    assert leaves == s[B].leaf_iter_vars and groups == [] and kept_out == set()


def test_parallel_fuse_of_two_symbolic_loops(rand):
    m, n = ts.var("m"), ts.var("n")
    A, B = _scale(m, n)
    s = ts.create_schedule(B.op)
    s[B].parallel(s[B].fuse(*B.op.axis))
    text = str(ts.lower(s, [A, B]))
    assert "parallel for i.j.fused in [0, int64(m) * int64(n))" in text
    assert "let i = i.j.fused // int64(n)" in text and "let j = i.j.fused % int64(n)" in text
    f = ts.build(s, [A, B])
    for size in SIZES:
        a = rand(size)
        np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_fuse_of_three_loops_with_a_symbolic_middle_extent(rand):
    n = ts.var("n")
    A = ts.placeholder((3, n, 4), name="A")
    B = ts.compute((3, n, 4), lambda i, j, c: A[i, j, c] - float(1), name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(s[B].fuse(*B.op.axis))
    assert "parallel for i.j.fused.c.fused" in str(ts.lower(s, [A, B]))
    f = ts.build(s, [A, B])
    for n_ in (1, 2, 9):
        a = rand((3, n_, 4))
        np.testing.assert_allclose(f(a), a - 1, rtol=1e-6)


def test_split_of_the_fused_loop_parallel_outer_vectorized_inner(rand):
    m, n = ts.var("m"), ts.var("n")
    A, B = _scale(m, n)
    s = ts.create_schedule(B.op)
    outer, inner = s[B].split(s[B].fuse(*B.op.axis), factor=8)
    s[B].parallel(outer)
    s[B].vectorize(inner)
    text = str(ts.lower(s, [A, B]))
    assert "parallel for i.j.fused.outer in [0, (int64(m) * int64(n) + 7) // 8)" in text
    # each block runs as stretches of j, one row at a time: consecutive j, no division per element
    assert "for i.j.fused.row in [8 * i.j.fused.outer // int64(n), " in text and "let i = i.j.fused.row" in text
    assert "vectorized for j in [max(8 * i.j.fused.outer - i.j.fused.row * int64(n), 0), " in text
    assert "%" not in text
    f = ts.build(s, [A, B])
    for size in SIZES + [(8, 1), (2, 4)]:
        a = rand(size)
        np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_empty_inner_extent_runs_no_iteration(rand):
    """``n - 1`` is 0 for ``n = 1``: the product of the trip counts is 0 (and never negative)."""
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    B = ts.compute((m, n - 1), lambda i, j: A[i, j] + A[i, j + 1], name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(s[B].fuse(*B.op.axis))
    f = ts.build(s, [A, B])
    for size in [(3, 1), (1, 2), (5, 6)]:
        a = rand(size)
        np.testing.assert_allclose(f(a), a[:, :-1] + a[:, 1:], rtol=1e-6)


def test_compute_at_the_parallel_fused_loop_with_a_halo(rand):
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n + 2), name="A")
    P = ts.compute((m, n + 2), lambda i, j: A[i, j] * 3.0, name="P")
    C = ts.compute((m, n), lambda i, j: P[i, j] + P[i, j + 1] + P[i, j + 2], name="C")
    s = ts.create_schedule(C.op)
    fused = s[C].fuse(*C.op.axis)
    s[C].parallel(fused)
    s[P].compute_at(s[C], fused)
    text = str(ts.lower(s, [A, C]))
    assert text.index("parallel for i.j.fused") < text.index("produce P")
    f = ts.build(s, [A, C])
    for size in [(1, 3), (4, 3), (3, 12)]:
        a = rand(size)
        p = a * 3
        np.testing.assert_allclose(f(a), p[:, :-2] + p[:, 1:-1] + p[:, 2:], rtol=1e-5)


def test_compute_at_the_inner_part_of_a_split_fused_loop(rand):
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    P = ts.compute((m, n), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((m, n), lambda i, j: P[i, j] * P[i, j], name="C")
    s = ts.create_schedule(C.op)
    outer, inner = s[C].split(s[C].fuse(*C.op.axis), factor=4)
    s[C].parallel(outer)
    s[P].compute_at(s[C], inner)
    f = ts.build(s, [A, C])
    for size in SIZES:
        a = rand(size)
        np.testing.assert_allclose(f(a), (a + 1) ** 2, rtol=1e-5)


def test_a_symbolic_fuse_of_a_producer_computed_at_its_consumer(rand):
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    P = ts.compute((m, n), lambda i, j: A[i, j] * 2.0, name="P")
    C = ts.compute((m,), lambda i: P[i, 0] + P[i, n - 1], name="C")
    s = ts.create_schedule(C.op)
    s[P].compute_at(s[C], C.op.axis[0])
    s[P].parallel(s[P].fuse(*P.op.axis))
    f = ts.build(s, [A, C])
    for size in SIZES:
        a = rand(size)
        np.testing.assert_allclose(f(a), 2 * a[:, 0] + 2 * a[:, -1], rtol=1e-6)


def test_matmul_with_fused_symbolic_output_loops(rand):
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, 6), name="A")
    B = ts.placeholder((6, n), name="B")
    k = ts.reduce_axis((0, 6), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].parallel(s[C].fuse(*C.op.axis))
    f = ts.build(s, [A, B, C])
    for mm, nn in SIZES:
        a, b = rand((mm, 6)), rand((6, nn))
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5)


def test_fused_symbolic_reduction_loops_with_a_loop_hint(rand):
    m, n = ts.var("m"), ts.var("n")
    X = ts.placeholder((4, m, n), name="X")
    r1, r2 = ts.reduce_axis((0, m), name="r1"), ts.reduce_axis((0, n), name="r2")
    S = ts.compute((4,), lambda i: ts.sum(X[i, r1, r2], axis=[r1, r2]), name="S")
    s = ts.create_schedule(S.op)
    s[S].pragma(s[S].fuse(r1, r2), "unroll", 4)
    assert "for r1.r2.fused in [0, int64(m) * int64(n)) pragma(unroll=4)" in str(ts.lower(s, [X, S]))
    f = ts.build(s, [X, S])
    for size in SIZES:
        x = rand((4,) + size)
        np.testing.assert_allclose(f(x), x.sum(axis=(1, 2)), rtol=1e-5)


def test_a_serial_symbolic_fuse_stays_a_nest(rand):
    """Without a kind or hint the fused loop's order is the nest's: no division is generated."""
    m, n = ts.var("m"), ts.var("n")
    A, B = _scale(m, n)
    s = ts.create_schedule(B.op)
    s[B].split(s[B].fuse(*B.op.axis), factor=4)
    text = str(ts.lower(s, [A, B]))
    assert "//" not in text and "for i in [0, m)" in text and "for j in [0, n)" in text
    f = ts.build(s, [A, B])
    for size in SIZES:
        a = rand(size)
        np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_fused_output_loops_inside_the_reduction_loop(rand):
    """The reduction's init gets its own copy of the fused loop, collapsed like the update's."""
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, 4), name="A")
    B = ts.placeholder((4, n), name="B")
    k = ts.reduce_axis((0, 4), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(k, i, j)
    s[C].parallel(s[C].fuse(i, j))
    assert str(ts.lower(s, [A, B, C])).count("parallel for i.j.fused") == 2
    f = ts.build(s, [A, B, C])
    for mm, nn in SIZES:
        a, b = rand((mm, 4)), rand((4, nn))
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5)


def test_a_fuse_of_a_split_loop_in_reversed_order_is_refused_when_parallel(rand):
    """``fuse(i.inner, i.outer)``: how far ``i.outer`` runs depends on ``i.inner`` (not a rectangle), so the
    loops cannot become one parallel loop; serial, they stay a nest and compute the right values."""
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1.0, name="B")
    for parallel in (True, False):
        s = ts.create_schedule(B.op)
        outer, inner = s[B].split(B.op.axis[0], factor=5)
        s[B].reorder(inner, outer)
        fused = s[B].fuse(inner, outer)
        if parallel:
            s[B].parallel(fused)
            with pytest.raises(ts.LoweringError, match=r"stage B: loop i.inner.i.outer.fused \(the fuse of i.inner, "
                                                       r"i.outer\) cannot be generated as one loop: the bounds of "
                                                       r"loop i.outer depend on the enclosing loop values"):
                ts.lower(s, [A, B])
        else:
            f = ts.build(s, [A, B])
            for size in (1, 4, 12):
                a = rand((size,))
                np.testing.assert_allclose(f(a), a + 1, rtol=1e-6)


@functools.cache
def _random_kernel(fuse_three: bool, factor: int | None, kinds: tuple[str, str], at: str):
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n, 2), name="A")
    P = ts.compute((m, n, 2), lambda i, j, c: A[i, j, c] * 2.0, name="P")
    C = ts.compute((m, n, 2), lambda i, j, c: P[i, j, c] + P[i, j, 1 - c], name="C")
    s = ts.create_schedule(C.op)
    i, j, c = C.op.axis
    fused = s[C].fuse(i, j, c) if fuse_three else s[C].fuse(i, j)
    loops = [fused] if factor is None else list(s[C].split(fused, factor=factor))
    for loop, kind in zip(loops, kinds):
        if kind != "serial":
            getattr(s[C], kind)(loop)
    if at == "inline":
        s[P].compute_inline()
    elif at == "fused":
        s[P].compute_at(s[C], loops[-1])
    return ts.build(s, [A, C])


@settings(max_examples=25, deadline=None)
@given(fuse_three=st.booleans(), factor=st.sampled_from([None, 1, 3, 8]),
       kinds=st.sampled_from([("parallel", "vectorize"), ("parallel", "serial"), ("serial", "vectorize"),
                              ("serial", "serial"), ("vectorize", "serial")]),
       at=st.sampled_from(["root", "inline", "fused"]),
       m=st.integers(1, 9), n=st.integers(1, 11), seed=st.integers(0, 2**16))
def test_random_schedules_of_a_symbolic_fuse_match_numpy(fuse_three, factor, kinds, at, m, n, seed):
    if factor is None and kinds[0] == "serial" and kinds[1] != "serial":
        kinds = ("vectorize", "serial")
    if factor is not None and kinds[0] == "vectorize":
        kinds = ("serial", "vectorize")
    f = _random_kernel(fuse_three, factor, kinds, at)
    a = np.random.default_rng(seed).random((m, n, 2), dtype=np.float32)
    p = a * 2
    np.testing.assert_allclose(f(a), p + p[:, :, ::-1], rtol=1e-6)


def test_parallel_fused_loop_carrying_a_dependence_is_refused():
    n = ts.var("n")
    A = ts.placeholder((4, n), name="A")
    P = ts.compute((4, n), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((4, n), lambda i, j: P[i, j] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    fused = s[C].fuse(*C.op.axis)
    s[C].parallel(fused)
    s[P].compute_at(s[C], fused)
    s[P].store_root()
    with pytest.raises(ts.ScheduleError, match=r"store_root of P: loop i.j.fused \(the fuse of i, j\) of stage C "
                                               r"is parallel.*store P at C.i.j.fused or inside it"):
        ts.lower(s, [A, C])


def test_placing_a_stage_at_the_outer_part_of_a_split_fused_loop_is_refused():
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    P = ts.compute((m, n), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((m, n), lambda i, j: P[i, j] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    outer, inner = s[C].split(s[C].fuse(*C.op.axis), factor=4)
    s[P].compute_at(s[C], outer)
    with pytest.raises(ts.ScheduleError, match=r"stage C: loop i.j.fused.outer splits i.j.fused .*at "
                                               r"i.j.fused.inner or at a loop outside"):
        ts.lower(s, [A, C])


def test_split_parts_of_a_symbolic_fuse_must_stay_together():
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n, 3), name="A")
    B = ts.compute((m, n, 3), lambda i, j, c: A[i, j, c] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    i, j, c = B.op.axis
    outer, inner = s[B].split(s[B].fuse(i, j), factor=4)
    s[B].reorder(outer, c, inner)
    with pytest.raises(ts.ScheduleError, match=r"stage B: loops i.j.fused.outer and i.j.fused.inner split "
                                               r"i.j.fused.*next to each other"):
        ts.lower(s, [A, B])


DOT_SRC = r"""
static void dot4(const float *a, int64_t sa, const float *b, int64_t sb, float *c, int64_t sc) {
  float acc = 0;
  for (int k = 0; k < 4; k++) acc += a[k * sa] * b[k * sb];
  c[0] = acc;
}
"""


def test_tensorize_of_a_stage_with_a_symbolic_fuse_is_refused():
    a, b = ts.placeholder((4,), name="a"), ts.placeholder((4,), name="b")
    k = ts.reduce_axis((0, 4), name="k")
    c = ts.compute((1,), lambda i: ts.sum(a[k] * b[k], axis=k), name="c")
    dot = ts.decl_tensor_intrin(c.op, ts.CIntrinsic(source=DOT_SRC, body="dot4"), name="dot4")
    m, n = ts.var("m"), ts.var("n")
    X = ts.placeholder((m, n, 4), name="X")
    r = ts.reduce_axis((0, 4), name="r")
    Z = ts.compute((m, n, 1), lambda i, j, u: ts.sum(X[i, j, r] * X[i, j, r], axis=r), name="Z")
    s = ts.create_schedule(Z.op)
    i, j, u = Z.op.axis
    s[Z].parallel(s[Z].fuse(i, j))
    s[Z].tensorize(u, dot)
    with pytest.raises(ts.TensorizeError, match=r"tensorize of Z at u: the stage fuses loops over a symbolic "
                                                r"extent \(i.j.fused \(the fuse of i, j\)\)"):
        ts.lower(s, [X, Z])
