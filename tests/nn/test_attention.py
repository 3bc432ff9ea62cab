"""The fused attention kernel against NumPy (bias with -inf, a row masked out whole, broadcast biases), the
SIMD exponential against NumPy's over its whole range, and the shape checks."""
import numpy as np
import pytest

import tesched as ts
from tesched.nn.attention import attention, exp_nonpositive

from .helpers import run


def reference(q, kt, v, bias, scale):
    logits = q.astype(np.float64) @ kt * scale + (0 if bias is None else bias)
    top = logits.max(-1, keepdims=True)
    weights = np.where(np.isfinite(top), np.exp(logits - np.where(np.isfinite(top), top, 0)), 0)
    total = weights.sum(-1, keepdims=True)
    return np.where(total > 0, weights / np.where(total > 0, total, 1), 0) @ v


@pytest.mark.parametrize("bias_shape", [None, (7, 20), (3, 1, 20)])
def test_attention_matches_numpy(rand, bias_shape):
    q, kt, v = ts.placeholder((3, 7, 16), name="q"), ts.placeholder((3, 16, 20), name="kt"), \
        ts.placeholder((3, 20, 12), name="v")
    inputs, arrays = [q, kt, v], [rand(t.shape, low=-2, high=2) for t in (q, kt, v)]
    bias = None
    if bias_shape is not None:
        bias = ts.placeholder(bias_shape, name="bias")
        values = rand(bias_shape, low=-1)
        values = np.where(values > 0.5, -np.inf, values).astype(np.float32)
        values[..., 0, :] = -np.inf                                     # one query row sees no key
        inputs, arrays = inputs + [bias], arrays + [values]
    got, _ = run(attention(*inputs[:3], bias, scale=0.3), inputs, arrays)
    want = reference(*arrays[:3], arrays[3] if bias is not None else None, 0.3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_exp_nonpositive_matches_numpy_to_float32_precision_and_keeps_nan():
    x = ts.placeholder((4097,), name="x")
    e = ts.compute(x.shape, lambda i: exp_nonpositive(x[i]), name="e")
    s = ts.create_schedule(e.op)
    s[e].vectorize(e.op.axis[0])
    f = ts.build(s, [x, e], name="exp_nonpositive")
    xa = -np.concatenate([np.linspace(0, 1, 2048), np.geomspace(1, 86, 2048), [np.nan]]).astype(np.float32)
    assert "expf" not in f.c_source
    got = f(xa)
    np.testing.assert_allclose(got[:-1], np.exp(xa[:-1].astype(np.float64)), rtol=5e-7, atol=0)
    assert np.isnan(got[-1])


def test_shapes_are_checked():
    q, v = ts.placeholder((2, 3, 4), name="q"), ts.placeholder((2, 5, 4), name="v")
    with pytest.raises(ValueError, match="attention: shapes .* disagree"):
        attention(q, ts.placeholder((2, 3, 5), name="kt"), v)
    with pytest.raises(ValueError, match=r"attention bias: shapes \(4, 5\) and \(2, 3, 5\) cannot be broadcast"):
        attention(q, ts.placeholder((2, 4, 5), name="kt"), v, ts.placeholder((4, 5), name="b"))
