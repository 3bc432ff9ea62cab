"""nn.upsample against PyTorch's F.interpolate (compiled with the default schedule), its NumPy reference, the
integer index form for integer scales, and its argument errors."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.resize import upsample_reference

from .helpers import run

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install tesched[torch])")
F = torch.nn.functional

CASES = [  # (input shape, F.interpolate arguments, mode, align_corners)
    ((1, 3, 5, 6), {"scale_factor": 2}, "nearest", False),
    ((2, 2, 5, 6), {"size": (7, 9)}, "nearest", False),
    ((1, 3, 5, 6), {"scale_factor": (1.1, 0.7)}, "nearest", False),
    ((1, 3, 5, 6), {"scale_factor": 2}, "bilinear", True),
    ((1, 3, 5, 6), {"scale_factor": 1.7}, "bilinear", False),
    ((1, 3, 5, 6), {"size": (3, 4)}, "bilinear", True),
    ((1, 2, 7), {"scale_factor": 2.5}, "linear", False),
    ((1, 2, 3, 4, 5), {"scale_factor": 2}, "trilinear", True),
    ((1, 3, 5, 6), {"size": (7, 13)}, "nearest-exact", False),
    ((1, 3, 5, 6), {"scale_factor": 1.7}, "nearest-exact", False),
]


@pytest.mark.parametrize("shape, how, mode, corners", CASES)
def test_matches_interpolate(shape, how, mode, corners):
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    extra = {"align_corners": corners} if mode.endswith("linear") else {}
    want = F.interpolate(torch.from_numpy(x), mode=mode, **how, **extra).numpy()
    factor = how.get("scale_factor")
    scales = None if factor is None else list(factor) if isinstance(factor, tuple) else [factor] * (len(shape) - 2)
    method = "linear" if mode.endswith("linear") else mode.replace("-", "_")
    np.testing.assert_allclose(upsample_reference(x, want.shape[2:], scales, method, corners), want, atol=1e-6)
    X = ts.placeholder(shape, name="X")
    got, _ = run(nn.upsample(X, want.shape[2:], scales, method, corners), [X], [x], name="upsample_test")
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_integer_scales_index_with_integers():
    X = ts.placeholder((1, 2, 4, 4), name="X")
    _, kernel = run(nn.upsample(X, (8, 12)), [X], [np.zeros((1, 2, 4, 4), np.float32)], name="upsample_int")
    assert "floor" not in kernel.c_source


@pytest.mark.parametrize("args, error, message", [
    (((8, 8), None, "cubic"), ValueError, "method must be one of"),
    (((8,), None, "nearest"), ValueError, "one positive output size"),
    (((8, 8), None, "nearest", True), ValueError, "align_corners applies to linear"),
    (((8, 8), [2.0], "linear"), ValueError, "one positive output size"),
])
def test_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        nn.upsample(ts.placeholder((1, 2, 4, 4), name="X"), *args)


def test_linear_needs_floats():
    with pytest.raises(TypeError, match="needs floating data"):
        nn.upsample(ts.placeholder((1, 2, 4, 4), "int32", name="X"), (8, 8), method="linear")
