"""Tests of tesched.te.inferred: computes and Funcs declared without a shape (their axes from the function's
parameters or the Func's names, a Func's updates) and what such a declaration refuses."""
import pytest

import tesched as ts
from tesched.te.inferred import InferredOp
from tesched.te.tensor import ComputeOp


def test_a_compute_without_a_shape_takes_its_axes_from_its_function():
    A = ts.placeholder((8, 8), name="A")
    f = ts.compute(None, lambda y, x: A[y, x] * 2.0, name="f")
    assert isinstance(f.op, InferredOp) and [a.name for a in f.op.axis] == ["y", "x"] and f.ndim == 2
    g = ts.Func(None, "int32", name="g", axes=("i",))
    i, = g.axis
    g[i] = i * 3
    assert isinstance(g.op, InferredOp) and g.tensor.dtype == "int32" and g.shape is None


def test_a_compute_with_a_shape_is_unchanged():
    A = ts.placeholder((4,), name="A")
    f = ts.compute((4,), lambda i: A[i] + 1.0, name="f")
    assert type(f.op) is ComputeOp and f.shape == (4,)


@pytest.mark.parametrize("make, error, message", [
    (lambda A: ts.compute(None, lambda *i: A[i], name="f"), ValueError,
     r"compute f: shape=None needs a function of named axes \(lambda x, y: ...\)"),
    (lambda A: ts.Func(None, name="f"), ValueError, r"Func f: a Func without a shape \(its region inferred\) names "
                                                    r"its axes"),
])
def test_what_a_compute_without_a_shape_refuses(make, error, message):
    A = ts.placeholder((4,), name="A")
    with pytest.raises(error, match=message):
        make(A)


def test_an_inline_reduction_or_a_reduction_bounded_by_its_axes_needs_a_shape():
    A = ts.placeholder((4, 4), name="A")
    k = ts.reduce_axis((0, 4), name="k")
    with pytest.raises(ValueError, match=r"compute f: its region is inferred \(shape=None\), so a reduction inside "
                                         r"its body \(sum\) cannot be lifted"):
        ts.compute(None, lambda i: ts.sum(A[i, k], axis=k) * 2.0, name="f")
    with pytest.raises(ValueError, match="compute g: its region is inferred .* so the bounds of reduce axis r "
                                         "cannot use its axes"):
        ts.compute(None, _triangle(A), name="g")


def _triangle(A):
    def rows(i):
        r = ts.reduce_axis((0, i + 1), "r")
        return ts.sum(A[i, r], axis=r)
    return rows


def test_an_inferred_func_takes_update_definitions():
    """Halide's f(x) = 0; f(x) += g(x): the updates' pure axes run over the region inferred later."""
    g = ts.placeholder((4,), name="g")
    f = ts.Func(None, name="f", axes=("x",))
    x, = f.axis
    f[x] = 0.0
    f[x] += g[ts.clamp(x, 0, 3)]
    update = f.tensor.op
    assert update.base is f.op and isinstance(f.op, InferredOp) and [a.name for a in update.axis] == ["x"]
