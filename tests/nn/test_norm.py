"""Inference batch_norm against NumPy."""
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


def test_layer_norm_rejects_a_scale_of_the_wrong_length():
    x = ts.placeholder((2, 3), name="x")
    with pytest.raises(ValueError, match="gamma has shape"):
        nn.layer_norm(x, ts.placeholder((2,), name="g"), ts.placeholder((3,), name="b"))
