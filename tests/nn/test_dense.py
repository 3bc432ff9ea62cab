"""dense (with and without bias, fused with an activation) and matmul against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.dense import matmul_tile, row_options
from tesched.tiling import RegisterFile

from targets import AVX512, pinned

from .helpers import ATOL, RTOL, run


def test_dense_with_bias_and_relu(rand):
    x, w, b = ts.placeholder((3, 20), name="x"), ts.placeholder((24, 20), name="w"), ts.placeholder((24,), name="b")
    y = nn.relu(nn.dense(x, w, b))
    xa, wa, ba = rand(x.shape, low=-1), rand(w.shape, low=-1), rand(b.shape, low=-1)
    out, kernel = run(y, [x, w, b], [xa, wa, ba])
    ref = np.maximum(xa.astype(np.float64) @ wa.T.astype(np.float64) + ba, 0)
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
    assert str(kernel.lowered).index("produce relu") < str(kernel.lowered).index("produce dense")


def test_dense_alone_and_matmul(rand):
    x, w = ts.placeholder((2, 17), name="x"), ts.placeholder((5, 17), name="w")
    a, b = ts.placeholder((4, 6), name="a"), ts.placeholder((6, 40), name="b")
    arrays = [rand(t.shape, low=-1) for t in (x, w, a, b)]
    (dense, matmul), _ = run([nn.dense(x, w), nn.matmul(a, b)], [x, w, a, b], arrays)
    np.testing.assert_allclose(dense, arrays[0] @ arrays[1].T, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(matmul, arrays[2] @ arrays[3], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shapes, message", [
    (((2, 3), (4, 5)), "reduced axis"),
    (((2, 3, 1), (4, 3)), "2-D"),
])
def test_dense_rejects_bad_shapes(shapes, message):
    x, w = (ts.placeholder(s, name=n) for s, n in zip(shapes, "xw"))
    with pytest.raises(ValueError, match=message):
        nn.dense(x, w)


def test_dense_rejects_a_bias_of_the_wrong_length():
    x, w, b = ts.placeholder((2, 3), name="x"), ts.placeholder((4, 3), name="w"), ts.placeholder((3,), name="b")
    with pytest.raises(ValueError, match="bias"):
        nn.dense(x, w, b)


def test_matmul_rejects_mismatched_inner_sizes():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 5\)"):
        nn.matmul(ts.placeholder((2, 3), name="a"), ts.placeholder((4, 5), name="b"))


@pytest.mark.parametrize("m, k, n", [(64, 12, 96), (40, 9, 64), (16, 5, 48)])
def test_matmul_register_tiles_with_and_without_packing_and_an_epilogue(rand, m, k, n):
    a, b = ts.placeholder((m, k), name="a"), ts.placeholder((k, n), name="b")
    arrays = [rand(a.shape, low=-1), rand(b.shape, low=-1)]
    outputs = [nn.matmul(a, b), nn.relu(nn.matmul(a, b))]
    (plain, activated), _ = run(outputs, [a, b], arrays)
    ref = arrays[0].astype(np.float64) @ arrays[1]
    np.testing.assert_allclose(plain, ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(activated, np.maximum(ref, 0), rtol=RTOL, atol=ATOL)
    with ts.Target(AVX512):                                   # tiles of 8 rows: 4+ row tiles from 32 rows on
        lowered = str(ts.lower(nn.default_schedule(outputs), [a, b, *outputs]))
    assert ("b.local" in lowered) == (m >= 32)                # a panel of b is packed for 4+ row tiles


def test_row_options_are_divisors_and_counts_leaving_a_partial_last_tile():
    assert row_options(12, 8, 4) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert row_options(197, 8, 4) == [1, 4, 5, 6, 7, 8]        # a prime: 24 tiles of 8 and one of 5
    assert row_options(1024, 8, 4) == [1, 2, 4, 5, 6, 7, 8]     # 6: 170 tiles and one of 4
    assert row_options(3, 8, 4) == [1, 3] and row_options(5, 8, 4) == [1, 4, 5]


@pytest.mark.parametrize("m, rows", [(1024, 6), (12, 6), (8, 4), (197, 6)])
def test_avx2_matmul_rows_weigh_the_partial_tile(m, rows):
    """AVX2 holds 6 x 16 (12 accumulators, 2 vectors of b, a broadcast): chosen when its partial last
    tile costs no more than tiles of 4 would (1024 = 170 x 6 + 4), not for 8 rows (6 + a slow 2)."""
    with ts.Target("x86-64-avx2"):
        assert matmul_tile(m, 64, RegisterFile.of()) == (rows, 16)


@pytest.mark.parametrize("m, rows", [(197, 8), (11, 7), (24, 8)])
def test_matmul_of_prime_and_composite_row_counts(rand, m, rows):
    """A prime row count gets the register tile of a divisible one (8 rows x 2 AVX-512 vectors: 24 full
    tiles and one of 5 rows for 197; 11 rows are a tile of 7 and one of 4, both at full rate, where 8 would
    leave 3 rows reloading ``b``), unrolled; the numbers match NumPy on the host."""
    a, b = ts.placeholder((m, 20), name="a"), ts.placeholder((20, 64), name="b")
    out = nn.matmul(a, b)
    arrays = [rand(a.shape, low=-1), rand(b.shape, low=-1)]
    kernel, here = pinned(lambda: ts.build(nn.default_schedule([out]), [a, b, out], name="matmul_rows"))
    with ts.Target(AVX512):
        assert matmul_tile(m, 64, RegisterFile.of()) == (rows, 32)
    assert "ts_min" not in kernel.c_source and "#pragma GCC unroll" not in kernel.c_source
    np.testing.assert_allclose(here(*arrays), arrays[0].astype(np.float64) @ arrays[1], rtol=RTOL,
                               atol=ATOL * np.sqrt(20))
