"""Tests of the default GPU schedules: what they bind and where the anchor lives (pinned to the GPU
targets, whose code does not depend on the host), and their kernels against NumPy on pocl. Every graph op
through them: tests/graph/test_gpu_executor.py."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.codegen.gpu import generate_gpu
from tesched.lower.pipeline import lower_for_target
from tests.gpu_helpers import need_nvrtc, need_opencl
from tests.nn.helpers import ATOL, RTOL, conv2d_reference


def _conv_bias_relu(channels=3, size=10):
    x = ts.placeholder((1, channels, size, size), name="x")
    w = ts.placeholder((4, channels, 3, 3), name="w")
    b = ts.placeholder((4,), name="b")
    return [x, w, b], nn.relu(nn.bias_add(nn.conv2d(x, w, strides=1, padding=1), b))


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_conv_epilogue_is_one_kernel_with_the_conv_in_a_register(target):
    machine = ts.Target(target)
    inputs, out = _conv_bias_relu()
    s = nn.gpu_default_schedule(out, machine)
    src = generate_gpu(lower_for_target(ts.lower(s, inputs + [out]), machine), machine)
    assert len(src.kernels) == 1 and not src.scratch and src.kernels[0].shared_bytes == 0
    blocks, threads = src.kernels[0].geometry(lambda e: int(e.value))
    assert blocks == (1, 10, 4) and threads == (10, 1, 1)      # (w.outer, h, n * c) blocks, a thread per column
    assert "float conv2d_r0;" in src.source                      # the anchor's element, in a register


def test_conv_epilogue_matches_numpy_on_opencl(rand):
    need_opencl()
    inputs, out = _conv_bias_relu(channels=5, size=13)
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("opencl")), inputs + [out], target="opencl")
    x, w, b = rand((1, 5, 13, 13)), rand((4, 5, 3, 3), low=-1), rand((4,))
    want = np.maximum(conv2d_reference(x, w, 1, 1, 1, 1) + b[None, :, None, None], 0)
    np.testing.assert_allclose(f(x, w, b), want, rtol=RTOL, atol=ATOL)


def test_threads_per_block_follow_the_innermost_extent_and_the_target():
    assert nn.gpu_schedule.threads_for(7, ts.Target("cuda")) == 7
    assert nn.gpu_schedule.threads_for(1000, ts.Target("cuda")) == nn.gpu_schedule.THREADS
    assert nn.gpu_schedule.threads_for(1000, ts.Target("opencl").with_gpu_limits(16, 1024)) == 16


def _scalars():
    """A sum of every element (a reduction with no data-parallel loop) and a scalar epilogue of it."""
    A = ts.placeholder((37, 11), name="A")
    total = nn.sum(A, axis=None)
    return A, total, nn.relu(nn.add(total, -5.0))


def test_a_sum_to_a_scalar_is_a_cross_thread_reduction_on_opencl(rand):
    need_opencl()
    A, total, shifted = _scalars()
    machine = ts.Target("opencl")
    f = ts.build(nn.gpu_default_schedule(total, machine), [A, total], target="opencl")
    assert "barrier(" in f.source                                  # the tree over the block's partial sums
    a = rand((37, 11))
    np.testing.assert_allclose(f(a), a.sum(dtype=np.float64), rtol=RTOL)
    g = ts.build(nn.gpu_default_schedule(shifted, machine), [A, shifted], target="opencl")
    np.testing.assert_allclose(g(a), max(a.sum(dtype=np.float64) - 5.0, 0.0), rtol=RTOL)


def test_default_gpu_schedules_compile_for_cuda():
    need_nvrtc()
    inputs, out = _conv_bias_relu()
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("cuda")), inputs + [out], target="cuda")
    assert "blockIdx.z" in f.source and f.ptx
