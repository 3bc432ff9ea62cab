"""Tests of tesched.recipes.local_laplacian: the unscheduled filter computes its NumPy reference at odd
sizes and depths (levels down to 1x1), and refuses what it cannot declare."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes.local_laplacian import local_laplacian
from tests.autoschedule.helpers import local_laplacian_reference


@pytest.mark.parametrize("shape, levels, k", [((11, 9), 3, 4), ((8, 5), 5, 2)])
def test_local_laplacian_matches_numpy(shape, levels, k):
    A = ts.placeholder(shape, name="A")
    out = local_laplacian(A, levels, k, alpha=0.5, beta=0.8)
    assert out.shape == A.shape
    a = np.random.default_rng(levels).uniform(-0.1, 1.1, shape).astype(np.float32)
    got = ts.build(ts.create_schedule(out.op), [A, out])(a)
    np.testing.assert_allclose(got, local_laplacian_reference(a, levels, k, 0.5, 0.8), rtol=1e-4, atol=1e-5)


def test_local_laplacian_refuses_bad_arguments():
    with pytest.raises(ValueError, match="local_laplacian: B must be 2-D"):
        local_laplacian(ts.placeholder((4,), name="B"))
    with pytest.raises(ValueError, match="levels and k must be at least 2, got levels=1, k=8"):
        local_laplacian(ts.placeholder((4, 4), name="C"), levels=1)
