"""Tests of tesched.te.expr: operator overloading, constants, casts, and the C semantics of integer and
logical operations (each checked against NumPy in a built kernel)."""
import numpy as np
import pytest

import tesched as ts
from tesched.te.expr import BinOp, Binary, Cast, Const


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


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"])
def test_bitwise_operators_and_shifts_match_numpy(dtype, rand):
    """``& | ^ ~`` of integers are bitwise; shifts follow NumPy for every amount, the width and beyond
    included (amounts up to 70 and negative ones)."""
    n = 48
    A = ts.placeholder((n,), dtype, name="A")
    B = ts.placeholder((n,), dtype, name="B")
    S = ts.placeholder((n,), "int32", name="S")
    outs = [ts.compute((n,), lambda i: A[i] & B[i], name="band"),
            ts.compute((n,), lambda i: A[i] | B[i], name="bor"),
            ts.compute((n,), lambda i: A[i] ^ B[i], name="bxor"),
            ts.compute((n,), lambda i: ~A[i], name="bnot"),
            ts.compute((n,), lambda i: A[i] << S[i].astype(dtype), name="shl"),
            ts.compute((n,), lambda i: A[i] >> S[i].astype(dtype), name="shr"),
            ts.compute((n,), lambda i: (A[i] << 3) ^ (B[i] >> 2), name="const_shift")]
    assert all(t.dtype == dtype for t in outs)
    f = ts.build(ts.create_schedule([t.op for t in outs]), [A, B, S] + outs, name=f"bits_{dtype}")
    low, high = (0, np.iinfo(dtype).max) if np.dtype(dtype).kind == "u" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    a, b = rand(n, dtype, max(low, -2**40), min(high, 2**40)), rand(n, dtype, max(low, -2**40), min(high, 2**40))
    bits = np.dtype(dtype).itemsize * 8
    s = np.arange(n, dtype="int32") % (bits + 6) - (1 if np.dtype(dtype).kind == "i" else 0)
    s = np.maximum(s, 0) if np.dtype(dtype).kind == "u" else s
    got = f(a, b, s)
    sh = s.astype(dtype)
    want = [a & b, a | b, a ^ b, ~a, np.left_shift(a, sh), np.right_shift(a, sh),
            np.left_shift(a, dtype_cast(3, dtype)) ^ np.right_shift(b, dtype_cast(2, dtype))]
    for g, w, t in zip(got, want, outs):
        np.testing.assert_array_equal(g, w, err_msg=t.name)


def dtype_cast(value: int, dtype: str) -> np.ndarray:
    return np.array(value, dtype=dtype)


def test_bitwise_operators_vectorize(rand):
    A = ts.placeholder((64,), "uint8", name="A")
    B = ts.placeholder((64,), "uint8", name="B")
    C = ts.compute((64,), lambda i: ((A[i] & B[i]) | (~A[i] >> 1)) ^ (B[i] << 2), name="C")
    s = ts.create_schedule(C.op)
    _, inner = s[C].split(C.op.axis[0], factor=32)
    s[C].vectorize(inner)
    f = ts.build(s, [A, B, C], name="bits_vector")
    assert "ts_vload_u8x" in f.c_source and "<<" in f.c_source
    a, b = rand(64, "uint8", 0, 255), rand(64, "uint8", 0, 255)
    np.testing.assert_array_equal(f(a, b), ((a & b) | (~a >> 1)) ^ (b << 2))


def test_bitwise_operators_on_conditions_are_logic_and_on_floats_are_refused():
    A = ts.placeholder((4,), name="A")
    I = ts.placeholder((4,), "int32", name="I")
    assert (A[0] > 0).__xor__(A[1] > 0).dtype == "bool"
    assert ((A[0] > 0) & (I[0] > 1)).dtype == "bool"
    assert (I[0] & 6).dtype == "int32"
    with pytest.raises(TypeError, match="bitwise operations need integer operands, got float32 and float32"):
        A[0] & A[1]
    with pytest.raises(TypeError, match=r"A\[0\] << 2.*need integer operands"):
        A[0] << 2
    with pytest.raises(TypeError, match="bitwise not needs an integer, got float32"):
        ~A[0]
    with pytest.raises(TypeError, match="got bool"):
        ts.bitwise_not(A[0] > 0)
    assert repr(ts.bitwise_xor(I[0], ts.shift_left(I[1], 2))) == "I[0] ^ I[1] << 2"


def test_a_binary_operation_is_named_by_a_binop():
    A = ts.placeholder((4,), name="A", dtype="int32")
    e = A[0] + A[1]
    assert e.op is BinOp.ADD and e.op == "add" and f"{e.op}" == "add"
    assert (A[0] < A[1]).op is BinOp.LT and (A[0] & A[1]).op is BinOp.BITAND
    assert Binary("floordiv", e, e, "int32").op is BinOp.FLOORDIV      # a name is taken as its member
    with pytest.raises(ValueError, match="'plus'"):
        Binary("plus", e, e, "int32")
