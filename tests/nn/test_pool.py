"""max_pool2d, avg_pool2d and global_avg_pool2d against NumPy loops over each window."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def window_reference(x, size, stride, pad, reduce):
    """``reduce(window values, window count including padding)`` per output position, by loops."""
    n, c, h, w = x.shape
    oh, ow = (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            top, left = i * stride - pad, j * stride - pad
            rows = slice(max(top, 0), min(top + size, h))
            cols = slice(max(left, 0), min(left + size, w))
            out[:, :, i, j] = reduce(x[:, :, rows, cols])
    return out


def test_pools_match_window_loops(rand):
    x = ts.placeholder((1, 3, 7, 8), name="x")
    xa = rand(x.shape, low=-2, high=-1)  # all negative: a padded zero would win a max
    outs = [nn.max_pool2d(x, 3, strides=2, padding=1), nn.avg_pool2d(x, 3, strides=2, padding=1),
            nn.avg_pool2d(x, 3, strides=2, padding=1, count_include_pad=True), nn.max_pool2d(x, (2, 2)),
            nn.global_avg_pool2d(x)]
    results, _ = run(outs, [x], [xa])
    refs = [window_reference(xa, 3, 2, 1, lambda v: v.max(axis=(2, 3))),
            window_reference(xa, 3, 2, 1, lambda v: v.mean(axis=(2, 3))),
            window_reference(xa, 3, 2, 1, lambda v: v.sum(axis=(2, 3)) / 9),
            window_reference(xa, 2, 2, 0, lambda v: v.max(axis=(2, 3))),
            xa.mean(axis=(2, 3), keepdims=True)]
    for out, ref in zip(results, refs):
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_pool_with_relu_epilogue(rand):
    x = ts.placeholder((2, 4, 6, 6), name="x")
    xa = rand(x.shape, low=-1)
    out, kernel = run(nn.relu(nn.max_pool2d(x, 2)), [x], [xa])
    ref = np.maximum(xa.reshape(2, 4, 3, 2, 3, 2).max(axis=(3, 5)), 0)
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
    assert str(kernel.lowered).index("produce relu") < str(kernel.lowered).index("produce max_pool2d")


@pytest.mark.parametrize("make, message", [
    (lambda x: nn.max_pool2d(x, 3, padding=3), "smaller than the window"),
    (lambda x: nn.avg_pool2d(x, 9), "does not fit"),
    (lambda x: nn.global_avg_pool2d(nn.reshape(x, (4, 16))), "NCHW"),
])
def test_bad_pool_arguments_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make(ts.placeholder((1, 4, 4, 4), name="x"))
