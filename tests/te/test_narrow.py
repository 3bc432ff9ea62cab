"""Tests of tesched.te.narrow: saturate_cast, widen, narrow, rounding_shift_right, halving_add and
rounding_halving_add, built (scalar and vectorized) and compared with NumPy computed in int64."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts

INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32"]


def _build(outputs, inputs, name, vectorized):
    s = ts.create_schedule([o.op for o in outputs])
    if vectorized:
        for o in outputs:
            s[o].vectorize(o.op.axis[0])
    return ts.build(s, [*inputs, *outputs], name=name)


def _wide(a):
    return a.astype(np.int64)


@pytest.mark.parametrize("vectorized", [False, True])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_intrinsics_match_halide_semantics(dtype, vectorized, rand):
    n = 48
    info = np.iinfo(dtype)
    A, B = ts.placeholder((n,), dtype, name="A"), ts.placeholder((n,), dtype, name="B")
    outs = [ts.compute((n,), lambda i: ts.halving_add(A[i], B[i]), name="havg"),
            ts.compute((n,), lambda i: ts.rounding_halving_add(A[i], B[i]), name="ravg"),
            ts.compute((n,), lambda i: ts.rounding_shift_right(A[i], 3), name="rshr"),
            ts.compute((n,), lambda i: ts.saturate_cast(A[i], "int8"), name="sat8"),
            ts.compute((n,), lambda i: ts.saturate_cast(A[i], "uint16"), name="satu16")]
    f = _build(outs, [A, B], f"intrinsics_{dtype}_{int(vectorized)}", vectorized)
    a, b = rand(n, dtype, info.min, info.max), rand(n, dtype, info.min, info.max)
    a[:4], b[:4] = [info.min, info.max, info.max, info.min], [info.min, info.max, info.min, info.max]
    got = f(a, b)
    expected = [(_wide(a) + _wide(b)) >> 1, (_wide(a) + _wide(b) + 1) >> 1, (_wide(a) + 4) >> 3,
                np.clip(_wide(a), -128, 127), np.clip(_wide(a), 0, 65535)]
    for g, e, dt in zip(got, expected, [dtype, dtype, dtype, "int8", "uint16"]):
        assert g.dtype == np.dtype(dt)
        np.testing.assert_array_equal(g, e.astype(dt))


@pytest.mark.parametrize("source", ["float32", "float64"])
@pytest.mark.parametrize("target", ["uint8", "int8", "int16", "int32"])
def test_saturate_cast_from_floats_clamps_then_truncates(source, target, rand):
    A = ts.placeholder((32,), source, name="A")
    B = ts.compute((32,), lambda i: ts.saturate_cast(A[i], target), name="B")
    f = _build([B], [A], f"sat_{source}_{target}", True)
    a = rand(32, source, -5e9, 5e9)
    a[:6] = [-0.5, 0.5, 255.9, -129.7, 3e9, -3e9]
    info = np.iinfo(target)
    high = np.array(info.max, source)
    high = np.nextafter(high, np.array(0, source)) if int(high) > info.max else high   # representable, not above
    np.testing.assert_array_equal(f(a), np.clip(np.trunc(a), info.min, high).astype(target))


def test_widen_and_narrow_types():
    u8 = ts.placeholder((4,), "uint8", name="u8")
    f16 = ts.placeholder((4,), "float16", name="f16")
    assert ts.widen(u8[0]).dtype == "uint16" and ts.widen(ts.widen(u8[0])).dtype == "uint32"
    assert ts.widen(f16[0]).dtype == "float32" and ts.narrow(ts.widen(f16[0])).dtype == "float16"
    assert ts.narrow(ts.widen(u8[0])).dtype == "uint8"
    with pytest.raises(TypeError, match="widen.*64-bit uint"):
        ts.widen(ts.widen(ts.widen(u8[0])))
    with pytest.raises(TypeError, match="narrow.*no narrower type than uint8"):
        ts.narrow(u8[0])


def test_intrinsic_errors_name_the_call():
    f32 = ts.placeholder((4,), name="f32")
    u8 = ts.placeholder((4,), "uint8", name="u8")
    with pytest.raises(TypeError, match=r"rounding_shift_right\(f32\[0\]\).*float32"):
        ts.rounding_shift_right(f32[0], 1)
    with pytest.raises(ValueError, match=r"shift must be an int in \[0, 8\)"):
        ts.rounding_shift_right(u8[0], 8)
    with pytest.raises(TypeError, match=r"saturate_cast.*bool"):
        ts.saturate_cast(u8[0] < 3, "uint8")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8), st.integers(0, 30))
def test_rounding_shift_right_rounds_half_up(values, shift):
    """The expression is evaluated by a kernel built once per shift; ties go up (towards +inf)."""
    a = np.array(values, np.int32)
    expected = np.floor(a.astype(np.float64) / 2 ** shift + 0.5).astype(np.int64)
    A = ts.placeholder((8,), "int32", name="A")
    B = ts.compute((8,), lambda i: ts.rounding_shift_right(A[i], shift), name="B")
    f = _build([B], [A], f"rshr_{shift}", False)
    np.testing.assert_array_equal(f(a), expected)
