"""``nn.batch_matmul`` and its default schedule against NumPy, and its argument errors."""
import numpy as np
import pytest

import tesched as ts
from tesched import nn


@pytest.mark.parametrize("shape", [(3, 5, 7, 40), (1, 4, 16, 32), (2, 3, 4, 5), (4, 1, 9, 1)])
def test_matches_numpy(shape):
    n, m, k, p = shape
    a, b = ts.placeholder((n, m, k), name="a"), ts.placeholder((n, k, p), name="b")
    c = nn.batch_matmul(a, b)
    f = ts.build(nn.default_schedule(c), [a, b, c])
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, m, k), dtype=np.float32), rng.standard_normal((n, k, p), dtype=np.float32)
    out = np.full((n, m, p), np.nan, np.float32)
    f(x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def test_bias_epilogue_fuses():
    a, b, bias = ts.placeholder((2, 3, 4), name="a"), ts.placeholder((2, 4, 8), name="b"), ts.placeholder((8,), name="c")
    c = nn.bias_add(nn.batch_matmul(a, b), bias, axis=2)
    f = ts.build(nn.default_schedule(c), [a, b, bias, c])
    rng = np.random.default_rng(1)
    x, y, z = (rng.standard_normal(s, dtype=np.float32) for s in ((2, 3, 4), (2, 4, 8), (8,)))
    out = np.full((2, 3, 8), np.nan, np.float32)
    f(x, y, z, out)
    np.testing.assert_allclose(out, x @ y + z, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa, sb, error, match", [
    ((3, 4), (3, 4, 5), ValueError, "3-D"),
    ((2, 3, 4), (3, 4, 5), ValueError, "batch or reduced"),
    ((2, 3, 4), (2, 5, 5), ValueError, "batch or reduced"),
])
def test_argument_errors(sa, sb, error, match):
    with pytest.raises(error, match=f"batch_matmul: .*{match}"):
        nn.batch_matmul(ts.placeholder(sa, name="a"), ts.placeholder(sb, name="b"))


def test_dtype_mismatch():
    with pytest.raises(TypeError, match="batch_matmul: dtypes"):
        nn.batch_matmul(ts.placeholder((1, 2, 2), name="a"), ts.placeholder((1, 2, 2), name="b", dtype="float64"))
