"""Tests of tesched.te.dtype: dtype names, the promotion rules, literal typing, and promotion in built kernels."""
import numpy as np
import pytest

import tesched as ts
from tesched.te import dtype as dt


@pytest.mark.parametrize("given, expected", [
    ("float32", "float32"), (np.float64, "float64"), (np.dtype("int32"), "int32"), ("int64", "int64"),
    (bool, "bool"),
])
def test_normalize_accepts_names_and_numpy_dtypes(given, expected):
    assert dt.normalize(given) == expected


@pytest.mark.parametrize("bad", ["uint64", "complex64", "not-a-type"])
def test_normalize_rejects_unsupported_dtypes(bad):
    with pytest.raises(TypeError, match="dtype"):
        dt.normalize(bad)


@pytest.mark.parametrize("a, b, expected", [
    ("float32", "float32", "float32"),        # rule 1
    ("uint8", "uint8", "uint8"),
    ("int64", "float32", "float32"),          # rule 2
    ("float64", "int32", "float64"),
    ("uint8", "float16", "float16"),
    ("float32", "float64", "float64"),        # rule 3
    ("float16", "float32", "float32"),
    ("float16", "bfloat16", "float32"),
    ("int32", "int64", "int64"),              # rule 4
    ("uint8", "uint16", "uint16"),
    ("uint8", "int8", "int8"),
    ("uint16", "int8", "int16"),
    ("uint32", "int16", "int32"),
    ("int16", "int8", "int16"),
])
def test_promotion_rules(a, b, expected):
    assert dt.promote(a, b) == expected
    assert dt.promote(b, a) == expected


@pytest.mark.parametrize("a, b, op, expected", [
    ("bool", "int32", "lt", "int32"), ("bool", "bool", "max", "bool"), ("bool", "float32", "eq", "float32"),
])
def test_bool_takes_part_in_comparisons_and_min_max(a, b, op, expected):
    assert dt.promote(a, b, op) == expected


@pytest.mark.parametrize("value, other, expected", [
    (3, "int64", "int64"), (3, "float64", "float64"), (3, None, "int32"), (3, "bool", "int32"),  # rule 5
    (255, "uint8", "uint8"), (-128, "int8", "int8"), (2**40, None, "int64"), (3, "bfloat16", "bfloat16"),
    (0.5, "float64", "float64"), (0.5, "int64", "float32"), (0.5, None, "float32"), (0.5, "float16", "float16"),
    (True, "int32", "bool"),
])
def test_literal_dtype(value, other, expected):
    assert dt.literal_dtype(value, other) == expected


def test_literal_dtype_rejects_non_numbers():
    with pytest.raises(TypeError, match="str"):
        dt.literal_dtype("3", None)


def test_predicates_and_c_types():
    assert dt.is_float("float64") and not dt.is_float("int32")
    assert dt.is_int("bool") and dt.is_int("int64") and not dt.is_int("float32")
    assert set(dt.C_TYPES) == set(dt.ALL_TYPES) == set(ts.dtypes)
    assert dt.numpy_dtype("bool") == np.dtype(bool)


def test_expression_dtypes_follow_the_rules():
    i32 = ts.placeholder((4,), "int32", name="i32")
    i64 = ts.placeholder((4,), "int64", name="i64")
    f32 = ts.placeholder((4,), "float32", name="f32")
    f64 = ts.placeholder((4,), "float64", name="f64")
    assert (i32[0] + i64[0]).dtype == "int64"
    assert (i64[0] + f32[0]).dtype == "float32"
    assert (f32[0] * f64[0]).dtype == "float64"
    assert (i64[0] + 1).dtype == "int64"
    assert (i32[0] * 0.5).dtype == "float32"
    assert (f64[0] * 0.5).dtype == "float64"
    assert (i32[0] < i64[0]).dtype == "bool"
    assert (f32[0] / 2).dtype == "float32"


def test_mixed_dtype_kernel_matches_numpy_promotion(rand):
    i32 = ts.placeholder((8,), "int32", name="i32")
    i64 = ts.placeholder((8,), "int64", name="i64")
    f32 = ts.placeholder((8,), "float32", name="f32")
    f64 = ts.placeholder((8,), "float64", name="f64")
    wide_int = ts.compute((8,), lambda i: i32[i] * 3 + i64[i], name="wide_int")
    int_float = ts.compute((8,), lambda i: i64[i] + f32[i] * 0.5, name="int_float")
    wide_float = ts.compute((8,), lambda i: f32[i] + f64[i] + i32[i], name="wide_float")
    assert (wide_int.dtype, int_float.dtype, wide_float.dtype) == ("int64", "float32", "float64")
    s = ts.create_schedule([wide_int.op, int_float.op, wide_float.op])
    f = ts.build(s, [i32, i64, f32, f64, wide_int, int_float, wide_float], name="promotion")
    a = rand(8, "int32", -50, 50)
    b = rand(8, "int64", -(2**40), 2**40)
    c = rand(8, "float32", -2, 2)
    d = rand(8, "float64", -2, 2)
    got_int, got_if, got_float = f(a, b, c, d)
    np.testing.assert_array_equal(got_int, a.astype(np.int64) * 3 + b)
    np.testing.assert_allclose(got_if, b.astype(np.float32) + c * np.float32(0.5), rtol=1e-6)
    np.testing.assert_allclose(got_float, c.astype(np.float64) + d + a, rtol=1e-12)
    assert got_float.dtype == np.float64
