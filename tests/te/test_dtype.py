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


# narrow types ------------------------------------------------------------------------------------
NARROW = ["uint8", "int8", "uint16", "int16", "uint32", "float16", "bfloat16"]


@pytest.mark.parametrize("name", NARROW)
def test_every_narrow_dtype_is_in_the_table(name):
    assert dt.normalize(name) == name and name in ts.dtypes
    info = dt.info(name)
    assert info.itemsize == (4 if name == "uint32" else 2 if "16" in name else 1)
    if name != "bfloat16":
        assert dt.numpy_dtype(name) == np.dtype(name)
        low, high = dt.value_range(name)
        limits = np.finfo(name) if dt.is_float(name) else np.iinfo(name)
        assert (low, high) == (limits.min, limits.max)


def test_bfloat16_arrays_are_ml_dtypes_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert dt.numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dt.normalize(ml_dtypes.bfloat16) == "bfloat16"
    assert dt.value_range("bfloat16")[1] == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


def test_missing_ml_dtypes_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)
    with pytest.raises(ImportError, match=r"tesched\[bf16\]"):
        dt.numpy_dtype("bfloat16")


def _interesting_floats(rng, count=20000):
    """Random float64 values across every binade of float16 and bfloat16, with ties and specials."""
    values = [rng.uniform(-1, 1, count) * 2.0 ** rng.integers(-140, 130, count),
              rng.uniform(-1, 1, count) * 2.0 ** rng.integers(-26, 17, count),
              np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
                        1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.0e38, 3.4e38])]
    return np.concatenate(values)


def test_round_float_matches_numpy_float16_and_ml_dtypes_bfloat16(rng):
    values = _interesting_floats(rng)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).astype(np.float64)
    got = np.array([dt.round_float(v, "float16") for v in values])
    np.testing.assert_array_equal(got, expected)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with np.errstate(over="ignore"):
        singles = values.astype(np.float32)      # compared from float32 (see the cast tests for float64)
    got = np.array([dt.round_float(float(v), "bfloat16") for v in singles])
    np.testing.assert_array_equal(got, singles.astype(ml_dtypes.bfloat16).astype(np.float64))


@pytest.mark.parametrize("a, b, op", [("bool", "bool", "add"), ("bool", "int32", "mul"), ("float32", "bool", "sub")])
def test_bool_arithmetic_is_refused(a, b, op):
    with pytest.raises(TypeError, match=f"bool.*{a}.*{b}|operands {a} and {b}"):
        dt.promote(a, b, op)


@pytest.mark.parametrize("value, other", [(256, "uint8"), (-1, "uint8"), (128, "int8"), (2**32, "uint32"),
                                          (70000, "float16"), (1e6, "float16")])
def test_literals_that_do_not_fit_are_refused(value, other):
    with pytest.raises(TypeError, match=f"{value}.*{other}"):
        dt.literal_dtype(value, other)


def test_errors_name_the_expression_and_both_dtypes():
    u8 = ts.placeholder((4,), "uint8", name="pixels")
    flag = ts.placeholder((4,), "bool", name="flag")
    with pytest.raises(TypeError, match=r"pixels\[0\] \+ 300.*does not fit in uint8.*uint8 and int literal"):
        u8[0] + 300
    with pytest.raises(TypeError, match=r"flag\[0\] \+ pixels\[0\].*bool and uint8"):
        flag[0] + u8[0]
    with pytest.raises(TypeError, match=r"pixels\[0\] / 2.*uint8"):
        u8[0] / 2
    with pytest.raises(TypeError, match=r"pixels\[0\] // 2.0.*float32"):
        u8[0] // 2.0
    with pytest.raises(TypeError, match=r"flag\[0\].*bool"):
        -flag[0]


def test_narrow_expression_dtypes_follow_the_rules():
    u8 = ts.placeholder((4,), "uint8", name="u8")
    i8 = ts.placeholder((4,), "int8", name="i8")
    f16 = ts.placeholder((4,), "float16", name="f16")
    bf16 = ts.placeholder((4,), "bfloat16", name="bf16")
    assert (u8[0] + 1).dtype == "uint8" and (u8[0] + 255).dtype == "uint8"
    assert (u8[0] + i8[0]).dtype == "int8"
    assert (u8[0] * f16[0]).dtype == "float16"
    assert (f16[0] + bf16[0]).dtype == "float32"
    assert (bf16[0] * 0.5).dtype == "bfloat16"
    assert (u8[0] * 0.5).dtype == "float32"
    assert (u8[0] < i8[0]).dtype == "bool"
