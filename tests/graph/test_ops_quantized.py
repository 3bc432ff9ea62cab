"""Quantized graph ops: a float -> quantize -> qconv2d (+relu) -> qdense -> dequantize network built,
fused (product and requantize in one kernel) and run, against the NumPy interpretation."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.intrin import amx_usable


def _network(rng):
    x = G.var("x", shape=(1, 5, 6, 8))                       # NHWC float32
    q = G.nn.quantize(x, 0.05, 128, "uint8")
    conv_w = rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8)
    conv = G.nn.qconv2d(q, conv_w, rng.uniform(0.001, 0.01, 16), rng.standard_normal(16), 0.05, 128, 0.3, 5,
                        relu=True, padding=1)
    flat = G.reshape(conv, (5 * 6, 16))
    dense_w = rng.integers(-127, 128, (32, 16)).astype(np.int8)
    dense = G.nn.qdense(flat, dense_w, rng.uniform(0.001, 0.01, 32), None, 0.3, 5, 0.5, 120)
    return G.Function([x], G.nn.dequantize(dense, 0.5, 120))


@pytest.mark.usefixtures("host_target")          # the dot-product instructions of this CPU
def test_quantized_network_runs_fused_and_matches_numpy(rng):
    fn = _network(rng)
    x = rng.uniform(-3, 3, (1, 5, 6, 8)).astype(np.float32)
    exe = G.build(fn)
    fused = [k for k in exe.kernels if "requantize" in k.name]
    assert len(fused) == 2 and all("packed" in k.name for k in fused), exe   # product + epilogue, one kernel
    # the convolution's dot products; the dense one's on AMX tiles where the host has them
    dense_kernel = "tesched_amx_" if amx_usable("uint8", "int8") else "dot4"     # of the target built for
    assert all(("dot4" if "conv" in k.name else dense_kernel) in k.c_source for k in fused), [k.name for k in fused]
    np.testing.assert_array_equal(exe(x), G.interpret(fn, x))


def test_quantized_ops_type_check(rng):
    x = G.var("x", shape=(4, 30), dtype="uint8")
    with pytest.raises(ValueError, match="multiple of 4"):
        G.nn.qdense(x, np.zeros((8, 30), np.int8), np.ones(8), None, 0.1, 0, 0.1, 0)
    with pytest.raises(ValueError, match="one scale per output channel"):
        G.nn.qdense(x, np.zeros((8, 32), np.int8), np.ones(3), None, 0.1, 0, 0.1, 0)
