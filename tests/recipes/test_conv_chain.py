"""The conv -> relu -> conv recipes: both schedules equal NumPy; the fused one computes conv1 per band."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes import conv_chain


@pytest.fixture(scope="module")
def chain_and_data():
    chain = conv_chain.declare(channels=8, size=12)
    rng = np.random.default_rng(0)
    x = rng.random((1, 8, 12, 12), dtype=np.float32)
    w1 = rng.random((8, 8, 3, 3), dtype=np.float32) - np.float32(0.5)
    w2 = rng.random((8, 8, 3, 3), dtype=np.float32) - np.float32(0.5)
    return chain, (x, w1, w2), conv_chain.reference(x, w1, w2)


def test_reference_is_a_direct_convolution():
    x = np.random.default_rng(1).random((1, 1, 4, 4))
    w = np.zeros((1, 1, 3, 3))
    w[0, 0, 1, 1] = 1.0                      # identity kernel: conv(x) = x, relu(x) = x
    np.testing.assert_allclose(conv_chain.reference(x, w, w), x)


def test_unfused_equals_numpy(chain_and_data):
    chain, inputs, expected = chain_and_data
    f = ts.build(conv_chain.unfused(chain), chain.args, name="chain_unfused")
    np.testing.assert_allclose(f(*inputs), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 4, 5, 12])
def test_fused_equals_numpy_and_recomputes_only_the_halo(chain_and_data, rows):
    chain, inputs, expected = chain_and_data
    sched = conv_chain.fused(chain, rows=rows)
    lowered = ts.lower(sched, chain.args)
    bands = -(-12 // rows)
    conv1_rows = sum(min(12, b * rows + rows + 1) - max(0, b * rows - 1) for b in range(bands))
    assert lowered.redundancy["conv1"] == pytest.approx(conv1_rows / 12)
    text = str(lowered)
    if bands > 1:
        assert text.index("parallel for y.outer") < text.index("allocate conv1[")
    f = ts.build(sched, chain.args, name="chain_fused")
    np.testing.assert_allclose(f(*inputs), expected, rtol=1e-4, atol=1e-4)
