"""Tests of tesched.arith.value_range: ranges of data-dependent indices (clamps, casts, narrow reads), and
the unbounded ones."""
import math

import numpy as np

import tesched as ts
from tesched.arith.value_range import value_range


def test_a_clamped_float_scaled_and_truncated_to_int_is_bounded():
    im = ts.placeholder((4,), name="im")
    i = ts.reduce_axis((0, 4), "i")
    e = ts.cast("int32", ts.clamp(im[i], 0.0, 1.0) * 255.0 + 0.5)
    assert value_range(e, {}) == (0.0, 255.0)
    assert value_range(e + i * 2, {id(i): (0.0, 3.0)}) == (0.0, 261.0)


def test_narrow_integer_reads_span_their_dtype_and_wide_ones_are_unbounded():
    u8 = ts.placeholder((4,), "uint8", name="u8")
    i32 = ts.placeholder((4,), "int32", name="i32")
    assert value_range(u8[0] // 2, {}) == (0.0, 127.0)
    assert value_range(i32[0], {}) == (-math.inf, math.inf)
    assert value_range(ts.clamp(i32[0], 0, 9) % 4, {}) == (0.0, 3.0)
    assert value_range(ts.if_then_else(u8[0] > 3, ts.cast("int32", u8[1]) - 300, 7), {}) == (-300.0, 7.0)
    assert value_range(u8[0] + 100, {}) == (0.0, 255.0)          # uint8 arithmetic wraps


def test_ranges_contain_every_value_of_random_inputs():
    """The range of an expression of a uint8 read holds its value at every uint8."""
    u8 = ts.placeholder((1,), "uint8", name="u8")
    e = ts.maximum(ts.cast("int32", u8[0]) * -3 + 40, ts.cast("int32", u8[0]) // 5)
    low, high = value_range(e, {})
    values = np.maximum(np.arange(256) * -3 + 40, np.arange(256) // 5)
    assert low <= values.min() and values.max() <= high
