"""batch_norm (inference and training mode), batch_moments and layer_norm against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def test_batch_norm_along_channels(rand):
    x = ts.placeholder((2, 3, 4, 5), name="x")
    stats = [ts.placeholder((3,), name=n) for n in ("gamma", "beta", "mean", "var")]
    xa = rand(x.shape, low=-1)
    gamma, beta, mean, var = (rand((3,), low=0.5, high=2) for _ in range(4))
    out, _ = run(nn.batch_norm(x, *stats, epsilon=1e-3), [x, *stats], [xa, gamma, beta, mean, var])
    shape = (1, 3, 1, 1)
    ref = (xa - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * gamma.reshape(shape) + beta.reshape(shape)
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_batch_norm_rejects_statistics_of_the_wrong_length():
    x = ts.placeholder((2, 3), name="x")
    stats = [ts.placeholder((3,), name=n) for n in ("gamma", "beta", "mean")]
    with pytest.raises(ValueError, match="var has shape"):
        nn.batch_norm(x, *stats, ts.placeholder((2,), name="var"))


@pytest.mark.parametrize("shape,axis", [((3, 4, 5, 6), 1), ((2, 5, 7), -1), ((9, 3), 1)])
def test_batch_norm_in_training_mode_uses_the_batch_statistics(rand, shape, axis):
    x = ts.placeholder(shape, name="x")
    c = shape[axis]
    gamma, beta = ts.placeholder((c,), name="gamma"), ts.placeholder((c,), name="beta")
    mean, var = nn.batch_moments(x, axis)
    xa, ga, ba = rand(shape, low=-2, high=3), rand((c,), low=0.5, high=2), rand((c,), low=-1, high=1)
    (out, m, v), _ = run([nn.batch_norm_train(x, gamma, beta, 1e-3, axis), mean, var], [x, gamma, beta], [xa, ga, ba])
    others = tuple(a for a in range(len(shape)) if a != axis % len(shape))
    keep = [c if a == axis % len(shape) else 1 for a in range(len(shape))]
    x64 = xa.astype(np.float64)
    ref = (x64 - x64.mean(others, keepdims=True)) / np.sqrt(x64.var(others, keepdims=True) + 1e-3)
    np.testing.assert_allclose(out, ref * ga.reshape(keep) + ba.reshape(keep), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(m, x64.mean(others), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(v, x64.var(others, ddof=1), rtol=RTOL, atol=ATOL)


def test_batch_norm_in_training_mode_refuses_what_it_cannot_normalise():
    x = ts.placeholder((2, 3), name="x")
    with pytest.raises(ValueError, match=r"batch_norm_train: beta has shape \(2,\), expected \(3,\)"):
        nn.batch_norm_train(x, ts.placeholder((3,), name="g"), ts.placeholder((2,), name="b"))
    n = ts.var("n")
    with pytest.raises(ValueError, match="batch_norm_train: the axes reduced over"):
        nn.batch_norm_train(ts.placeholder((n, 3), name="y"), ts.placeholder((3,), name="g"),
                            ts.placeholder((3,), name="b"))
    with pytest.raises(ValueError, match="batch_moments: one element per channel"):
        nn.batch_moments(ts.placeholder((1, 3), name="z"))


def test_layer_norm_over_the_last_and_an_inner_axis(rand):
    x = ts.placeholder((2, 5, 19), name="x")
    g1, b1 = ts.placeholder((19,), name="g1"), ts.placeholder((19,), name="b1")
    g2, b2 = ts.placeholder((5,), name="g2"), ts.placeholder((5,), name="b2")
    xa = rand(x.shape, low=90, high=110)   # a large mean: the variance must not cancel
    arrays = [xa, rand((19,)), rand((19,)), rand((5,)), rand((5,))]
    (last, inner), _ = run([nn.layer_norm(x, g1, b1, epsilon=1e-5), nn.layer_norm(x, g2, b2, axis=1, epsilon=1e-3)],
                           [x, g1, b1, g2, b2], arrays)
    wide = xa.astype(np.float64)

    def reference(axis, gamma, beta, eps):
        shape = [1, 1, 1]
        shape[axis] = -1
        centred = wide - wide.mean(axis=axis, keepdims=True)
        return centred / np.sqrt(wide.var(axis=axis, keepdims=True) + eps) * gamma.reshape(shape) + beta.reshape(shape)

    np.testing.assert_allclose(last, reference(2, arrays[1], arrays[2], 1e-5), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(inner, reference(1, arrays[3], arrays[4], 1e-3), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(3, 7, 64), (5, 40), (197, 192), (2, 4)])
def test_layer_norm_over_the_last_axis_in_lanes(rand, shape):
    """Last axes that whole vectors divide (16, 8 lanes) take per-lane partial sums; 4 elements take the
    other schedule. A large mean and a wide spread of magnitudes: the variance must not cancel."""
    x = ts.placeholder(shape, name="x")
    g, b = ts.placeholder(shape[-1:], name="g"), ts.placeholder(shape[-1:], name="b")
    xa = rand(shape, low=-3, high=3) * rand(shape[:-1] + (1,), low=0.1, high=10) + 50
    ga, ba = rand(shape[-1:], low=0.5, high=2), rand(shape[-1:], low=-1, high=1)
    out, _ = run(nn.layer_norm(x, g, b, epsilon=1e-5), [x, g, b], [xa, ga, ba])
    wide = xa.astype(np.float64)
    ref = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5) * ga + ba
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_layer_norm_rejects_a_scale_of_the_wrong_length():
    x = ts.placeholder((2, 3), name="x")
    with pytest.raises(ValueError, match="gamma has shape"):
        nn.layer_norm(x, ts.placeholder((2,), name="g"), ts.placeholder((3,), name="b"))
