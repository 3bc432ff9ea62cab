"""Convolution vectorized along output channels, on weights stored (C, KH, KW, K), against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.conv_channels import conv2d_weight_last, weight_last

from .helpers import conv2d_reference


@pytest.mark.parametrize("shape, k, window, strides, padding, dilation", [
    ((1, 3, 9, 9), 32, 3, 2, 1, 1),
    ((2, 4, 7, 6), 16, 3, 1, (1, 0, 2, 1), 1),
    ((1, 5, 10, 10), 64, 5, 2, 2, 2),
    ((1, 8, 14, 14), 96, 1, 2, 0, 1),
])
def test_weight_last_convolution_with_an_epilogue_matches_numpy(shape, k, window, strides, padding, dilation, rand):
    x, w = rand(shape, low=-1), rand((k, shape[1], window, window), low=-1)
    data = ts.placeholder(shape, name="data")
    kernel = ts.placeholder((shape[1], window, window, k), name="kernel")
    out = nn.relu(conv2d_weight_last(data, kernel, strides, padding, dilation))
    f = ts.build(nn.default_schedule(out), [data, kernel, out], name="conv_weight_last_relu")
    top, left, bottom, right = (padding,) * 4 if isinstance(padding, int) else padding
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    want = np.maximum(conv2d_reference(padded, w, strides, 0, dilation, 1), 0)
    np.testing.assert_allclose(f(x, weight_last(w)), want, rtol=1e-4, atol=1e-4)


def test_a_kernel_of_the_wrong_layout_is_refused():
    data = ts.placeholder((1, 4, 8, 8), name="data")
    with pytest.raises(ValueError, match=r"conv2d_weight_last: kernel \(3, 3, 3, 8\) must be \(C, KH, KW, K\)"):
        conv2d_weight_last(data, ts.placeholder((3, 3, 3, 8), name="kernel"))
