"""Tests of tesched.te.functions: math functions, elementwise max/min, if_then_else, all/any and the reducers
sum/max/min (one axis, several axes, non-zero lower bounds, ``where=``), each against NumPy."""
import math

import numpy as np
import pytest

import tesched as ts


@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-6), ("float64", 1e-13)])
def test_math_functions(dtype, rtol, rand):
    A = ts.placeholder((64,), dtype, name="A")
    outs = {
        "exp": (ts.exp, np.exp), "log": (ts.log, np.log), "sqrt": (ts.sqrt, np.sqrt),
        "tanh": (ts.tanh, np.tanh), "sigmoid": (ts.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        "abs": (lambda x: ts.abs(x - 1.5), lambda x: np.abs(x - 1.5)),
        "floor": (lambda x: ts.floor(x * 3.0), lambda x: np.floor(x * 3)),
        "ceil": (lambda x: ts.ceil(x * 3.0), lambda x: np.ceil(x * 3)),
    }
    def elementwise(fn):
        return lambda i: fn(A[i])

    tensors = [ts.compute((64,), elementwise(fn), name=name) for name, (fn, _) in outs.items()]
    assert all(t.dtype == dtype for t in tensors)
    f = ts.build(ts.create_schedule([t.op for t in tensors]), [A] + tensors, name=f"math_{dtype}")
    a = rand(64, dtype, 0.05, 3.0)
    for got, (name, (_, ref)) in zip(f(a), outs.items()):
        np.testing.assert_allclose(got, ref(a), rtol=rtol, err_msg=name)


def test_integer_arguments_of_float_functions_become_float32(rand):
    I = ts.placeholder((8,), "int32", name="I")
    E = ts.compute((8,), lambda i: ts.sqrt(I[i]), name="E")
    M = ts.compute((8,), lambda i: ts.abs(I[i]), name="M")
    assert (E.dtype, M.dtype) == ("float32", "int32")
    f = ts.build(ts.create_schedule([E.op, M.op]), [I, E, M], name="int_math")
    a = rand(8, "int32", -50, 50)
    e, m = f(np.abs(a))
    np.testing.assert_allclose(e, np.sqrt(np.abs(a).astype(np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(f(a)[1], np.abs(a))


def test_maximum_minimum_and_elementwise_max_min(rand):
    A = ts.placeholder((16,), name="A")
    B = ts.placeholder((16,), name="B")
    C = ts.compute((16,), lambda i: ts.maximum(A[i], B[i]) - ts.minimum(A[i], 0.5), name="C")
    D = ts.compute((16,), lambda i: ts.max(A[i], B[i]) + ts.min(A[i], B[i]), name="D")
    f = ts.build(ts.create_schedule([C.op, D.op]), [A, B, C, D], name="maxmin")
    a, b = rand(16), rand(16)
    c, d = f(a, b)
    np.testing.assert_allclose(c, np.maximum(a, b) - np.minimum(a, 0.5))
    np.testing.assert_allclose(d, np.maximum(a, b) + np.minimum(a, b))


def test_if_then_else_evaluates_only_the_chosen_side(rand):
    A = ts.placeholder((10,), name="A")
    # A[i - 1] would read out of bounds at i == 0 if both sides were evaluated
    C = ts.compute((10,), lambda i: ts.if_then_else(i > 0, A[i - 1], A[i] * 10.0), name="C")
    I = ts.compute((10,), lambda i: ts.if_then_else(A[i] > 0.5, 1, i * 2), name="I")
    assert I.dtype == "int32"
    f = ts.build(ts.create_schedule([C.op, I.op]), [A, C, I], name="if_then_else_kernel")
    a = rand(10)
    c, ind = f(a)
    np.testing.assert_allclose(c, np.concatenate([[a[0] * 10], a[:-1]]), rtol=1e-6)
    np.testing.assert_array_equal(ind, np.where(a > 0.5, 1, np.arange(10) * 2))


def test_all_and_any(rand):
    A = ts.placeholder((20,), name="A")
    both = ts.compute((20,), lambda i: ts.all(A[i] > 0.2, A[i] < 0.8, i != 3), name="both")
    either = ts.compute((20,), lambda i: ts.any(A[i] < 0.1, A[i] > 0.9, i == 5), name="either")
    f = ts.build(ts.create_schedule([both.op, either.op]), [A, both, either], name="allany")
    a = rand(20)
    idx = np.arange(20)
    got_both, got_either = f(a)
    np.testing.assert_array_equal(got_both, (a > 0.2) & (a < 0.8) & (idx != 3))
    np.testing.assert_array_equal(got_either, (a < 0.1) | (a > 0.9) | (idx == 5))


def test_reducers_over_one_axis(rand):
    A = ts.placeholder((6, 9), name="A")
    k = ts.reduce_axis((0, 9), name="k")
    S = ts.compute((6,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    k2 = ts.reduce_axis((0, 9), name="k2")
    M = ts.compute((6,), lambda i: ts.max(A[i, k2] - 0.5, axis=k2), name="M")
    k3 = ts.reduce_axis((0, 6), name="k3")
    N = ts.compute((9,), lambda j: ts.min(A[k3, j], axis=[k3]), name="N")
    f = ts.build(ts.create_schedule([S.op, M.op, N.op]), [A, S, M, N], name="reduce_one")
    a = rand((6, 9), "float32", -1, 1)
    s, m, n = f(a)
    np.testing.assert_allclose(s, a.sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, (a - 0.5).max(1))
    np.testing.assert_allclose(n, a.min(0))


def test_reducers_over_a_list_of_axes(rand):
    A = ts.placeholder((3, 4, 5), "float64", name="A")
    r1 = ts.reduce_axis((0, 4), name="r1")
    r2 = ts.reduce_axis((0, 5), name="r2")
    S = ts.compute((3,), lambda i: ts.sum(A[i, r1, r2] * A[i, r1, r2], axis=[r1, r2]), name="S")
    q1 = ts.reduce_axis((0, 3), name="q1")
    q2 = ts.reduce_axis((0, 5), name="q2")
    M = ts.compute((4,), lambda j: ts.max(A[q1, j, q2], axis=[q1, q2]), name="M")
    f = ts.build(ts.create_schedule([S.op, M.op]), [A, S, M], name="reduce_many")
    a = rand((3, 4, 5), "float64", -1, 1)
    s, m = f(a)
    np.testing.assert_allclose(s, (a * a).sum((1, 2)), rtol=1e-12)
    np.testing.assert_allclose(m, a.max((0, 2)))


def test_reduce_axis_with_nonzero_lower_bound_and_split(rand):
    A = ts.placeholder((5, 12), name="A")
    r = ts.reduce_axis((3, 11), name="r")
    S = ts.compute((5,), lambda i: ts.sum(A[i, r] * r.astype("float32"), axis=r), name="S")
    r2 = ts.reduce_axis((2, 9), name="r2")
    M = ts.compute((5,), lambda i: ts.min(A[i, r2], axis=r2), name="M")
    s = ts.create_schedule([S.op, M.op])
    ro, ri = s[S].split(r, factor=3)          # 8 points by 3: a non-dividing split of a shifted axis
    s[S].reorder(ri, ro)
    s[M].split(r2, nparts=2)
    f = ts.build(s, [A, S, M], name="reduce_lower_bound")
    a = rand((5, 12))
    got_s, got_m = f(a)
    np.testing.assert_allclose(got_s, (a[:, 3:11] * np.arange(3, 11)).sum(1), rtol=1e-5)
    np.testing.assert_allclose(got_m, a[:, 2:9].min(1))


def test_reduction_with_where(rand):
    A = ts.placeholder((7, 10), name="A")
    k = ts.reduce_axis((0, 10), name="k")
    S = ts.compute((7,), lambda i: ts.sum(A[i, k], axis=k, where=A[i, k] > 0.5), name="S")
    k2 = ts.reduce_axis((0, 10), name="k2")
    M = ts.compute((7,), lambda i: ts.max(A[i, k2], axis=k2, where=k2 % 3 == 0), name="M")
    k3 = ts.reduce_axis((0, 10), name="k3")
    E = ts.compute((7,), lambda i: ts.max(A[i, k3], axis=k3, where=A[i, k3] > 2.0), name="E")
    f = ts.build(ts.create_schedule([S.op, M.op, E.op]), [A, S, M, E], name="reduce_where")
    a = rand((7, 10))
    s, m, e = f(a)
    np.testing.assert_allclose(s, np.where(a > 0.5, a, 0).sum(1), rtol=1e-5)
    np.testing.assert_allclose(m, a[:, ::3].max(1))
    assert np.all(np.isneginf(e))                      # nothing selected: the identity of max


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_reductions(dtype, rand):
    A = ts.placeholder((4, 6), dtype, name="A")
    k = ts.reduce_axis((0, 6), name="k")
    M = ts.compute((4,), lambda i: ts.max(A[i, k], axis=k), name="M")
    k2 = ts.reduce_axis((0, 6), name="k2")
    N = ts.compute((4,), lambda i: ts.min(A[i, k2], axis=k2), name="N")
    k3 = ts.reduce_axis((0, 6), name="k3")
    C = ts.compute((4,), lambda i: ts.sum(A[i, k3] > 0, axis=k3), name="C")
    f = ts.build(ts.create_schedule([M.op, N.op, C.op]), [A, M, N, C], name=f"int_reduce_{dtype}")
    a = rand((4, 6), dtype, -100, 100)
    m, n, c = f(a)
    np.testing.assert_array_equal(m, a.max(1))
    np.testing.assert_array_equal(n, a.min(1))
    np.testing.assert_array_equal(c, (a > 0).sum(1))


def test_int32_max_of_int32_min_values():
    A = ts.placeholder((2, 3), "int32", name="A")
    k = ts.reduce_axis((0, 3), name="k")
    M = ts.compute((2,), lambda i: ts.max(A[i, k], axis=k), name="M")
    f = ts.build(ts.create_schedule(M.op), [A, M], name="int32_max_identity")
    a = np.full((2, 3), np.iinfo(np.int32).min, np.int32)
    np.testing.assert_array_equal(f(a), a.max(1))


def test_reducer_argument_errors():
    A = ts.placeholder((4,), name="A")
    i = ts.compute((4,), lambda i: A[i], name="B").op.axis[0]
    with pytest.raises(TypeError, match="ts.sum needs axis"):
        ts.sum(A[0])
    with pytest.raises(TypeError, match="not a reduce_axis"):
        ts.max(A[0], axis=[i])
    with pytest.raises(ValueError, match="empty axis list"):
        ts.min(A[0], axis=[])


def test_reduction_to_a_scalar(rand):
    A = ts.placeholder((5, 6), name="A")
    i = ts.reduce_axis((0, 5), name="i")
    j = ts.reduce_axis((0, 6), name="j")
    S = ts.compute((), lambda: ts.sum(A[i, j], axis=[i, j]), name="S")
    f = ts.build(ts.create_schedule(S.op), [A, S], name="total")
    a = rand((5, 6))
    got = f(a)
    assert got.shape == ()
    np.testing.assert_allclose(got, a.sum(), rtol=1e-5)


def test_integer_floor_division_by_zero_gives_zero_instead_of_a_trap():
    """NumPy returns 0 for integer // 0 and % 0; a hardware trap would kill the process."""
    A = ts.placeholder((4,), "int32", name="A")
    D = ts.placeholder((4,), "int32", name="D")
    Q = ts.compute((4,), lambda i: A[i] // D[i], name="Q")
    R = ts.compute((4,), lambda i: A[i] % D[i], name="R")
    f = ts.build(ts.create_schedule([Q.op, R.op]), [A, D, Q, R], name="div_by_zero")
    a = np.array([7, -7, np.iinfo(np.int32).min, 5], np.int32)
    d = np.array([0, 2, -1, 0], np.int32)
    q, r = f(a, d)
    with np.errstate(divide="ignore", over="ignore"):
        np.testing.assert_array_equal(q, a // d)
        np.testing.assert_array_equal(r, a % d)


def _nan_schedule(kind: str):
    A = ts.placeholder((3, 16), name="A")
    k = ts.reduce_axis((0, 16), name="k")
    reducer = ts.max if kind.startswith("max") else ts.min
    elementwise = ts.maximum if kind.startswith("max") else ts.minimum
    R = ts.compute((3,), lambda i: reducer(A[i, k], axis=k), name="R")
    M = ts.compute((3, 16), lambda i, j: elementwise(A[i, j], 0.0) + R[i], name="M")
    s = ts.create_schedule(M.op)
    if kind.endswith("vectorized"):
        s[M].vectorize(M.op.axis[1])
        s[R].vectorize(k)
    elif kind.endswith("rfactor"):
        ko, ki = s[R].split(k, factor=4)
        rf = s.rfactor(R, ki)
        s[rf].vectorize(s[rf].op.axis[0])
    return A, M, s


@pytest.mark.parametrize("kind", ["max", "max_vectorized", "max_rfactor", "min", "min_vectorized", "min_rfactor"])
def test_nan_propagates_as_in_numpy(kind):
    """ts.maximum/minimum and the max/min reducers return NaN when an operand is NaN, whatever its position
    and however the loop is scheduled (NumPy's maximum, minimum, max and min)."""
    A, M, s = _nan_schedule(kind)
    f = ts.build(s, [A, M], name=f"nan_{kind}")
    a = np.random.default_rng(0).uniform(-1, 1, (3, 16)).astype(np.float32)
    for pos in (0, 5, 15):
        a2 = a.copy()
        a2[1, pos] = np.nan
        npfun = (np.maximum, np.max) if kind.startswith("max") else (np.minimum, np.min)
        want = npfun[0](a2, 0) + npfun[1](a2, axis=1, keepdims=True)
        np.testing.assert_array_equal(np.isnan(f(a2)), np.isnan(want))
        np.testing.assert_allclose(f(a2), want, rtol=1e-6)


@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-6), ("float64", 1e-13), ("float16", 1e-3)])
def test_power_round_trunc_fmod_clamp(dtype, rtol, rand):
    n = 64
    A = ts.placeholder((n,), dtype, name="A")
    B = ts.placeholder((n,), dtype, name="B")
    outs = {
        "power": (lambda i: ts.power(A[i], B[i]), lambda a, b: np.power(a, b)),
        "pow_operator": (lambda i: A[i] ** 2.0 + 2.0 ** B[i], lambda a, b: a ** 2 + 2 ** b),
        "round": (lambda i: ts.round(A[i] * 4.0 - 2.0), lambda a, b: np.round(a * 4 - 2)),
        "trunc": (lambda i: ts.trunc(A[i] * 4.0 - 2.0), lambda a, b: np.trunc(a * 4 - 2)),
        "fmod": (lambda i: ts.fmod(A[i] * 4.0 - 2.0, B[i]), lambda a, b: np.fmod(a * 4 - 2, b)),
        "clamp": (lambda i: ts.clamp(A[i], 0.5, B[i] + 1.0), lambda a, b: np.minimum(np.maximum(a, 0.5), b + 1)),
        "select": (lambda i: ts.select(A[i] > B[i], A[i], B[i] * 2.0), lambda a, b: np.where(a > b, a, b * 2)),
    }
    tensors = [ts.compute((n,), fn, name=name) for name, (fn, _) in outs.items()]
    assert all(t.dtype == dtype for t in tensors)
    f = ts.build(ts.create_schedule([t.op for t in tensors]), [A, B] + tensors, name=f"more_math_{dtype}")
    a = rand(n, dtype, 0.05, 3.0)
    a[:8] = np.array([0.125, 0.375, 0.625, 0.875, 1.125, 0.0, 1.0, 0.5], dtype=dtype)   # ties of round
    b = rand(n, dtype, 0.25, 2.0)
    for got, (name, (_, ref)) in zip(f(a, b), outs.items()):
        want = ref(a.astype("float64"), b.astype("float64"))
        if dtype != "float16" and name in ("round", "trunc", "fmod", "clamp", "select"):   # exact in the type
            want = ref(a, b)
        np.testing.assert_allclose(got, want.astype(dtype), rtol=rtol, atol=1e-6, err_msg=name)


def test_integer_fmod_power_and_clamp(rand):
    I = ts.placeholder((40,), "int16", name="I")
    J = ts.placeholder((40,), "int16", name="J")
    F = ts.compute((40,), lambda i: ts.fmod(I[i], J[i]), name="F")
    P = ts.compute((40,), lambda i: ts.power(I[i], 2), name="P")
    C = ts.compute((40,), lambda i: ts.clamp(I[i], -100, 100), name="C")
    assert (F.dtype, P.dtype, C.dtype) == ("int16", "float32", "int16")
    f = ts.build(ts.create_schedule([F.op, P.op, C.op]), [I, J, F, P, C], name="int_fmod")
    i, j = rand(40, "int16", -3000, 3000), rand(40, "int16", -20, 20)
    j[:3] = [0, -1, 1]
    i[3] = -32768
    j[3] = -1
    got_f, got_p, got_c = f(i, j)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(got_f, np.where(j == 0, 0, np.fmod(i, np.where(j == 0, 1, j))))
    np.testing.assert_allclose(got_p, i.astype("float32") ** 2, rtol=1e-6)
    np.testing.assert_array_equal(got_c, np.clip(i, -100, 100))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32", "int32", "int64"])
def test_bit_counts(dtype, rand):
    """popcount, count_leading_zeros and count_trailing_zeros (Halide's) of the value's own bits (a
    negative value counts its two's complement), 0 giving the width; vectorized loops fall back to scalar."""
    info = np.iinfo(dtype)
    A = ts.placeholder((40,), dtype, name="A")
    outs = ts.compute((40,), lambda i: (ts.popcount(A[i]), ts.count_leading_zeros(A[i]),
                                        ts.count_trailing_zeros(A[i])), name="bits")
    s = ts.create_schedule(outs[0].op)
    s[outs[0]].vectorize(outs[0].op.axis[0])
    a = rand(40, dtype, max(info.min, -2**40), min(info.max, 2**40))
    a[:3] = [0, info.max, info.min]
    got = ts.build(s, [A, *outs], name=f"bits_{dtype}")(a)
    values = [int(v) & ((1 << info.bits) - 1) for v in a]
    want = ([bin(v).count("1") for v in values], [info.bits - v.bit_length() for v in values],
            [info.bits if v == 0 else (v & -v).bit_length() - 1 for v in values])
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, np.array(w, dtype))
    with pytest.raises(TypeError, match=r"popcount\(.*\): an integer argument is needed, got float32"):
        ts.popcount(ts.placeholder((1,), name="F")[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trigonometric_functions(dtype, rand):
    """sin, cos, tan, asin, acos, atan, sinh, cosh and atan2 (TVM's and Halide's) against NumPy; integer
    arguments are computed in float32."""
    A = ts.placeholder((30,), dtype, name="A")
    B = ts.placeholder((30,), dtype, name="B")
    fns = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
           "sinh": np.sinh, "cosh": np.cosh}
    outs = ts.compute((30,), lambda i: tuple(getattr(ts, name)(A[i]) for name in fns) + (ts.atan2(A[i], B[i]),),
                      name="trig")
    s = ts.create_schedule(outs[0].op)
    s[outs[0]].vectorize(outs[0].op.axis[0])
    a, b = rand(30, dtype, -0.99, 0.99), rand(30, dtype, -2, 2)
    got = ts.build(s, [A, B, *outs], name=f"trig_{dtype}")(a, b)
    for g, (name, fn) in zip(got, list(fns.items()) + [("atan2", None)]):
        want = np.arctan2(a, b) if fn is None else fn(a)
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6, err_msg=name)
    assert ts.sin(ts.placeholder((1,), "int32", name="I")[0]).dtype == "float32"
    assert ts.atan2(ts.placeholder((1,), "int16", name="J")[0], 2).dtype == "float32"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log2_log1p_erf_lerp_and_cast(dtype, rand):
    """log2, log1p, erf (against math.erf), lerp and cast as a function, in a vectorized loop with a
    non-dividing tail; integer arguments of log2/log1p/erf are computed in float32."""
    n = 37
    A = ts.placeholder((n,), dtype, name="A")
    B = ts.placeholder((n,), dtype, name="B")
    outs = ts.compute((n,), lambda i: (ts.log2(A[i] + 1.0), ts.log1p(A[i] * 1e-3), ts.erf(B[i]),
                                       ts.lerp(A[i], B[i], 0.25), ts.lerp(A[i], B[i], B[i] * 0.5),
                                       ts.cast("int32", B[i] * 10.0), ts.cast("float32", A[i])), name="m")
    s = ts.create_schedule(outs[0].op)
    xo, xi = s[outs[0]].split(outs[0].op.axis[0], factor=8)
    s[outs[0]].vectorize(xi)
    a, b = rand(n, dtype, 0.0, 3.0), rand(n, dtype, -2.5, 2.5)
    got = ts.build(s, [A, B, *outs], name=f"math2_{dtype}")(a, b)
    erf = np.array([math.erf(v) for v in b.astype(np.float64)]).astype(dtype)
    want = [np.log2(a + 1), np.log1p(a * 1e-3), erf, a * 0.75 + b * 0.25, a * (1 - b * 0.5) + b * (b * 0.5),
            (b * 10.0).astype(np.int32), a.astype(np.float32)]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, k
        if g.dtype == np.int32:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=str(k))
    assert ts.log1p(ts.placeholder((1,), "int32", name="I")[0]).dtype == "float32"


def test_lerp_and_cast_argument_errors():
    I = ts.placeholder((1,), "int32", name="I")
    with pytest.raises(TypeError, match=r"lerp: the endpoints must be floating, got int32"):
        ts.lerp(I[0], I[0], 0.5)
    with pytest.raises(TypeError, match=r"cast: the first argument is the dtype"):
        ts.cast(I[0], "float32")  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match=r"dtype"):
        ts.cast("floaty", I[0])
