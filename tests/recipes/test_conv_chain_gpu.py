"""The seed's case on a GPU target: conv3x3 -> relu -> conv3x3 fused in one kernel (conv1 in shared
memory per block, its halo recomputed, no global sync) beside the unfused two kernels, run on an OpenCL
device (pocl) against NumPy, compiled for CUDA by NVRTC, and their global traffic compared."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes import conv_chain, conv_chain_gpu
from tests.gpu_helpers import need_nvrtc, need_opencl


@pytest.fixture(scope="module")
def chain():
    return conv_chain.declare(4, 16, batch=2, mid_channels=8)


@pytest.mark.parametrize("version, kernels", [(conv_chain_gpu.fused, 1), (conv_chain_gpu.unfused, 2)])
def test_fused_and_unfused_match_numpy_on_opencl(chain, version, kernels):
    need_opencl()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 16, 16), dtype=np.float32)
    w1 = rng.standard_normal((8, 4, 3, 3), dtype=np.float32) * 0.3
    w2 = rng.standard_normal((4, 8, 3, 3), dtype=np.float32) * 0.3
    f = ts.build(version(chain, tile=6), chain.args, target="opencl")    # 6 does not divide 16: partial tiles
    assert len(f.gpu.kernels) == kernels
    out = np.full((2, 4, 16, 16), np.nan, np.float32)
    f(x, w1, w2, out)
    np.testing.assert_allclose(out, conv_chain.reference(x, w1, w2), rtol=1e-4, atol=1e-4)


def test_fused_kernel_stages_conv1_in_shared_memory_with_one_barrier():
    chain = conv_chain.declare(4, 24, batch=1, mid_channels=8)
    s = conv_chain_gpu.fused(chain, tile=8)
    text = str(ts.lower(s, chain.args))
    # 3 x 3 tiles of 8 x 8: rows of conv1 computed 9 + 10 + 9 = 28 times for 24 rows, so (28 / 24)^2
    assert f"# conv1: computes {(28 / 24) ** 2:.2f}x its points" in text
    assert "allocate conv1[float32 * 1 * 8 * 10 * 10]" in text and "per block, in shared memory" in text
    from tesched.codegen.gpu import generate_gpu
    from tesched.lower.pipeline import lower_for_target
    for name, shared, barrier in (("opencl", "__local float conv1[800];", "barrier(CLK_LOCAL_MEM_FENCE);"),
                                  ("cuda", "__shared__ float conv1[800];", "__syncthreads();")):
        target = ts.Target(name)
        src = generate_gpu(lower_for_target(ts.lower(s, chain.args), target), target)
        assert shared in src.source and src.source.count(barrier) == 1
        assert src.kernels[0].geometry(lambda e: int(e.value))[1] == (10, 10, 1)   # a thread per conv1 pixel


@pytest.mark.parametrize("version", [conv_chain_gpu.fused, conv_chain_gpu.unfused])
def test_both_compile_with_nvrtc(chain, version):
    need_nvrtc()
    f = ts.build(version(chain, tile=8), chain.args, target="cuda")
    assert set(f.ptx) == {"sm_80", "sm_90"}


def test_traffic_counts_each_blocks_footprint():
    small = conv_chain.declare(4, 16, batch=1)
    t = ts.lower(conv_chain_gpu.fused(small, tile=8), small.args).global_traffic
    # 4 blocks; each reads the 10 x 10 rows/columns of x its conv1 halo needs (clipped at the border),
    # all of w1 and w2 (4 * 4 * 9 each), and writes its 4 x 8 x 8 outputs
    assert t.blocks == 4
    assert t.reads == {"x": 4 * 4 * 10 * 10, "w1": 4 * 144, "w2": 4 * 144} and t.writes == {"conv2": 1024}
    u = ts.lower(conv_chain_gpu.unfused(small, tile=8), small.args).global_traffic
    assert u.writes == {"conv1": 1024, "conv2": 1024} and u.reads["conv1"] == 4 * 4 * 9 * 9   # conv1 has no padding: 9 rows, 9 columns


def test_fused_traffic_is_under_a_third_with_a_wide_middle_layer():
    comparison = conv_chain_gpu.traffic(conv_chain.declare(4, 32, mid_channels=32), tile=14)
    assert comparison.ratio <= 1 / 3, comparison
