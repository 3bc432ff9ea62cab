"""Vectorized loops with padding selects split into interior and border parts, each explicit SIMD."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def padded(h, w, split=None, name="pad"):
    A = ts.placeholder((h, w), name="A")
    P = ts.compute((h + 2, w + 2), lambda i, j: ts.if_then_else(
        (i >= 1) & (i <= h) & (j >= 1) & (j <= w), A[i - 1, j - 1], 0.0), name="P")
    s = ts.create_schedule(P.op)
    j = s[P].op.axis[1]
    if split:
        _, j = s[P].split(j, split)
    s[P].vectorize(j)
    return ts.build(s, [A, P], name=name)


@pytest.mark.parametrize("h, w, split", [(6, 62, None), (5, 30, 16), (4, 33, 8), (3, 5, None), (3, 40, 7)])
def test_padding_matches_numpy_and_is_vector_code(h, w, split):
    f = padded(h, w, split, name=f"pad_{h}_{w}_{split}")
    a = np.random.default_rng(0).standard_normal((h, w)).astype(np.float32)
    np.testing.assert_array_equal(f(a), np.pad(a, 1))
    if w >= 16:
        assert "ts_vload_f32x" in f.c_source and "omp simd" not in f.c_source


def test_constant_split_points_leave_no_condition_on_the_column():
    f = padded(4, 62, name="pad_const")
    body = f.c_source
    assert "j_2 >= 1" not in body and "ts_vsel" not in body


def test_condition_not_affine_in_the_loop_keeps_the_scalar_loop():
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: ts.if_then_else((i * i) % 7 < 3, A[i], 0.0), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], name="not_affine")
    a = np.arange(64, dtype=np.float32)
    idx = np.arange(64)
    np.testing.assert_array_equal(f(a), np.where((idx * idx) % 7 < 3, a, 0))
    assert "omp simd" in f.c_source


def test_condition_invariant_in_the_loop_is_one_branch_for_all_lanes():
    A = ts.placeholder((8, 32), name="A")
    B = ts.compute((8, 32), lambda i, j: ts.if_then_else(i < 4, A[i, j], A[7 - i, j]), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = ts.build(s, [A, B], name="invariant_select")
    a = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    np.testing.assert_array_equal(f(a), np.where(np.arange(8)[:, None] < 4, a, a[::-1]))
    assert "ts_vload_f32x" in f.c_source and "omp simd" not in f.c_source


def test_condition_moving_with_an_inner_loop_is_not_split():
    """A padded 1-D convolution: the select's flip point depends on the reduction variable inside the
    vectorized loop, so the loop cannot be split outside it (it keeps the scalar loop)."""
    n = 40
    A = ts.placeholder((n,), name="A")
    w = ts.placeholder((3,), name="w")
    r = ts.reduce_axis((0, 3), name="r")
    B = ts.compute((n,), lambda i: ts.sum(ts.if_then_else((i + r >= 1) & (i + r <= n), A[i + r - 1], 0.0) * w[r],
                                         axis=r), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, w, B], name="padded_conv1d")
    rng = np.random.default_rng(4)
    a, k = rng.standard_normal(n).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    padded_a = np.pad(a, 1)
    np.testing.assert_allclose(f(a, k), [padded_a[i:i + 3] @ k for i in range(n)], rtol=1e-5, atol=1e-6)


def test_data_dependent_condition_blends_reads_inside_their_tensors():
    """The condition cannot be split (it reads C); both branches read inside their tensors at every
    point of the loop, so both are plain vector loads and the select a blend."""
    A = ts.placeholder((64,), name="A")
    C = ts.placeholder((64,), name="C")
    B = ts.compute((64,), lambda i: ts.if_then_else((C[i] > 0.5) & (i < 40), A[i], C[i] - 1.0), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, C, B], name="blended_reads")
    rng = np.random.default_rng(5)
    a, c = rng.random(64).astype(np.float32), rng.random(64).astype(np.float32)
    np.testing.assert_array_equal(f(a, c), np.where((c > 0.5) & (np.arange(64) < 40), a, c - 1))
    # the loop variable in the condition is a ramp of int32 lanes (its values fit), as wide as the floats
    assert "ts_vsel_f32x" in f.c_source and "ts_vramp_i32x" in f.c_source and "omp simd" not in f.c_source
    assert "ts_vloadm" not in f.c_source


def test_reads_that_may_leave_their_tensor_are_masked():
    """A read the loops' ranges do not keep inside its tensor (row ``i - 1`` with ``i`` unbounded) is a
    masked load under the select's condition; the condition's own read is a plain vector load."""
    from tesched.arith.interval import VarRanges
    from tesched.ir import nodes as ir
    from tesched.ir.visitor import walk_stmts
    from tesched.schedule.kinds import LoopKind
    from tesched.te.expr import Binary, Const, Select
    from tesched.te.visit import walk
    from tesched.transform.vectorize import LoopVectorizer

    a, c, b = (ir.Buffer(name, [8, 32], "float32", ir.BufferScope.ARG) for name in "ACB")
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    row = Binary("sub", i, Const(1, "int64"), "int64")
    cond = Binary("gt", ir.Load(c, [i, j]), Const(0.5, "float32"), "bool")
    store = ir.Store(b, (i, j), Select(cond, ir.Load(a, [row, j]), Const(-1.0, "float32")))
    loop = ir.For(j, Const(0, "int64"), Const(32, "int64"), LoopKind.VECTORIZED, store)
    code = LoopVectorizer(loop, 64, VarRanges().where(j, 0, 31)).run()
    nodes = [n for st in walk_stmts(code) if isinstance(st, ir.VStore) for n in walk(st.value)]
    masked = [n for n in nodes if isinstance(n, ir.VLoadMasked)]
    assert masked and all(n.buffer is a for n in masked)
    assert any(isinstance(n, ir.VLoad) and n.buffer is c for n in nodes)
    inside = LoopVectorizer(loop, 64, VarRanges().where(j, 0, 31).where(i, 1, 8)).run()
    assert not any(isinstance(n, ir.VLoadMasked) for st in walk_stmts(inside) if isinstance(st, ir.VStore)
                   for n in walk(st.value))


def test_loop_variable_as_a_value_is_a_ramp():
    B = ts.compute((50,), lambda i: i.astype("float32") * 0.5, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [B], name="iota")
    np.testing.assert_array_equal(f(), np.arange(50, dtype=np.float32) * 0.5)
    assert "ts_vramp_" in f.c_source


def test_checked_index_under_a_condition_is_checked_only_where_taken():
    """Row -1 of A is read only where the condition fails: the run-time index check must not run there
    (the loop stays scalar, where C's ?: evaluates the taken branch only)."""
    A = ts.placeholder((8, 32), name="A")
    C = ts.placeholder((9, 32), name="C")
    B = ts.compute((9, 32), lambda i, j: ts.if_then_else((i >= 1) & (C[i, j] > 0.5), A[i - 1, j], -1.0), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = ts.build(s, [A, C, B], name="mixed_condition")
    rng = np.random.default_rng(6)
    a, c = rng.random((8, 32)).astype(np.float32), rng.random((9, 32)).astype(np.float32)
    shifted = np.concatenate([np.zeros((1, 32), np.float32), a])
    expected = np.where((np.arange(9)[:, None] >= 1) & (c > 0.5), shifted, -1)
    np.testing.assert_array_equal(f(a, c), expected)


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 40), st.integers(0, 3), st.integers(0, 3), st.sampled_from([None, 4, 8, 16, 5]))
def test_random_padding_and_splits_match_numpy(w, low, high, split):
    A = ts.placeholder((3, w), name="A")
    P = ts.compute((3, w + low + high), lambda i, j: ts.if_then_else(
        (j >= low) & (j < w + low), A[i, j - low], -2.0), name="P")
    s = ts.create_schedule(P.op)
    j = s[P].op.axis[1]
    if split:
        _, j = s[P].split(j, split)
    s[P].vectorize(j)
    f = ts.build(s, [A, P], name=f"pad_{w}_{low}_{high}_{split}")
    a = np.random.default_rng(w).standard_normal((3, w)).astype(np.float32)
    np.testing.assert_array_equal(f(a), np.pad(a, ((0, 0), (low, high)), constant_values=-2))
