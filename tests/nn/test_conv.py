"""conv2d and depthwise_conv2d against a direct NumPy reference, fused with an epilogue and alone."""
import re

import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.conv import pointwise_row_width, pointwise_tile
from tesched.tiling import RegisterFile, fits, registers_needed, useful_fmas_per_cycle

from targets import AVX512

from .helpers import ATOL, RTOL, conv2d_reference, run


@pytest.mark.parametrize("channels, size, out_channels, kernel, stride, pad, dilation, groups", [
    (3, 9, 8, 3, 1, 1, 1, 1),       # the common 3x3 "same" conv
    (4, 10, 6, 3, 2, 1, 1, 2),      # strided, grouped, odd output count
    (4, 8, 8, 3, 1, 2, 2, 1),       # dilated
    (16, 6, 5, 1, 1, 0, 1, 1),      # 1x1, no pad stage, channel count with no tile divisor
    (8, 7, 16, 1, 1, 0, 1, 1),      # pointwise: bands of rows flattened into one vectorized loop
    (8, 13, 12, 1, 1, 0, 1, 2),     # pointwise, grouped, odd width
    (8, 12, 16, 1, 2, 0, 1, 1),     # 1x1 but strided: not pointwise
])
def test_conv2d_bias_relu_matches_reference(rand, channels, size, out_channels, kernel, stride, pad, dilation,
                                            groups):
    x = ts.placeholder((1, channels, size, size), name="x")
    w = ts.placeholder((out_channels, channels // groups, kernel, kernel), name="w")
    b = ts.placeholder((out_channels,), name="b")
    conv = nn.conv2d(x, w, strides=stride, padding=pad, dilation=dilation, groups=groups)
    y = nn.relu(nn.bias_add(conv, b))
    xa, wa, ba = rand(x.shape, low=-1), rand(w.shape, low=-1), rand(b.shape, low=-1)
    out, _ = run(y, [x, w, b], [xa, wa, ba])
    ref = conv2d_reference(xa, wa, stride, pad, dilation, groups) + ba[:, None, None]
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target, positions", [(AVX512, 56), ("x86-64-avx2", 56)])
def test_pointwise_conv_tiles_flattened_rows(target, positions):
    """Bands of whole rows computed as one contiguous, vectorized loop: 2 rows of 28, 4 channels x 3.5
    AVX-512 vectors (kept in registers for the 4 channels) or 2 channels x 7 AVX2 vectors (read once per
    channel: gcc folds them into the multiply-adds of a 2-row tile)."""
    x = ts.placeholder((1, 16, 28, 28), name="x")
    w = ts.placeholder((16, 16, 1, 1), name="w")
    y = nn.relu(nn.conv2d(x, w))
    with ts.Target(target):
        lowered = ts.lower(nn.default_schedule(y), [x, w, y])
    p = positions
    assert re.search(rf"vectorized for yy\.xx\.fused in \[([^,\[]+), \1 \+ {p}\)", str(lowered))


@pytest.mark.parametrize("target", [AVX512, "x86-64-avx2", "x86-64"])
@pytest.mark.parametrize("channels, height, width", [(256, 28, 28), (64, 56, 56), (512, 14, 14), (2048, 7, 7),
                                                     (64, 32, 32), (12, 6, 6), (128, 17, 17)])
def test_pointwise_row_width_gives_the_best_fitting_tile(target, channels, height, width):
    """The row width a pointwise image is read as: it divides the image, its register tile fits the
    target's registers, and no tile of whole rows (what the image read as it is allows) does more useful
    multiply-adds per cycle."""
    rf = RegisterFile.of(ts.Target(target))
    row = pointwise_row_width(channels, height, width, rf)
    assert (height * width) % row == 0
    tile, rows = pointwise_tile(channels, height * width // row, row, rf)
    assert channels % tile == 0 and fits(tile, rf.vectors(rows * row), rf)
    whole_rows, band = pointwise_tile(channels, height, width, rf)
    assert useful_fmas_per_cycle(tile, rows * row, rf) >= useful_fmas_per_cycle(whole_rows, band * width, rf)


@pytest.mark.parametrize("target, row, tile, accumulators", [(AVX512, 16, (8, 1), 8), ("x86-64-avx2", 16, (4, 1), 8)])
def test_pointwise_rows_of_28_are_read_as_rows_filling_whole_vectors(target, row, tile, accumulators):
    """128x28x28 -> 256: rows of 28 fill 1.75 AVX-512 or 3.5 AVX2 vectors. Rows of 16 give AVX-512 8
    channels x 1 vector (8 accumulators, the image vector, the weights' broadcasts embedded) and AVX2 4
    channels x 2 vectors (8 accumulators, 2 image vectors and the broadcast in 11 registers): one image
    line from L2 per 8 multiply-adds, where a band of 2 channels x 7 vectors reads 7 lines per 14."""
    rf = RegisterFile.of(ts.Target(target))
    assert pointwise_row_width(256, 28, 28, rf) == row
    assert pointwise_tile(256, 784 // row, row, rf) == tile
    channels, rows = tile
    assert channels * rf.vectors(rows * row) == accumulators
    assert registers_needed(channels, rf.vectors(rows * row), rf) <= rf.registers


def test_conv2d_alone_matches_reference(rand):
    x, w = ts.placeholder((2, 3, 7, 9), name="x"), ts.placeholder((4, 3, 3, 3), name="w")
    xa, wa = rand(x.shape, low=-1), rand(w.shape, low=-1)
    out, _ = run(nn.conv2d(x, w, padding=(1, 1)), [x, w], [xa, wa])
    np.testing.assert_allclose(out, conv2d_reference(xa, wa, 1, 1, 1, 1), rtol=RTOL, atol=ATOL)


def test_fused_conv_is_computed_inside_the_epilogue_loops():
    x, w = ts.placeholder((1, 4, 6, 6), name="x"), ts.placeholder((8, 4, 3, 3), name="w")
    y = nn.relu(nn.conv2d(x, w, padding=1))
    text = str(ts.lower(nn.default_schedule(y), [x, w, y]))
    relu_at, conv_at = text.index("produce relu"), text.index("produce conv2d")
    assert relu_at < conv_at, "the conv must be produced inside the relu's loop nest"
    assert text.count("produce") == 3  # pad (at the root), relu, and conv2d inside relu


@pytest.mark.parametrize("multiplier, stride", [(1, 1), (2, 2)])
def test_depthwise_conv2d_matches_grouped_reference(rand, multiplier, stride):
    x = ts.placeholder((1, 3, 8, 7), name="x")
    w = ts.placeholder((3 * multiplier, 1, 3, 3), name="w")
    y = nn.relu(nn.depthwise_conv2d(x, w, strides=stride, padding=1))
    xa, wa = rand(x.shape, low=-1), rand(w.shape, low=-1)
    out, _ = run(y, [x, w], [xa, wa])
    ref = conv2d_reference(xa, wa, stride, 1, 1, groups=3)
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=RTOL, atol=ATOL)


def test_conv2d_with_one_group_per_channel_is_depthwise():
    x, w = ts.placeholder((1, 4, 5, 5), name="x"), ts.placeholder((4, 1, 3, 3), name="w")
    assert nn.op_of(nn.conv2d(x, w, groups=4)) == "depthwise_conv2d"
    assert nn.pattern_of(nn.conv2d(x, w, groups=4)) is nn.Pattern.OUT_ELEMWISE_FUSABLE


@pytest.mark.parametrize("data_shape, kernel_shape, kwargs, message", [
    ((1, 3, 8, 8), (4, 2, 3, 3), {}, "groups=1"),
    ((1, 4, 8, 8), (4, 2, 3, 3), {"groups": 3}, "groups=3"),
    ((1, 3, 2, 2), (4, 3, 3, 3), {}, "does not fit"),
    ((3, 8, 8), (4, 3, 3, 3), {}, "NCHW"),
    ((1, 3, 8, 8), (4, 3, 3, 3), {"strides": 0}, "strides"),
])
def test_conv2d_rejects_bad_shapes(data_shape, kernel_shape, kwargs, message):
    x, w = ts.placeholder(data_shape, name="x"), ts.placeholder(kernel_shape, name="w")
    with pytest.raises(ValueError, match=message):
        nn.conv2d(x, w, **kwargs)


def test_conv2d_rejects_mixed_dtypes():
    x, w = ts.placeholder((1, 3, 8, 8), name="x"), ts.placeholder((4, 3, 3, 3), "float64", name="w")
    with pytest.raises(TypeError, match="float64"):
        nn.conv2d(x, w)
