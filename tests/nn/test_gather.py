"""gather against NumPy's take_along_axis, indices outside the axis clipped; bad indices raise."""
import numpy as np
import pytest

import tesched as ts
from tesched.nn.gather import gather

from .helpers import run


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_matches_take_along_axis(rand, axis):
    x = ts.placeholder((4, 5, 6), name="x")
    i = ts.placeholder((3, 5, 2), "int64", name="i")
    xa = rand(x.shape, low=-1)
    size = x.shape[axis]
    ia = np.random.default_rng(3).integers(-2, size + 2, (3, 5, 2))      # some outside the axis
    got, _ = run(gather(x, i, axis), [x, i], [xa, ia])
    window = tuple(slice(0, n) if a != axis % 3 else slice(None) for a, n in enumerate(ia.shape))
    np.testing.assert_array_equal(got, np.take_along_axis(xa[window], np.clip(ia, 0, size - 1), axis=axis))


def test_bad_indices_raise():
    x = ts.placeholder((4, 5), name="x")
    with pytest.raises(TypeError, match="gather: indices must be int32 or int64"):
        gather(x, ts.placeholder((4, 5), name="f"), 0)
    with pytest.raises(ValueError, match="gather: indices of shape \\(4, 6\\) do not fit"):
        gather(x, ts.placeholder((4, 6), "int32", name="i"), 0)
