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
