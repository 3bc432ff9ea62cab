"""Unary, broadcasting binary ops and bias_add against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def test_unary_ops(rand):
    x = ts.placeholder((3, 17), name="x")
    xa = rand(x.shape, low=-3, high=3)
    outs, _ = run([nn.relu(x), nn.sigmoid(x), nn.tanh(x), nn.exp(x)], [x], [xa])
    refs = [np.maximum(xa, 0), 1 / (1 + np.exp(-xa.astype(np.float64))), np.tanh(xa), np.exp(xa)]
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_binary_ops_broadcast_like_numpy(rand):
    a, b = ts.placeholder((2, 1, 5), name="a"), ts.placeholder((3, 1), name="b")
    aa, ba = rand(a.shape, low=-1), rand(b.shape, low=0.5, high=2)
    outs, _ = run([nn.add(a, b), nn.subtract(a, b), nn.multiply(a, b), nn.divide(a, b), nn.multiply(2.0, a),
                   nn.subtract(a, 1)], [a, b], [aa, ba])
    refs = [aa + ba, aa - ba, aa * ba, aa / ba, 2 * aa, aa - 1]
    for out, ref in zip(outs, refs):
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_bias_add_along_any_axis(rand):
    x, b1, b2 = ts.placeholder((2, 3, 4), name="x"), ts.placeholder((3,), name="b1"), ts.placeholder((4,), name="b2")
    xa, b1a, b2a = rand(x.shape), rand(b1.shape), rand(b2.shape)
    (y1, y2), _ = run([nn.bias_add(x, b1), nn.bias_add(x, b2, axis=-1)], [x, b1, b2], [xa, b1a, b2a])
    np.testing.assert_allclose(y1, xa + b1a[:, None], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(y2, xa + b2a, rtol=RTOL, atol=ATOL)


def test_patterns_of_elementwise_ops():
    x = ts.placeholder((4,), name="x")
    assert nn.pattern_of(nn.relu(x)) is nn.Pattern.ELEMWISE
    assert nn.pattern_of(nn.add(x, x)) is nn.Pattern.BROADCAST
    assert nn.op_of(nn.sigmoid(x)) == "sigmoid"


def test_bad_operands_raise():
    a, b = ts.placeholder((2, 3), name="a"), ts.placeholder((4,), name="b")
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4,\)"):
        nn.add(a, b)
    with pytest.raises(TypeError, match="dtypes"):
        nn.add(a, ts.placeholder((3,), "float64", name="c"))
    with pytest.raises(TypeError, match="at least one operand"):
        nn.add(1.0, 2.0)
    with pytest.raises(ValueError, match="bias_add"):
        nn.bias_add(a, b)


@pytest.mark.usefixtures("host_target")
def test_float32_tanh_and_sigmoid_are_vector_code_within_a_few_ulps(rand):
    x = ts.placeholder((4, 4096), name="x")
    xa = np.concatenate([np.linspace(-12, 12, 4 * 4096 - 9, dtype=np.float32),
                         np.float32([0, -0.0, 1e-7, -3e-5, 30, -30, np.inf, -np.inf, np.nan])])
    (th, sg), kernel = run([nn.tanh(x), nn.sigmoid(x)], [x], [xa.reshape(x.shape)])
    wide = xa.astype(np.float64).reshape(x.shape)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(th, np.tanh(wide), rtol=4e-7, atol=1e-30)   # NaN in, NaN out
        np.testing.assert_allclose(sg, 1 / (1 + np.exp(-wide)), rtol=0, atol=3e-7)
    assert "tanhf" not in kernel.c_source and "expf" not in kernel.c_source
    assert "ts_vstore_f32x" in kernel.c_source   # vector stores: the loop is SIMD code


def test_float64_tanh_and_sigmoid_keep_the_math_library(rand):
    x = ts.placeholder((8,), "float64", name="x")
    xa = rand(x.shape, dtype="float64", low=-20, high=20)
    (th, sg), _ = run([nn.tanh(x), nn.sigmoid(x)], [x], [xa])
    np.testing.assert_allclose(th, np.tanh(xa), rtol=1e-12)
    np.testing.assert_allclose(sg, 1 / (1 + np.exp(-xa)), rtol=1e-12)


def test_math_functions_and_clip(rand):
    x = ts.placeholder((3, 17), name="x")
    xa = rand(x.shape, low=0.1, high=4)
    outs, _ = run([nn.sqrt(x), nn.rsqrt(x), nn.log(x), nn.abs(nn.subtract(x, 2.0)), nn.negative(x),
                   nn.clip(x, 1.0, 3.0), nn.clip(x, None, 2.5), nn.clip(x, 0.5, None)], [x], [xa])
    wide = xa.astype(np.float64)
    refs = [np.sqrt(wide), 1 / np.sqrt(wide), np.log(wide), np.abs(wide - 2), -wide, np.clip(wide, 1, 3),
            np.minimum(wide, 2.5), np.maximum(wide, 0.5)]
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_clip_keeps_nan_and_rejects_an_empty_range():
    x = ts.placeholder((4,), name="x")
    out, _ = run(nn.clip(x, 0.0, 6.0), [x], [np.float32([np.nan, -1, 7, 2])])
    np.testing.assert_array_equal(out, np.float32([np.nan, 0, 6, 2]))
    with pytest.raises(ValueError, match="a_min=2.0 is greater than a_max=1.0"):
        nn.clip(x, 2.0, 1.0)


@pytest.mark.usefixtures("host_target")
def test_float32_erf_is_vector_code_within_5e7():
    import math
    x = ts.placeholder((2, 4096), name="x")
    xa = np.concatenate([np.linspace(-6, 6, 2 * 4096 - 5, dtype=np.float32), np.float32([0, 1e-8, 40, -40, np.nan])])
    out, kernel = run(nn.erf(x), [x], [xa.reshape(x.shape)])
    ref = np.vectorize(math.erf)(xa.astype(np.float64)).reshape(x.shape)
    np.testing.assert_allclose(out, ref, rtol=0, atol=5e-7)
    assert "erff(" not in kernel.c_source
    assert "ts_vstore_f32x" in kernel.c_source


def test_erf_is_float32_only():
    with pytest.raises(TypeError, match="erf: only float32"):
        nn.erf(ts.placeholder((3,), "float64", name="x"))
