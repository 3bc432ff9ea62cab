"""Winograd F(2x2,3x3) and F(4x4,3x3): transforms, tile choice, and kernels against direct convolution."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.nn import winograd


def direct(x, w, padding=1):
    xd = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(xd, (3, 3), axis=(2, 3))
    return np.einsum("nchwab,kcab->nkhw", windows, w.astype(np.float64))


@pytest.mark.parametrize("m", winograd.TILES)
def test_the_transforms_compute_the_convolution(m, rand):
    x, w = rand((2, 3, 8, 8), low=-1), rand((4, 3, 3, 3), low=-1)
    tiles = winograd.reference(x, winograd.transform_weight(w.astype(np.float64), m), m, (1, 1, 1, 1))
    np.testing.assert_allclose(tiles.reshape(2, 4, 8, 8), direct(x, w), rtol=1e-10, atol=1e-10)
    assert winograd.max_error(w, x, m) < 1e-5


@pytest.mark.parametrize("m, channels, size", [(2, 3, 6), (4, 5, 8)])
def test_kernels_with_an_epilogue_match_direct_convolution(m, channels, size, rand):
    x, w = rand((1, channels, size, size), low=-1), rand((6, channels, 3, 3), low=-1)
    u = winograd.transform_weight(w, m)
    tensors = [ts.placeholder(arr.shape, name=n) for arr, n in ((x, "x"), (u, "u"))]
    tiles = winograd.winograd_conv2d(*tensors, padding=1)
    assert tiles.shape == (1, 6, size // m, m, size // m, m)
    out = nn.relu(tiles)
    kernel = ts.build(nn.default_schedule(out), tensors + [out], name=f"winograd_relu_{m}")
    got = kernel(x, u).reshape(1, 6, size, size)
    np.testing.assert_allclose(got, np.maximum(direct(x, w), 0), rtol=1e-4, atol=1e-4)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(m=st.sampled_from(winograd.TILES), channels=st.integers(1, 7), out_channels=st.integers(1, 20),
       tiles=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       pads=st.sampled_from([(1, 1, 1, 1), (0, 0, 0, 0), (1, 0, 2, 1)]), batch=st.integers(1, 2))
def test_random_shapes_match_direct_convolution(m, channels, out_channels, tiles, pads, batch, rand):
    """Odd channel counts (blocks of output channels that are not whole vectors), any number of tiles,
    padding on some sides only, batches: the kernel's tiles are the convolution's output."""
    top, left, bottom, right = pads
    height, width = tiles[0] * m + 2 - top - bottom, tiles[1] * m + 2 - left - right
    x, w = rand((batch, channels, height, width), low=-1), rand((out_channels, channels, 3, 3), low=-1)
    u = winograd.transform_weight(w, m)
    data, weights = ts.placeholder(x.shape, name="x"), ts.placeholder(u.shape, name="u")
    out = nn.relu(winograd.winograd_conv2d(data, weights, padding=pads))
    kernel = ts.build(nn.default_schedule(out), [data, weights, out], name="winograd_random")
    xd = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    want = np.einsum("nchwab,kcab->nkhw", np.lib.stride_tricks.sliding_window_view(xd, (3, 3), axis=(2, 3)),
                     w.astype(np.float64))
    got = kernel(x, u).reshape(want.shape)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_epilogues_of_several_ops_and_other_shapes_keep_the_transforms_as_stages(rand):
    """The transforms are computed per band whatever the epilogue reads (two adds, a residual); a reader
    of another shape (here the NCHW image) gets the tiles stored whole, each transform still a stage."""
    m, channels, size = 2, 4, 14
    x, w = rand((1, channels, size, size), low=-1), rand((16, channels, 3, 3), low=-1)
    bias, residual = rand((1, 16, 1, 1, 1, 1), low=-1), rand((1, 16, size // m, m, size // m, m), low=-1)
    u = winograd.transform_weight(w, m)
    data, weights = ts.placeholder(x.shape, name="x"), ts.placeholder(u.shape, name="u")
    b, r = ts.placeholder(bias.shape, name="b"), ts.placeholder(residual.shape, name="r")
    tiles = winograd.winograd_conv2d(data, weights, padding=1)
    out = nn.relu(nn.add(nn.add(tiles, b), r))
    image = ts.compute((1, 16, size, size), lambda n, k, y, z: tiles[n, k, y // m, y % m, z // m, z % m], name="image")
    want = direct(x, w)
    for result, inputs, arrays, expected in [
            (out, [data, weights, b, r], [x, u, bias, residual],
             np.maximum(want.reshape(residual.shape) + bias + residual, 0)),
            (image, [data, weights], [x, u], want)]:
        kernel = ts.build(nn.default_schedule(result), inputs + [result], name="winograd_epilogue")
        assert all(f"produce {stage} " in str(kernel.lowered) for stage in ("winograd_rows", "winograd_input",
                                                                           "winograd_cols", "winograd_last"))
        np.testing.assert_allclose(kernel(*arrays), expected, rtol=1e-4, atol=1e-4)


def test_tile_choice_needs_channels_whole_tiles_and_busy_lanes():
    with ts.Target("x86-64-avx512"):
        check_tile_choice()


def check_tile_choice():
    assert winograd.choose_tile(64, 64, 56, 56) == 4      # 14 tiles of 4x4 per row
    assert winograd.choose_tile(64, 64, 28, 28) == 4      # 7 per row: enough
    assert winograd.choose_tile(64, 64, 14, 14) is None   # 4x4 tiles do not divide 14; 2x2 tiles save too little
    assert winograd.choose_tile(64, 64, 12, 12) is None   # 3 tiles of 4x4 per row: too short
    assert winograd.choose_tile(64, 64, 7, 7) is None
    assert winograd.choose_tile(3, 64, 56, 56) is None
    assert winograd.choose_tile(64, 20, 56, 56) == 4      # blocks of 20 channels: 16 + 4 lanes, 62% busy
    assert winograd.band_rows(14, 14) == 1 and winograd.band_rows(28, 7) == 2 and winograd.band_rows(7, 7) == 1
    assert winograd.lane_use(28, 16) == 28 / 48 and winograd.lane_use(32, 16) == 1.0


def test_bad_shapes_raise_naming_the_op():
    x = ts.placeholder((1, 4, 7, 7), name="x")
    u = ts.placeholder((6, 6, 4, 4), name="u")
    with pytest.raises(ValueError, match="winograd_conv2d: the output 7x7 is not a whole number of 4x4 tiles"):
        winograd.winograd_conv2d(x, u, padding=1)
    with pytest.raises(ValueError, match=r"winograd_conv2d: weights \(6, 6, 3, 4\) do not match data"):
        winograd.winograd_conv2d(x, ts.placeholder((6, 6, 3, 4), name="u3"), padding=1)
    with pytest.raises(ValueError, match="winograd: tile size 3 is not supported"):
        winograd.matrices(3)
    with pytest.raises(ValueError, match="weights must be"):
        winograd.transform_weight(np.zeros((4, 4, 5, 5), np.float32), 2)
