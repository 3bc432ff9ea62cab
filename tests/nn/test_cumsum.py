"""nn.cumsum against NumPy along each axis, in another dtype, and its errors."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import run


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_matches_numpy(axis):
    x = np.random.default_rng(0).standard_normal((3, 17, 5)).astype(np.float32)
    X = ts.placeholder(x.shape, name="X")
    got, _ = run(nn.cumsum(X, axis), [X], [x], name="cumsum_test")
    np.testing.assert_allclose(got, np.cumsum(x, axis=axis), rtol=1e-5, atol=1e-5)


def test_integers_summed_in_another_dtype():
    x = np.random.default_rng(1).integers(-5, 5, (4, 9)).astype(np.int32)
    X = ts.placeholder(x.shape, "int32", name="X")
    got, _ = run(nn.cumsum(X, 1, "int64"), [X], [x], name="cumsum_int")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.cumsum(x, axis=1, dtype=np.int64))


def test_errors():
    with pytest.raises(ValueError, match="cumsum: axis 2 is out of range"):
        nn.cumsum(ts.placeholder((3, 4), name="X"), 2)
    with pytest.raises(TypeError, match="sums of booleans"):
        nn.cumsum(ts.placeholder((3, 4), "bool", name="X"), 0)
