"""Every target preset builds the graph path: layouts, packed panels and tiles are derived from the
target's vector width, down to portable C with no SIMD (one lane), and each build computes what NumPy does."""
import numpy as np
import pytest

import tesched as ts
from tesched import graph as G
from targets import runs_here

from .helpers import ATOL, RTOL, wee_net, wee_net_reference

PRESETS = ["c", "x86-64", "x86-64-avx2", "x86-64-avx512"]


@pytest.mark.parametrize("target", PRESETS)
def test_models_build_and_match_numpy_on_every_preset(target):
    if not runs_here(target):
        pytest.skip(f"this CPU cannot run code built for {target}")
    rng = np.random.default_rng(3)
    f, params = wee_net(channels=16, size=12)
    x = rng.standard_normal((1, 3, 12, 12)).astype("float32")
    w = rng.standard_normal((48, 32)).astype("float32")
    v = G.var("v", shape=(8, 32))
    dense = G.Function([v], G.nn.relu(G.nn.dense(v, G.const(w))))
    a = rng.standard_normal((8, 32)).astype("float32")
    with ts.Target(target):
        exe = G.build(f, params=params)
        dense_exe = G.build(dense)
    np.testing.assert_allclose(exe(x), wee_net_reference(x, params), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(dense_exe(a), np.maximum(a.astype(np.float64) @ w.T, 0), rtol=RTOL, atol=ATOL)
