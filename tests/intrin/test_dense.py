"""dense_schedule (tesched.intrin.dense) in its three inner modes, with and without a bias + relu epilogue,
on the host's path and on the forced plain-C path, against NumPy; and its argument checks."""
import numpy as np
import pytest

import tesched as ts
from tesched.intrin import INNER, default_tile, dense_schedule

from .helpers import bias_relu, centered, matmul, tolerance


@pytest.mark.parametrize("m, n, k, tile, kc", [
    (16, 64, 32, None, None),        # the host's default tile, whole reduction per call
    (24, 48, 40, (8, 16), 8),        # reset + 5 updates per tile
    (8, 96, 64, (4, 32), 32),        # one row of tiles
    (32, 32, 16, (16, 16), None),    # one column of tiles
])
@pytest.mark.parametrize("inner", ["intrinsic", "codegen"])
def test_dense_schedule_matches_numpy(m, n, k, tile, kc, inner, rand):
    a, b, c = matmul(m, n, k)
    s = dense_schedule(c, tile=tile, kc=kc if inner == "intrinsic" else None, inner=inner)
    text = str(ts.lower(s, [a, b, c]))
    assert "produce B.packed" in text and "parallel for" in text
    assert ("call tesched_gemm_" in text) == (inner == "intrinsic")
    x, y = centered(rand, (m, k)), centered(rand, (k, n))
    np.testing.assert_allclose(ts.build(s, [a, b, c])(x, y), x @ y, **tolerance("float32"))


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_schedule_with_bias_relu_epilogue(inner, dtype, rand):
    mr, nr = default_tile(dtype=dtype)
    a, b, c = matmul(2 * mr, 2 * nr, 24, dtype)
    bias, out = bias_relu(c)
    s = dense_schedule(out, inner=inner)
    text = str(ts.lower(s, [a, b, bias, out]))
    assert ("call tesched_gemm_bias_relu_" in text) == (inner == "fused")
    x, y, z = centered(rand, (2 * mr, 24), dtype), centered(rand, (24, 2 * nr), dtype), centered(rand, (2 * nr,), dtype)
    expected = np.maximum(x @ y + z, 0)
    np.testing.assert_allclose(ts.build(s, [a, b, bias, out])(x, y, z), expected, **tolerance(dtype))


def test_dense_schedule_on_the_forced_plain_c_path(monkeypatch, rand):
    monkeypatch.setenv("TESCHED_INTRIN_ISA", "c")
    a, b, c = matmul(8, 32, 16)
    kernel = ts.build(dense_schedule(c, tile=(4, 16), kc=8), [a, b, c])
    assert "tesched_gemm_c_float32_4x16x8_update(" in kernel.c_source and "immintrin" not in kernel.c_source
    x, y = centered(rand, (8, 16)), centered(rand, (16, 32))
    np.testing.assert_allclose(kernel(x, y), x @ y, **tolerance("float32"))


def test_dense_schedule_inlines_elementwise_stages_between(rand):
    a, b, c = matmul(8, 32, 16)
    bias = ts.placeholder((32,), name="bias")
    shifted = ts.compute(c.shape, lambda i, j: c[i, j] + bias[j], name="shifted")
    out = ts.compute(c.shape, lambda i, j: ts.maximum(shifted[i, j], 0.0), name="out")
    s = dense_schedule(out, tile=(4, 16), inner="fused")
    x, y, z = centered(rand, (8, 16)), centered(rand, (16, 32)), centered(rand, (32,))
    np.testing.assert_allclose(ts.build(s, [a, b, bias, out])(x, y, z), np.maximum(x @ y + z, 0),
                               **tolerance("float32"))


def test_dense_schedule_argument_errors():
    a, b, c = matmul(12, 32, 16)
    with pytest.raises(ValueError, match="C has 12 rows, not a multiple"):
        dense_schedule(c, tile=(8, 16))
    with pytest.raises(ValueError, match="16 reduction steps, not a multiple"):
        dense_schedule(c, tile=(4, 16), kc=5)
    with pytest.raises(ValueError, match="positive int"):
        dense_schedule(c, tile=(0, 16))
    with pytest.raises(ValueError, match="inner"):
        dense_schedule(c, tile=(4, 16), inner="assembly")
    with pytest.raises(ValueError, match="epilogue"):
        dense_schedule(c, tile=(4, 16), inner="fused")
    bias, out = bias_relu(c)
    with pytest.raises(ValueError, match="partial sum"):
        dense_schedule(out, tile=(4, 16), kc=8, inner="fused")
    x = ts.placeholder((8, 8), name="x")
    with pytest.raises(ValueError, match="matrix product"):
        dense_schedule(ts.compute((8, 8), lambda i, j: x[i, j] * 2.0, name="twice"))
