"""Convolution vectorized along output channels, on weights stored in blocks of output channels
(K / B, C, KH, KW, B), against NumPy."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.nn.conv_channels import conv2d_weight_last, weight_last, weight_oihw

from .helpers import conv2d_reference


def check_weight_last(x, w, strides, padding, dilation, block=None):
    data = ts.placeholder(x.shape, name="data")
    packed = weight_last(w, block)
    kernel = ts.placeholder(packed.shape, name="kernel")
    out = nn.relu(conv2d_weight_last(data, kernel, strides, padding, dilation))
    f = ts.build(nn.default_schedule(out), [data, kernel, out], name="conv_weight_last_relu")
    top, left, bottom, right = (padding,) * 4 if isinstance(padding, int) else padding
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    want = np.maximum(conv2d_reference(padded, w, strides, 0, dilation, 1), 0)
    np.testing.assert_allclose(f(x, packed), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, k, window, strides, padding, dilation", [
    ((1, 3, 9, 9), 32, 3, 2, 1, 1),
    ((2, 4, 7, 6), 16, 3, 1, (1, 0, 2, 1), 1),
    ((1, 5, 10, 10), 64, 5, 2, 2, 2),
    ((1, 8, 14, 14), 96, 1, 2, 0, 1),
    ((1, 6, 7, 7), 128, 3, 1, 1, 1),
    ((1, 20, 7, 9), 32, 3, 1, 1, 1),      # small blocks: whole block by chunks of input channels (20 = 4 x 5)
    ((1, 16, 9, 9), 48, 3, 2, (1, 0, 0, 1), 1),
])
def test_weight_last_convolution_with_an_epilogue_matches_numpy(shape, k, window, strides, padding, dilation, rand):
    check_weight_last(rand(shape, low=-1), rand((k, shape[1], window, window), low=-1), strides, padding, dilation)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(channels=st.integers(1, 24), size=st.integers(3, 12), blocks=st.integers(1, 3),
       lanes=st.sampled_from([4, 8, 16]), window=st.sampled_from([1, 3]), stride=st.integers(1, 2),
       padding=st.integers(0, 1))
def test_random_shapes_and_blocks_match_numpy(channels, size, blocks, lanes, window, stride, padding, rand):
    """Odd sizes, strides 1 and 2, with and without padding, blocks of any width dividing the output channels."""
    x = rand((1, channels, size, size), low=-1)
    w = rand((blocks * lanes, channels, window, window), low=-1)
    check_weight_last(x, w, stride, padding, 1, block=lanes)


def test_blocked_weights_round_trip_and_keep_each_block_contiguous(rand):
    w = rand((48, 5, 3, 3), low=-1)
    packed = weight_last(w, 16)
    assert packed.shape == (3, 5, 3, 3, 16) and packed.flags.c_contiguous
    np.testing.assert_array_equal(packed[1, 2, 0, 1], w[16:32, 2, 0, 1])
    np.testing.assert_array_equal(weight_oihw(packed), w)
    assert weight_last(w).shape == (1, 5, 3, 3, 48)
    with pytest.raises(ValueError, match="block 32 does not divide the 48 output channels"):
        weight_last(w, 32)


def test_a_kernel_of_the_wrong_layout_is_refused():
    data = ts.placeholder((1, 4, 8, 8), name="data")
    with pytest.raises(ValueError, match=r"conv2d_weight_last: data must be NCHW and kernel 5-D"):
        conv2d_weight_last(data, ts.placeholder((3, 3, 3, 8), name="kernel"))
    with pytest.raises(ValueError,
                       match=r"conv2d_weight_last: kernel \(1, 3, 3, 3, 8\) must be \(K / B, C, KH, KW, B\)"):
        conv2d_weight_last(data, ts.placeholder((1, 3, 3, 3, 8), name="kernel"))


@pytest.mark.parametrize("reader, reference", [
    (lambda conv: nn.reshape(conv, (1, 16 * 6 * 6)), lambda conv: conv.reshape(1, 16 * 6 * 6)),
    (lambda conv: nn.sum(conv, axis=(2, 3)), lambda conv: conv.sum(axis=(2, 3))),
], ids=["flatten", "sum of rows"])
def test_a_reader_of_another_rank_than_nchw_gets_the_generic_schedule(reader, reference, rand):
    """The stage hosting the convolution is not its 4-D NCHW result: a flatten fused into it (rank 2), or,
    when its reader is a reduction, its own blocked product (rank 5). It gets the generic reduction
    schedule (this raised a ValueError unpacking the host's axes as n, k, h, w)."""
    x, w = rand((1, 4, 6, 6), low=-1), rand((16, 4, 3, 3), low=-1)
    data, packed = ts.placeholder(x.shape, name="data"), weight_last(w, 8)
    kernel = ts.placeholder(packed.shape, name="kernel")
    out = reader(conv2d_weight_last(data, kernel, 1, 1, 1))
    f = ts.build(nn.default_schedule(out), [data, kernel, out], name="conv_weight_last_reader")
    want = reference(conv2d_reference(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), w, 1, 0, 1, 1))
    np.testing.assert_allclose(f(x, packed), want, rtol=1e-4, atol=1e-4)
