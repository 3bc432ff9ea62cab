"""Tests of tesched.te.checks: each malformed declaration raises TypeError/ValueError naming the
declaration and the argument at fault (never a bare Python message, never a C compiler error)."""
import numpy as np
import pytest

import tesched as ts


@pytest.mark.parametrize("make, error, match", [
    (lambda: ts.placeholder(None, name="A"), TypeError, "placeholder A: shape must be a tuple"),
    (lambda: ts.placeholder("abc", name="A"), TypeError, "placeholder A: shape"),
    (lambda: ts.placeholder((3,), dtype=None, name="A"), TypeError, "placeholder A: dtype must be given"),
    (lambda: ts.placeholder((3,), dtype="complex64", name="A"), TypeError, "placeholder A: unsupported dtype"),
    (lambda: ts.placeholder((3,), dtype="nonsense", name="A"), TypeError, "placeholder A: unknown dtype"),
    (lambda: ts.placeholder((3,), name=7), TypeError, "placeholder: name must be a str"),
    (lambda: ts.placeholder((2 ** 63,), name="A"), ValueError, "placeholder A: shape entries must be positive"),
    (lambda: ts.reduce_axis(5, name="k"), TypeError, "reduce_axis k: dom must be a pair"),
    (lambda: ts.reduce_axis((0, 2, 3), name="k"), TypeError, "reduce_axis k: dom must be a pair"),
    (lambda: ts.reduce_axis((0, 2.5), name="k"), TypeError, "reduce_axis k: the upper bound must be an int"),
    (lambda: ts.reduce_axis((0.5, 2), name="k"), TypeError, "reduce_axis k: the lower bound must be an int"),
    (lambda: ts.reduce_axis((True, 2), name="k"), TypeError, "reduce_axis k: the lower bound"),
    (lambda: ts.reduce_axis((0, 4), name=None), TypeError, "reduce_axis: name must be a str"),
    (lambda: ts.compute((4,), 42, name="C"), TypeError, "compute C: fcompute must be a function"),
    (lambda: ts.compute((4,), lambda i: "x", name="C"), TypeError, "compute C: fcompute must return an expr"),
    (lambda: ts.compute((4,), lambda i: None, name="C"), TypeError, "compute C: fcompute must return an expr"),
    (lambda: ts.compute({4}, lambda i: i, name="C"), TypeError, "compute C: shape must be a tuple"),
    (lambda: ts.var(3), TypeError, "var: name must be a str"),
    (lambda: ts.var("n", "float32"), TypeError, "var n: size variables must be integers"),
])
def test_malformed_declarations_name_what_is_wrong(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_reduce_axis_outside_a_reduction_is_named_before_c():
    A = ts.placeholder((4,), name="A")
    k = ts.reduce_axis((0, 4), name="k")
    with pytest.raises(ValueError, match="compute C: reduce axis k is used outside a reduction"):
        ts.compute((4,), lambda i: A[k] + 1.0, name="C")
    j = ts.reduce_axis((0, 4), name="j")
    with pytest.raises(ValueError, match="compute D: reduce axis j is used outside a reduction"):
        ts.compute((4,), lambda i: ts.sum(A[k] * A[j], axis=k), name="D")


def test_axis_of_another_compute_is_rejected():
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match="compute C: axis i is not an axis of C"):
        ts.compute((4,), lambda j: A[B.op.axis[0]], name="C")


def test_reduce_bounds_may_depend_on_the_computes_own_axes(rand):
    """TVM's triangular reduce_axis((0, i + 1)): a running sum."""
    A = ts.placeholder((5, 3), name="A")

    def body(i, j):
        k = ts.reduce_axis((0, i + 1), name="k")
        return ts.sum(A[k, j], axis=k)

    C = ts.compute((5, 3), body, name="C")
    s = ts.create_schedule(C.op)
    s[C].reorder(C.op.axis[1], C.op.axis[0])
    a = rand((5, 3))
    np.testing.assert_allclose(ts.build(s, [A, C], name="running_sum")(a), np.cumsum(a, axis=0), rtol=1e-5)


def test_reduce_bounds_using_another_computes_axis_are_named():
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] * 2.0, name="B")

    def body(j):
        k = ts.reduce_axis((0, B.op.axis[0] + 1), name="k")
        return ts.sum(A[k], axis=k)

    with pytest.raises(ValueError, match="compute C: the bounds of reduce axis k use i, which is not an axis of C"):
        ts.compute((4,), body, name="C")


def test_if_then_else_of_two_literals_is_the_mask_idiom(rand):
    A = ts.placeholder((6,), name="A")
    M = ts.compute((6,), lambda i: ts.if_then_else(i > 1, 1, 0), name="M")
    C = ts.compute((6,), lambda i: A[i] * M[i].astype("float32"), name="C")
    assert M.dtype == "int32"
    f = ts.build(ts.create_schedule(C.op), [A, C], name="mask_idiom")
    a = rand(6)
    np.testing.assert_allclose(f(a), a * (np.arange(6) > 1), rtol=1e-6)
    assert ts.if_then_else(A[0] > 0, 1, 0.5).dtype == "float32"
