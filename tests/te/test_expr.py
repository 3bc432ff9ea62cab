"""Tests of tesched.te.expr: operator overloading, constants, casts, and the C semantics of integer and
logical operations (each checked against NumPy in a built kernel)."""
import numpy as np
import pytest

import tesched as ts
from tesched.te.expr import Binary, Cast, Const


def test_operators_build_expressions():
    A = ts.placeholder((4,), name="A")
    e = (A[0] + 1.0) * 2.0 - A[1] / 4.0
    assert isinstance(e, Binary) and e.op == "sub"
    assert repr(A[0] + A[1]) == "A[0] + A[1]"
    assert (-A[0]).dtype == "float32"


def test_integer_true_division_raises_type_error():
    I = ts.placeholder((4,), "int32", name="I")
    with pytest.raises(TypeError, match="integer true division"):
        ts.compute((4,), lambda i: I[i] / 2, name="bad")
    with pytest.raises(TypeError, match="integer true division"):
        ts.compute((4,), lambda i: 7 / I[i], name="bad")
    assert (I[0].astype("float32") / 2).dtype == "float32"


def test_expression_has_no_truth_value():
    A = ts.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="truth value"):
        bool(A[0] < 1.0)


def test_equality_is_identity_when_used_as_python_bool():
    i = ts.var("i")
    j = ts.var("j")
    assert bool(i == i) and not bool(i == j)
    assert i in [j, i]


def test_constants_check_their_range_and_type():
    assert Const(3).dtype == "int32" and Const(2.5).dtype == "float32"
    with pytest.raises(TypeError, match="int32"):
        Const(2**31, "int32")
    with pytest.raises(TypeError, match="int32"):
        Const(2.5, "int32")
    assert ts.const(2**40, "int64").value == 2**40


def test_astype_builds_cast_only_when_needed():
    A = ts.placeholder((4,), name="A")
    assert A[0].astype("float32") is not None and not isinstance(A[0].astype("float32"), Cast)
    assert isinstance(A[0].astype("int64"), Cast)


def test_binary_needs_an_expression():
    from tesched.te.expr import binary
    with pytest.raises(TypeError, match="at least one"):
        binary("add", 1, 2)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_floordiv_and_mod_have_floor_semantics(dtype, rand):
    A = ts.placeholder((16,), dtype, name="A")
    D = ts.placeholder((16,), dtype, name="D")
    Q = ts.compute((16,), lambda i: A[i] // D[i], name="Q")
    R = ts.compute((16,), lambda i: A[i] % D[i], name="R")
    QC = ts.compute((16,), lambda i: A[i] // -3 + A[i] % 4 * 100, name="QC")
    s = ts.create_schedule([Q.op, R.op, QC.op])
    f = ts.build(s, [A, D, Q, R, QC], name=f"floor_{dtype}")
    a = np.arange(-8, 8).astype(dtype)
    d = np.array([3, -3, 2, -2, 5, -5, 7, -7] * 2, dtype)
    q, r, qc = f(a, d)
    np.testing.assert_array_equal(q, a // d)
    np.testing.assert_array_equal(r, a % d)
    np.testing.assert_array_equal(qc, a // -3 + a % 4 * 100)


def test_float_floor_and_mod_match_numpy(rand):
    A = ts.placeholder((32,), "float64", name="A")
    B = ts.compute((32,), lambda i: ts.floor(A[i] / 0.75) + (A[i] % 0.75) * 10.0, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name="float_floor")
    a = rand(32, "float64", -5, 5)
    np.testing.assert_allclose(f(a), a // 0.75 + (a % 0.75) * 10.0, rtol=1e-12, atol=1e-12)


def test_float_floordiv_is_refused_naming_the_expression():
    A = ts.placeholder((32,), "float64", name="A")
    with pytest.raises(TypeError, match=r"A\[i\] // 0.75.*float64"):
        ts.compute((32,), lambda i: A[i] // 0.75, name="B")


def test_comparisons_logic_and_negation(rand):
    A = ts.placeholder((64,), name="A")
    inside = ts.compute((64,), lambda i: (A[i] > 0.25) & (A[i] < 0.75) | ~(A[i] != 0.5), name="inside")
    neg = ts.compute((64,), lambda i: -A[i] + (A[i] >= 0.5).astype("float32"), name="neg")
    s = ts.create_schedule([inside.op, neg.op])
    f = ts.build(s, [A, inside, neg], name="logic")
    a = rand(64)
    a[3] = 0.5
    got_inside, got_neg = f(a)
    assert got_inside.dtype == np.bool_
    np.testing.assert_array_equal(got_inside, ((a > 0.25) & (a < 0.75)) | (a == 0.5))
    np.testing.assert_allclose(got_neg, -a + (a >= 0.5).astype(np.float32))


def test_casts_between_all_numeric_types(rand):
    F = ts.placeholder((32,), "float64", name="F")
    to_i32 = ts.compute((32,), lambda i: F[i].astype("int32"), name="to_i32")
    to_i64 = ts.compute((32,), lambda i: (F[i] * 1e6).astype("int64"), name="to_i64")
    to_f32 = ts.compute((32,), lambda i: F[i].astype("float32"), name="to_f32")
    back = ts.compute((32,), lambda i: F[i].astype("int32").astype("float64") - F[i], name="back")
    flag = ts.compute((32,), lambda i: F[i].astype("bool"), name="flag")
    s = ts.create_schedule([to_i32.op, to_i64.op, to_f32.op, back.op, flag.op])
    f = ts.build(s, [F, to_i32, to_i64, to_f32, back, flag], name="casts")
    a = rand(32, "float64", -100, 100)
    a[0] = 0.0
    i32, i64, f32, bk, fl = f(a)
    np.testing.assert_array_equal(i32, a.astype(np.int32))           # truncation toward zero, like C
    np.testing.assert_array_equal(i64, (a * 1e6).astype(np.int64))
    np.testing.assert_array_equal(f32, a.astype(np.float32))
    np.testing.assert_allclose(bk, a.astype(np.int32).astype(np.float64) - a)
    np.testing.assert_array_equal(fl, a.astype(bool))


def test_int64_constants_beyond_int32(rand):
    A = ts.placeholder((8,), "int64", name="A")
    big = 3 * 2**40
    B = ts.compute((8,), lambda i: A[i] + ts.const(big, "int64") - 2**33, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name="int64_const")
    a = rand(8, "int64", -1000, 1000)
    np.testing.assert_array_equal(f(a), a + big - 2**33)
