"""Tests of tesched.te.tensor: declarations (placeholder, compute, reduce_axis, var), their validation, and
kernels over float64/int32/int64 data and symbolic sizes."""
import numpy as np
import pytest

import tesched as ts


def test_placeholder_and_compute_describe_their_tensors():
    A = ts.placeholder((3, 4), "float64", name="A")
    B = ts.compute((3, 4), lambda row, col: A[row, col] * 2.0, name="B")
    assert (A.shape, A.dtype, A.ndim, A.name) == ((3, 4), "float64", 2, "A")
    assert [ax.name for ax in B.op.axis] == ["row", "col"]
    assert B.op.input_tensors == [A]
    assert B.dtype == "float64"


def test_compute_with_varargs_names_axes_by_position():
    A = ts.placeholder((2, 3), name="A")
    B = ts.compute((2, 3), lambda *idx: A[idx], name="B")
    assert [ax.name for ax in B.op.axis] == ["i0", "i1"]


@pytest.mark.parametrize("shape, error", [((0, 3), ValueError), ((2.5,), TypeError), ((True,), TypeError)])
def test_bad_shapes_are_rejected(shape, error):
    with pytest.raises(error, match="shape"):
        ts.placeholder(shape, name="A")


def test_fcompute_arity_must_match_the_shape():
    with pytest.raises(ValueError, match="2 arguments but the shape has 1"):
        ts.compute((4,), lambda i, j: i + j, name="B")


def test_indexing_is_checked():
    A = ts.placeholder((3, 4), name="A")
    with pytest.raises(IndexError, match="A has 2 dimensions, indexed with 1"):
        A[0]
    F = ts.placeholder((3,), name="F")
    with pytest.raises(TypeError, match="index 0 of A must be an integer"):
        A[F[0], 0]


def test_reduce_axis_validation():
    with pytest.raises(ValueError, match="empty range"):
        ts.reduce_axis((3, 3), name="k")
    k = ts.reduce_axis((2, 7), name="k")
    assert (k.dom.min, k.dom.extent, k.iter_type) == (2, 5, "comm_reduce")


def test_a_reduction_inside_a_larger_expression_is_its_own_stage(rand):
    """Halide's inline reductions: each reduction inside a body becomes a compute over the same axes
    (``f.sum0``, ``f.max1``, ...), bounds that use the axes (a triangle) and reducers closing over them
    included; the body reads it, and it can be scheduled like any stage."""
    A = ts.placeholder((6, 5), name="A")
    k = ts.reduce_axis((0, 5), name="k")
    f = ts.compute((6,), lambda i: ts.sum(A[i, k], axis=k) * 2.0 + ts.max(A[i, k] - 1.0, axis=k), name="f")
    lifted = [t.op for t in f.op.input_tensors if t.op is not A.op]
    assert [op.name for op in lifted] == ["f.sum0", "f.max1"] and [a.name for a in lifted[0].axis] == ["i"]
    s = ts.create_schedule(f.op)
    s[lifted[0]].compute_at(s[f], f.op.axis[0])
    a = rand((6, 5))
    np.testing.assert_allclose(ts.build(s, [A, f])(a), a.sum(axis=1) * 2 + a.max(axis=1) - 1, rtol=1e-5)

    clip = ts.comm_reducer(lambda x, y: ts.minimum(x + y, 10.0), lambda t: ts.const(0, t), name="clip")

    def prefix(i):
        r = ts.reduce_axis((0, i + 1), name="r")
        bound = ts.comm_reducer(lambda x, y: ts.minimum(x + y, i.astype("float32")), lambda t: ts.const(0, t),
                                name="bound")
        return ts.select(i % 2 == 0, ts.sum(A[r, 0], axis=r), clip(A[r, 1], axis=r)) + bound(A[r, 2], axis=r)

    g = ts.compute((6,), prefix, name="g")
    want = []
    for i in range(6):
        acc = 0.0
        for r in range(i + 1):
            acc = min(acc + a[r, 2], float(i))
        first = a[:i + 1, 0].sum() if i % 2 == 0 else min(10.0, a[:i + 1, 1].sum())
        want.append(first + acc)
    np.testing.assert_allclose(ts.build(ts.create_schedule(g.op), [A, g])(a), want, rtol=1e-5)


def test_var_must_be_integer():
    with pytest.raises(TypeError, match="integers"):
        ts.var("n", "float32")


def test_elementwise_chain(rand):
    A = ts.placeholder((5, 7), name="A")
    B = ts.placeholder((5, 7), name="B")
    C = ts.compute((5, 7), lambda i, j: A[i, j] * B[i, j] + 1.0, name="C")
    D = ts.compute((5, 7), lambda i, j: C[i, j] - A[i, j] / 2.0, name="D")
    E = ts.compute((5, 7), lambda i, j: D[i, j] * D[i, j], name="E")
    f = ts.build(ts.create_schedule(E.op), [A, B, E], name="chain")
    a, b = rand((5, 7)), rand((5, 7))
    np.testing.assert_allclose(f(a, b), (a * b + 1 - a / 2) ** 2, rtol=1e-5)


@pytest.mark.parametrize("dtype, low, high", [("float64", -3, 3), ("int32", -1000, 1000), ("int64", -2**40, 2**40)])
def test_kernels_of_every_numeric_dtype(dtype, low, high, rand):
    A = ts.placeholder((6, 5), dtype, name="A")
    k = ts.reduce_axis((0, 5), name="k")
    T = ts.compute((6, 5), lambda i, j: A[i, j] * 3 - A[i, 4 - j], name="T")
    S = ts.compute((6,), lambda i: ts.sum(T[i, k], axis=k), name="S")
    f = ts.build(ts.create_schedule(S.op), [A, S], name=f"dtype_{dtype}")
    a = rand((6, 5), dtype, low, high)
    got = f(a)
    assert got.dtype == np.dtype(dtype)
    expected = (a * 3 - a[:, ::-1]).sum(axis=1, dtype=dtype)
    if dtype == "float64":
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


def test_symbolic_sizes_one_build_many_shapes(rand):
    n = ts.var("n")
    m = ts.var("m")
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((m,), name="B")
    C = ts.compute((n, m), lambda i, j: A[i, j] * B[j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].vectorize(ji)
    f = ts.build(s, [A, B, C], name="symbolic")
    assert [p.name for p in f.lowered.params] == ["n", "m"]
    for shape in [(1, 1), (3, 4), (7, 9), (16, 33)]:
        a, b = rand(shape), rand(shape[1])
        np.testing.assert_allclose(f(a, b), a * b + 1, rtol=1e-6)
    with pytest.raises(ValueError, match="size m"):
        f(rand((3, 4)), rand(5))


def test_symbolic_size_in_shape_expression(rand):
    n = ts.var("n")
    A = ts.placeholder((n + 2,), name="A")
    C = ts.compute((n,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    f = ts.build(ts.create_schedule(C.op), [A, C], name="symbolic_expr_shape")
    for size in (1, 6):
        a = rand(size + 2)
        c = np.empty(size, np.float32)
        f(a, c)
        np.testing.assert_allclose(c, a[:-2] + a[1:-1] + a[2:], rtol=1e-6)
    with pytest.raises(ValueError, match="argument A: expected shape \\(8,\\)"):
        f(rand(7), np.empty(6, np.float32))
    a = rand(8)  # n = 6 is solved from A's n + 2
    np.testing.assert_allclose(f(a), a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


def test_a_tensor_called_reads_as_indexed(rand):
    """TVM's call syntax: ``A(i, j)`` and ``A(*i)`` are ``A[i, j]``; the number of indices is checked."""
    A = ts.placeholder((3, 4), name="A")
    B = ts.compute((3, 4), lambda *i: A(*i) * 2.0, name="B")
    C = ts.compute((3,), lambda i: B(i, 3) - A(i, 0), name="C")
    a = rand((3, 4))
    np.testing.assert_allclose(ts.build(ts.create_schedule(C.op), [A, C])(a), a[:, 3] * 2 - a[:, 0], rtol=1e-6)
    with pytest.raises(IndexError, match="tensor A has 2 dimensions, indexed with 1"):
        A(0)
