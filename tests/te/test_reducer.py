"""Tests of tesched.te.reducer: ``prod``, ``init=``, ``comm_reducer`` (one value and tuple reductions such as
argmax), triangular reductions, and the schedule primitives on them, each against NumPy."""
import numpy as np
import pytest

import tesched as ts


def _argmax_reducer(name: str = "argmax", better=lambda a, b: a >= b):
    def combine(x, y):
        take = better(x[1], y[1])
        return ts.select(take, x[0], y[0]), ts.select(take, x[1], y[1])

    return ts.comm_reducer(combine, lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name=name)


def _argmin_reducer():
    def combine(x, y):
        take = x[1] <= y[1]
        return ts.select(take, x[0], y[0]), ts.select(take, x[1], y[1])

    return ts.comm_reducer(combine, lambda t0, t1: (ts.const(-1, t0), ts.max_value(t1)), name="argmin")


def _first_index(values: np.ndarray, best: np.ndarray) -> np.ndarray:
    """NumPy's argmax/argmin tie rule (first index) is what a ``>=``/``<=`` combine gives in loop order."""
    return np.argmax(values == best[:, None], axis=1)


def test_prod_reducer_and_init_constant(rand):
    A = ts.placeholder((5, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    P = ts.compute((5,), lambda i: ts.prod(A[i, k], axis=k), name="P")
    k2 = ts.reduce_axis((0, 7), name="k2")
    S = ts.compute((5,), lambda i: ts.sum(A[i, k2], axis=k2, init=10.0), name="S")
    k3 = ts.reduce_axis((0, 7), name="k3")
    M = ts.compute((5,), lambda i: ts.max(A[i, k3], axis=k3, init=0.75), name="M")
    k4 = ts.reduce_axis((0, 7), name="k4")
    N = ts.compute((5,), lambda i: ts.min(A[i, k4], axis=k4, init=A[i, 0] * 0.5), name="N")
    f = ts.build(ts.create_schedule([P.op, S.op, M.op, N.op]), [A, P, S, M, N], name="prod_init")
    a = rand((5, 7), "float32", 0.5, 1.5)
    p, s, m, n = f(a)
    np.testing.assert_allclose(p, np.prod(a, axis=1), rtol=1e-5)
    np.testing.assert_allclose(s, 10 + a.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(m, np.maximum(0.75, a.max(axis=1)), rtol=1e-6)
    np.testing.assert_allclose(n, np.minimum(a[:, 0] * 0.5, a.min(axis=1)), rtol=1e-6)


def test_init_tensor_accumulates_into_it_as_tvm(rand):
    """TVM's ``init=``: C = I + A @ B, with I given whole (read at the output's point) or as I[i, j]."""
    A = ts.placeholder((6, 8), name="A")
    B = ts.placeholder((8, 5), name="B")
    I = ts.placeholder((6, 5), name="I")
    k = ts.reduce_axis((0, 8), name="k")
    C = ts.compute((6, 5), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k, init=I), name="C")
    k2 = ts.reduce_axis((0, 8), name="k2")
    D = ts.compute((6, 5), lambda i, j: ts.sum(A[i, k2] * B[k2, j], axis=k2, init=I[i, j] * 2.0), name="D")
    s = ts.create_schedule([C.op, D.op])
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].reorder(C.op.axis[0], jo, k, ji)
    s[C].parallel(C.op.axis[0])
    f = ts.build(s, [A, B, I, C, D], name="init_tensor")
    a, b, i0 = rand((6, 8)), rand((8, 5)), rand((6, 5))
    c, d = f(a, b, i0)
    np.testing.assert_allclose(c, i0 + a @ b, rtol=1e-5)
    np.testing.assert_allclose(d, 2 * i0 + a @ b, rtol=1e-5)


def test_rfactor_and_vectorize_of_a_reduction_with_init(rand):
    A = ts.placeholder((4, 64), name="A")
    k = ts.reduce_axis((0, 64), name="k")
    S = ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k, init=-3.0), name="S")
    s = ts.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=16)
    rf = s.rfactor(S, ki)
    s[rf].vectorize(s[rf].op.axis[0])
    f = ts.build(s, [A, S], name="rfactor_init")
    a = rand((4, 64))
    np.testing.assert_allclose(f(a), a.sum(axis=1) - 3.0, rtol=1e-5)


def test_comm_reducer_of_one_value(rand):
    """TVM's ``mysum`` and a bitwise-or reducer over integers, scheduled with split and unroll."""
    mysum = ts.comm_reducer(lambda x, y: x + y, lambda t: ts.const(0, t), name="mysum")
    bor = ts.comm_reducer(lambda x, y: x | y, 0, name="bit_or")
    A = ts.placeholder((6, 12), name="A")
    I = ts.placeholder((6, 12), "int32", name="I")
    k = ts.reduce_axis((0, 12), name="k")
    S = ts.compute((6,), lambda i: mysum(A[i, k] * A[i, k], axis=k), name="S")
    k2 = ts.reduce_axis((0, 12), name="k2")
    O = ts.compute((6,), lambda i: bor(I[i, k2] << 1, axis=k2, where=k2 % 3 != 0), name="O")
    s = ts.create_schedule([S.op, O.op])
    ko, ki = s[S].split(k, factor=4)
    s[S].unroll(ki)
    f = ts.build(s, [A, I, S, O], name="comm_one")
    a, i = rand((6, 12)), rand((6, 12), "int32", 0, 1 << 20)
    got_s, got_o = f(a, i)
    np.testing.assert_allclose(got_s, (a * a).sum(axis=1), rtol=1e-5)
    keep = np.arange(12) % 3 != 0
    np.testing.assert_array_equal(got_o, np.bitwise_or.reduce((i << 1)[:, keep], axis=1))
    assert "mysum(" in repr(S.op.body) and "bit_or(" in repr(O.op.body)


def test_argmax_comm_reducer_as_tvm(rand):
    """TVM's ``test_argmax_comm_reducer``: two outputs of one tuple reduction, both build arguments."""
    m, n = 12, 37
    idx = ts.placeholder((m, n), "int32", name="idx")
    val = ts.placeholder((m, n), "float32", name="val")
    argmax = _argmax_reducer()
    k = ts.reduce_axis((0, n), name="k")
    T0, T1 = ts.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    assert (T0.dtype, T1.dtype, T0.value_index, T1.value_index) == ("int32", "float32", 0, 1)
    s = ts.create_schedule(T0.op)
    assert s[T0] is s[T1]
    xo, xi = s[T0].split(s[T0].op.axis[0], factor=4)
    s[T0].parallel(xo)
    f = ts.build(s, [idx, val, T0, T1], name="argmax")
    v = rand((m, n))
    v[3, [4, 20]] = 2.0            # a tie: the first index wins, as np.argmax
    ix = np.tile(np.arange(n, dtype="int32"), (m, 1))
    i_out, v_out = f(ix, v)
    np.testing.assert_array_equal(i_out, np.argmax(v, axis=1))
    np.testing.assert_array_equal(v_out, v.max(axis=1))


def test_argmin_with_rfactor_and_a_consumer_reading_both_outputs(rand):
    m, n = 8, 64
    val = ts.placeholder((m, n), "float32", name="val")
    argmin = _argmin_reducer()
    k = ts.reduce_axis((0, n), name="k")
    T0, T1 = ts.compute((m,), lambda i: argmin((k, val[i, k]), axis=k), name="T")
    out = ts.compute((m,), lambda i: T0[i].astype("float32") * 10.0 + T1[i], name="out")
    s = ts.create_schedule(out.op)
    ko, ki = s[T0].split(k, factor=8)
    rf_index, rf_value = s.rfactor(T1, ki)
    assert s[rf_index] is s[rf_value]
    s[rf_value].compute_at(s[T0], s[T0].op.axis[0])
    s[T0].compute_at(s[out], out.op.axis[0])
    f = ts.build(s, [val, out], name="argmin_rf")
    v = rand((m, n))
    np.testing.assert_allclose(f(v), np.argmin(v, axis=1) * 10.0 + v.min(axis=1), rtol=1e-6)


def test_multi_output_compute_of_plain_expressions(rand):
    A = ts.placeholder((10, 6), name="A")
    S, D = ts.compute((10, 6), lambda i, j: (A[i, j] + 1.0, (A[i, j] * 2.0).astype("int32")), name="SD")
    C = ts.compute((10, 6), lambda i, j: S[i, j] * D[i, j].astype("float32"), name="C")
    assert (S.dtype, D.dtype) == ("float32", "int32") and S.op is D.op and S.op.num_outputs == 2
    a = rand((10, 6), "float32", 0, 4)
    want_s, want_d = a + 1, (a * 2).astype("int32")
    # both as arguments, one stage
    s = ts.create_schedule(S.op)
    io, ii = s[D].split(s[D].op.axis[1], factor=4)
    s[S].vectorize(ii)
    got_s, got_d = ts.build(s, [A, S, D], name="multi_out")(a)
    np.testing.assert_allclose(got_s, want_s, rtol=1e-6)
    np.testing.assert_array_equal(got_d, want_d)
    # computed at its consumer, and inlined into it
    for how in ("compute_at", "inline"):
        s = ts.create_schedule(C.op)
        if how == "compute_at":
            s[S].compute_at(s[C], C.op.axis[0])
        else:
            s[D].compute_inline()
        np.testing.assert_allclose(ts.build(s, [A, C], name=f"multi_{how}")(a), want_s * want_d, rtol=1e-6)


def test_triangular_reductions_cumsum_and_lower_triangular_matvec(rand):
    """Reduce bounds that depend on an outer axis: isl gives the exact triangular domain."""
    n = 23
    A = ts.placeholder((n,), name="A")
    L = ts.placeholder((n, n), name="L")
    x = ts.placeholder((n,), name="x")

    def cumsum(i):
        k = ts.reduce_axis((0, i + 1), name="k")
        return ts.sum(A[k], axis=k)

    def trmv(i):
        j = ts.reduce_axis((0, i + 1), name="j")
        return ts.sum(L[i, j] * x[j], axis=j)

    def suffix_max(i):
        k = ts.reduce_axis((i, n), name="k")
        return ts.max(A[k], axis=k)

    C = ts.compute((n,), cumsum, name="C")
    y = ts.compute((n,), trmv, name="y")
    M = ts.compute((n,), suffix_max, name="M")
    s = ts.create_schedule([C.op, y.op, M.op])
    io, ii = s[y].split(y.op.axis[0], factor=8)
    s[y].parallel(io)
    jo, ji = s[y].split(s[y].op.reduce_axis[0], factor=4)
    f = ts.build(s, [A, L, x, C, y, M], name="triangular")
    a, l, xv = rand(n), rand((n, n)), rand(n)
    c, yv, m = f(a, l, xv)
    np.testing.assert_allclose(c, np.cumsum(a), rtol=1e-5)
    np.testing.assert_allclose(yv, np.tril(l) @ xv, rtol=1e-5)
    np.testing.assert_allclose(m, np.maximum.accumulate(a[::-1])[::-1], rtol=1e-6)


def test_reducer_misuse_names_the_stage():
    A = ts.placeholder((4, 4), name="A")
    I = ts.placeholder((4, 5), name="I")
    k = ts.reduce_axis((0, 4), name="k")
    wrong_arity = ts.comm_reducer(lambda x, y: x[0], lambda t0, t1: (ts.const(0, t0), ts.const(0, t1)), name="bad")
    with pytest.raises(TypeError, match=r"compute R: reducer bad: combine returns 1 value\(s\) for 2"):
        ts.compute((4,), lambda i: wrong_arity((A[i, k], A[k, i]), axis=k), name="R")
    wrong_dtype = ts.comm_reducer(lambda x, y: (x + y).astype("int32"), 0.0, name="cast")
    with pytest.raises(TypeError, match="compute R: reducer cast: combine returns int32 for component 0"):
        ts.compute((4,), lambda i: wrong_dtype(A[i, k], axis=k), name="R")
    with pytest.raises(ValueError, match=r"compute R: init tensor I has shape \(4, 5\), the output has shape \(4, 4\)"):
        ts.compute((4, 4), lambda i, j: ts.sum(A[i, k], axis=k, init=I), name="R")
    with pytest.raises(ValueError, match="compute R: init uses reduce axis k"):
        ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k, init=A[k, i]), name="R")
    with pytest.raises(TypeError, match="compute R: init 0 is int32, the reduced expression is float32"):
        ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k, init=i), name="R")
    with pytest.raises(ValueError, match="compute R: reducer argmax reduces 2 expressions; return all"):
        ts.compute((4,), lambda i: _argmax_reducer()((k, A[i, k]), axis=k)[0], name="R")
    with pytest.raises(ValueError, match="compute R: a compute with several outputs returns plain"):
        ts.compute((4,), lambda i: (ts.sum(A[i, k], axis=k), A[i, 0]), name="R")
    S, T = ts.compute((4,), lambda i: (A[i, 0], A[i, 1]), name="ST")
    with pytest.raises(ts.ScheduleError, match="cache_write of ST: it has 2 outputs"):
        ts.create_schedule(S.op).cache_write(T, "local")


def test_tuple_reduction_over_a_split_axis_keeps_the_index_dtype(rand):
    """The reduce axis as argmax's index: split loops are int64, the index component stays int32."""
    m, n = 5, 30
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    T0, T1 = ts.compute((m,), lambda i: _argmax_reducer()((k, val[i, k]), axis=k), name="T")
    s = ts.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=7)
    s[T0].unroll(ki)
    f = ts.build(s, [val, T0, T1], name="argmax_split")
    v = rand((m, n))
    i_out, v_out = f(v)
    np.testing.assert_array_equal(i_out, np.argmax(v, axis=1))
    np.testing.assert_array_equal(v_out, v.max(axis=1))


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_vectorized_product_keeps_one_partial_product_per_lane(dtype, rand):
    A = ts.placeholder((3, 64), dtype, name="A")
    k = ts.reduce_axis((0, 64), name="k")
    P = ts.compute((3,), lambda i: ts.prod(A[i, k], axis=k), name="P")
    s = ts.create_schedule(P.op)
    s[P].vectorize(k)
    f = ts.build(s, [A, P], name=f"vector_prod_{dtype}")
    assert "ts_hmul_" in f.c_source
    a = rand((3, 64), dtype, 0.9, 1.1) if dtype == "float32" else rand((3, 64), dtype, 0, 9)
    want = np.prod(a, axis=1, dtype=dtype)
    np.testing.assert_allclose(f(a), want, rtol=1e-5 if dtype == "float32" else 0)


def test_reduce_lower_bound_using_the_axis_with_split_reduce_loop_inside_a_consumer(rand):
    """``reduce_axis((i, n))`` split and reordered around the data loop, computed at its consumer."""
    n = 9
    A = ts.placeholder((n,), name="A")

    def suffix_max(i):
        q = ts.reduce_axis((i, n), name="q")
        return ts.max(A[q], axis=q)

    M = ts.compute((n,), suffix_max, name="M")
    O = ts.compute((n,), lambda i: M[i] * 2.0, name="O")
    s = ts.create_schedule(O.op)
    s[M].compute_at(s[O], O.op.axis[0])
    qo, qi = s[M].split(s[M].op.reduce_axis[0], factor=4)
    s[M].reorder(qo, s[M].op.axis[0], qi)
    a = rand(n)
    np.testing.assert_allclose(ts.build(s, [A, O], name="suffix_max_at")(a), 2 * np.maximum.accumulate(a[::-1])[::-1])


def test_vectorized_rfactor_of_argmax_matches_numpy(rand):
    """rfactor into 16 lanes, the lanes vectorized (explicit SIMD: the index, an int64 loop value, is an
    int32 ramp; the partial results are read unmasked under the select, as they are stored); ts.argmax
    breaks ties toward the smaller index (commutative), so ties across lanes still give NumPy's first index."""
    m, n = 6, 64
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    T0, T1 = ts.compute((m,), lambda i: ts.argmax(val[i, k], axis=k), name="T")
    s = ts.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=16)
    rf, _ = s.rfactor(T0, ki, factor_axis=1)
    i, lane = s[rf].op.axis
    s[rf].reorder(i, s[rf].op.reduce_axis[0], lane)
    s[rf].vectorize(lane)
    f = ts.build(s, [val, T0, T1], name="argmax_lanes")
    assert "ts_vsel_" in f.c_source and "ts_vramp_i32" in f.c_source
    v = rand((m, n))
    v[2, [37, 5, 20]] = 3.0       # ties in three lanes: the first index is 5
    got_i, got_v = f(v)
    np.testing.assert_array_equal(got_i, np.argmax(v, axis=1))
    np.testing.assert_array_equal(got_v, v.max(axis=1))


def test_argmax_and_argmin_follow_numpy_on_ties_nan_and_where(rand):
    m, n = 5, 11
    A = ts.placeholder((m, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    I, V = ts.compute((m,), lambda i: ts.argmax(A[i, k], axis=k), name="best")
    k2 = ts.reduce_axis((0, n), name="k2")
    J, W = ts.compute((m,), lambda i: ts.argmin(A[i, k2], axis=k2, where=k2 % 2 == 1), name="odd_worst")
    assert (I.dtype, V.dtype) == ("int32", "float32")
    s = ts.create_schedule([I.op, J.op])
    ko, ki = s[I].split(k, factor=4)
    s[I].reorder(ko, ki, s[I].op.axis[0])
    f = ts.build(s, [A, I, V, J, W], name="arg_reducers")
    a = rand((m, n))
    a[1, [3, 8]] = np.nan
    a[2, [9, 1, 4]] = 7.0
    a[3, [7, 3]] = -1.0
    i, v, j, w = f(a)
    np.testing.assert_array_equal(i, np.argmax(a, axis=1))
    np.testing.assert_array_equal(v, np.max(a, axis=1))
    odd = a[:, 1::2]
    np.testing.assert_array_equal(j, 2 * np.argmin(odd, axis=1) + 1)
    np.testing.assert_array_equal(w, np.min(odd, axis=1))
    with pytest.raises(ValueError, match="ts.argmax: reduces over one reduce axis"):
        ts.argmax(A[0, k], axis=[k, k2])
