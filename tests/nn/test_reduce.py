"""sum, mean and max over axes against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def test_reductions_match_numpy(rand):
    x = ts.placeholder((3, 4, 20), name="x")
    xa = rand(x.shape, low=-1)
    outs = [nn.sum(x, axis=1), nn.mean(x, axis=(0, 2), keepdims=True), nn.max(x, axis=-1), nn.sum(x),
            nn.relu(nn.max(x, axis=0))]
    results, _ = run(outs, [x], [xa])
    refs = [xa.sum(axis=1), xa.mean(axis=(0, 2), keepdims=True), xa.max(axis=-1), xa.sum(),
            np.maximum(xa.max(axis=0), 0)]
    for out, ref in zip(results, refs):
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_reductions_are_comm_reduce_and_reject_repeated_axes():
    x = ts.placeholder((3, 4), name="x")
    assert nn.pattern_of(nn.sum(x, axis=0)) is nn.Pattern.COMM_REDUCE
    with pytest.raises(ValueError, match="twice"):
        nn.sum(x, axis=(1, -1))
    with pytest.raises(ValueError, match="out of range"):
        nn.max(x, axis=2)
