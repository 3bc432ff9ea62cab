"""Tests of the loop-kind primitives that ``test_stage.py`` does not cover: ``bind`` to GPU indices.

On a CPU target a bound loop runs in order, so every schedule here is also checked against NumPy.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tesched as ts


def _scale():
    n = ts.var("n")
    A = ts.placeholder((n, 19), name="A")
    B = ts.compute((n, 19), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return n, A, B


def test_bind_is_printed_and_runs_on_the_cpu():
    n, A, B = _scale()
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(io, ts.thread_axis("blockIdx.x"))
    s[B].bind(ii, ts.thread_axis("threadIdx.x"))
    text = str(ts.lower(s, [A, B]))
    assert "bind(blockIdx.x) for i.outer" in text and "bind(threadIdx.x) for i.inner" in text
    f = ts.build(s, [A, B])
    a = np.random.rand(10, 19).astype("float32")
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


@settings(max_examples=6, deadline=None)
@given(xf=st.integers(1, 6), yf=st.integers(1, 9), rows=st.integers(1, 13))
def test_gpu_tile_binds_four_loops(xf, yf, rows):
    n, A, B = _scale()
    s = ts.create_schedule(B.op)
    loops = s[B].gpu_tile(B.op.axis[0], B.op.axis[1], xf, yf)
    tags = [s[B].thread_bindings[v].tag for v in loops]
    assert tags == ["blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x"]
    assert s[B].leaf_iter_vars == list(loops)
    f = ts.build(s, [A, B])
    a = np.random.rand(rows, 19).astype("float32")
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_bind_errors_name_stage_and_loop():
    n = ts.var("n")
    A = ts.placeholder((n, 8), name="A")
    k = ts.reduce_axis((0, 8), name="k")
    S = ts.compute((n,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    s = ts.create_schedule(S.op)
    with pytest.raises(ts.ScheduleError, match="stage S: loop k is a reduction loop bound to blockIdx.y.*"
                                               "no cross-block reduction"):
        s[S].bind(k, ts.thread_axis("blockIdx.y"))
    io, ii = s[S].split(S.op.axis[0], factor=4)
    s[S].bind(io, ts.thread_axis("blockIdx.x"))
    with pytest.raises(ts.ScheduleError, match="stage S: blockIdx.x is already bound to loop i.outer"):
        s[S].bind(ii, ts.thread_axis("blockIdx.x"))
    with pytest.raises(ts.ScheduleError, match="loop i.outer is already blockIdx.x"):
        s[S].bind(io, ts.thread_axis("threadIdx.y"))
    with pytest.raises(ts.ScheduleError, match="loop i.outer is already blockIdx.x"):
        s[S].parallel(io)
    with pytest.raises(ts.ScheduleError, match="stage S, loop i.inner: expected ts.thread_axis"):
        s[S].bind(ii, "threadIdx.x")
    assert s[S].thread_bindings == {io: ts.thread_axis("blockIdx.x")}   # failed calls changed nothing


def test_bind_of_a_loop_that_carries_a_dependence_is_refused():
    A = ts.placeholder((34,), name="A")
    B = ts.compute((33,), lambda i: A[i] + A[i + 1], name="B")
    C = ts.compute((32,), lambda i: B[i] + B[i + 1], name="C")
    s = ts.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].store_root()                      # a sliding window: each iteration reuses what the last computed
    s[C].bind(C.op.axis[0], ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match="loop i of stage C is bound to threadIdx.x, but its iterations depend"):
        ts.lower(s, [A, C])


def test_a_reduction_bound_to_threads_runs_in_order_on_the_cpu():
    n = ts.var("n")
    A = ts.placeholder((n, 50), name="A")
    k = ts.reduce_axis((0, 50), name="k")
    S = ts.compute((n,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    s = ts.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=8)
    s[S].reorder(ki, ko)
    s[S].bind(ki, ts.thread_axis("threadIdx.x"))          # a cross-thread reduction on a GPU target
    assert "bind(threadIdx.x) for k.inner" in str(ts.lower(s, [A, S]))
    f = ts.build(s, [A, S])
    a = np.random.rand(5, 50).astype("float32")
    out = np.full(5, np.nan, np.float32)
    f(a, out)
    np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)
