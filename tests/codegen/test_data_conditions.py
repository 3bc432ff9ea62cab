"""Tests of tesched.codegen.data_conditions: which functions branch on data (and are compiled without gcc's
loop if-conversion), and the kernels of selects on data, checked against NumPy over random shapes, dtypes,
condition forms and schedules (gcc 12.2 vectorized these wrong: lanes of the selected reads came out 0)."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.codegen.data_conditions import branches_on_data

DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")


def _select_kernel(shape, cond_dtype, data_dtype, form, schedule):
    """``B = select(cond(A), X, 0)`` with the condition read from a bool stage, compared inline, or bound
    to a ``let`` by common subexpressions; ``schedule`` is 'default', 'unroll' (the inner loop unrolled by
    the schedule) or 'split' (the outer loop split, its inner part unrolled)."""
    n, m = shape
    A = ts.placeholder(shape, cond_dtype, name="A")
    X = ts.placeholder(shape, data_dtype, name="X")
    zero = ts.const(0, data_dtype)
    if form == "stage":
        C = ts.compute(shape, lambda i, j: A[i, j] > ts.const(0, cond_dtype), name="C")
        B = ts.compute(shape, lambda i, j: ts.select(C[i, j], X[i, j], zero), name="B")
    elif form == "inline":
        B = ts.compute(shape, lambda i, j: ts.select(A[i, j] > ts.const(0, cond_dtype), X[i, j], zero), name="B")
    else:   # the read is used twice, so it is bound once
        B = ts.compute(shape, lambda i, j: ts.select(A[i, j] > ts.const(0, cond_dtype),
                                                     X[i, j] + ts.cast(data_dtype, A[i, j]), zero), name="B")
    s = ts.create_schedule(B.op)
    i, j = B.op.axis
    if schedule == "unroll":
        s[B].unroll(j)
    elif schedule == "split":
        _, inner = s[B].split(i, factor=2)
        s[B].unroll(inner)
    return s, [A, X, B]


def _reference(a, x, form, data_dtype):
    chosen = x + a.astype(data_dtype) if form == "let" else x
    return np.where(a > 0, chosen, 0).astype(data_dtype)


def test_conditions_on_loads_lets_and_stages_branch_on_data():
    for form in ("stage", "inline", "let"):
        s, args = _select_kernel((4, 8), "float32", "float32", form, "default")
        assert branches_on_data(ts.lower(s, args).body), form


def test_conditions_on_indices_alone_do_not():
    A = ts.placeholder((6, 6), name="A")
    P = ts.compute((8, 8), lambda i, j: ts.if_then_else(ts.all(i >= 1, i < 7, j >= 1, j < 7), A[i - 1, j - 1], 0.0),
                   name="P")
    B = ts.compute((8, 8), lambda i, j: P[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    assert not branches_on_data(ts.lower(s, [A, B]).body)


@pytest.mark.usefixtures("host_target")
@settings(max_examples=24, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(3, 17), cond_dtype=st.sampled_from(DTYPES),
       data_dtype=st.sampled_from(DTYPES), form=st.sampled_from(["stage", "inline", "let"]),
       schedule=st.sampled_from(["default", "unroll", "split"]))
@example(n=8, m=8, cond_dtype="int32", data_dtype="int32", form="stage", schedule="default")
@example(n=8, m=7, cond_dtype="float32", data_dtype="float32", form="inline", schedule="default")
@example(n=8, m=8, cond_dtype="float32", data_dtype="float64", form="inline", schedule="unroll")
@example(n=4, m=16, cond_dtype="int8", data_dtype="float32", form="inline", schedule="unroll")
def test_selects_on_data_match_numpy(n, m, cond_dtype, data_dtype, form, schedule):
    s, args = _select_kernel((n, m), cond_dtype, data_dtype, form, schedule)
    f = ts.build(s, args)
    assert "TS_NO_IF_CONVERT int " in f.c_source
    rng = np.random.default_rng(n * 100 + m)
    a = rng.integers(-2, 3, (n, m)).astype(cond_dtype)
    x = rng.integers(1, 50, (n, m)).astype(data_dtype)
    np.testing.assert_array_equal(f(a, x), _reference(a, x, form, data_dtype))
