"""softmax against NumPy, along the last axis and along an inner one."""
import numpy as np

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def numpy_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_along_last_and_inner_axes(rand):
    x = ts.placeholder((3, 5, 17), name="x")
    xa = rand(x.shape, low=-20, high=20)  # large values: the maximum must be subtracted
    (last, inner), _ = run([nn.softmax(x), nn.softmax(x, axis=1)], [x], [xa])
    np.testing.assert_allclose(last, numpy_softmax(xa, -1), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(inner, numpy_softmax(xa, 1), rtol=RTOL, atol=ATOL)


def test_softmax_of_a_vector(rand):
    x = ts.placeholder((9,), name="x")
    xa = rand(x.shape, low=-5, high=5)
    out, _ = run(nn.softmax(x), [x], [xa])
    np.testing.assert_allclose(out, numpy_softmax(xa, 0), rtol=RTOL, atol=ATOL)
    assert nn.pattern_of(nn.softmax(x)) is nn.Pattern.OPAQUE
