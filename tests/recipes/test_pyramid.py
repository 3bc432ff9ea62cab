"""Tests of tesched.recipes.pyramid: the interpolation pyramid computes its NumPy reference at any depth
and size (odd sizes, levels down to 1x1), and refuses what it cannot declare."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes.pyramid import interpolate, level_shapes
from tests.autoschedule.helpers import interpolate_reference


@pytest.mark.parametrize("shape, levels", [((9, 7), 1), ((9, 7), 3), ((16, 5), 6)])
def test_interpolate_matches_numpy(shape, levels):
    A = ts.placeholder(shape, name="A")
    out = interpolate(A, levels)
    assert out.shape == A.shape and len(level_shapes(*shape, levels)) == levels
    a = np.random.default_rng(levels).uniform(-1, 1, shape).astype(np.float32)
    got = ts.build(ts.create_schedule(out.op), [A, out])(a)
    np.testing.assert_allclose(got, interpolate_reference(a.astype(np.float64), levels), rtol=1e-5, atol=1e-5)


def test_interpolate_refuses_bad_arguments():
    with pytest.raises(ValueError, match="interpolate: B must be 2-D"):
        interpolate(ts.placeholder((4,), name="B"), 2)
    with pytest.raises(ValueError, match="levels must be at least 1, got 0"):
        interpolate(ts.placeholder((4, 4), name="C"), 0)
