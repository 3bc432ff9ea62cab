"""Tests of the default GPU schedules: what they bind, where the anchor lives and what is staged in shared
memory (pinned to the GPU targets, whose code does not depend on the host), and their kernels against
NumPy on pocl. Every graph op
through them: tests/graph/test_gpu_executor.py."""
import re

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
def test_conv_epilogue_is_one_kernel_its_window_and_weights_staged_in_shared_memory(target):
    machine = ts.Target(target)
    inputs, out = _conv_bias_relu()
    s = nn.gpu_default_schedule(out, machine)
    src = generate_gpu(lower_for_target(ts.lower(s, inputs + [out]), machine), machine)
    assert len(src.kernels) == 1 and not src.scratch
    assert src.kernels[0].shared_bytes == (3 * 12 * 12 + 4 * 3 * 3 * 3) * 4     # 10 x 10 pixels with their halo
    blocks, threads = src.kernels[0].geometry(lambda e: int(e.value))
    assert blocks == (1, 1, 1) and threads == (10, 10, 1)       # one 4 x 10 x 10 tile, a thread per pixel
    assert "float conv2d[4];" in src.source                      # the anchor's 4 filters of a pixel, in registers


def test_without_shared_tiles_each_thread_computes_one_element():
    machine = ts.Target("cuda")
    inputs, out = _conv_bias_relu()
    s = nn.gpu_default_schedule(out, machine, shared=False)
    src = generate_gpu(lower_for_target(ts.lower(s, inputs + [out]), machine), machine)
    assert [k.shared_bytes for k in src.kernels] == [0]
    assert src.kernels[0].geometry(lambda e: int(e.value)) == ((1, 10, 4), (10, 1, 1))   # (w.outer, h, n * c)


def test_an_anchor_whose_threads_share_nothing_stays_one_thread_per_element():
    machine = ts.Target("cuda")
    A = ts.placeholder((7, 9), name="A")
    out = nn.relu(nn.sum(A, axis=1))
    src = generate_gpu(lower_for_target(ts.lower(nn.gpu_default_schedule(out, machine), [A, out]), machine), machine)
    assert [k.shared_bytes for k in src.kernels] == [0]
    assert src.kernels[0].geometry(lambda e: int(e.value)) == ((1, 1, 1), (7, 1, 1))


def test_dense_bias_relu_in_shared_tiles_matches_numpy_on_opencl(rand):
    need_opencl()
    x, w, b = ts.placeholder((5, 23), name="x"), ts.placeholder((37, 23), name="w"), ts.placeholder((37,), name="b")
    out = nn.relu(nn.bias_add(nn.dense(x, w), b))
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("opencl")), [x, w, b, out], target="opencl")
    assert "__local float" in f.source and "barrier(" in f.source
    xv, wv, bv = rand((5, 23), low=-1), rand((37, 23), low=-1), rand((37,), low=-1)
    np.testing.assert_allclose(f(xv, wv, bv), np.maximum(xv.astype(np.float64) @ wv.T + bv, 0), rtol=RTOL, atol=ATOL)


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
    assert "__shared__" in f.source and "__syncthreads()" in f.source and "sm_90" in f.ptx


# (name, (n, c, h, w), out channels, kernel size, stride, padding, dilation, groups, layout): NCHW with
# OIHW weights, weights stored in blocks of output channels (conv2d_weight_last), or Winograd with tiles
# of 2 or 4. The batch, a stride that does not divide, or a fused block loop over several axes is what
# makes the register tile's region start at divisions of a fused loop.
CONVOLUTIONS = [
    ("batch2-stride2", (2, 3, 9, 7), 8, 3, 2, 1, 1, 1, "oihw"),
    ("dilated", (1, 4, 10, 9), 6, 3, 1, 0, 2, 1, "oihw"),
    ("grouped", (2, 4, 8, 8), 6, 3, 1, 1, 1, 2, "oihw"),
    ("depthwise-stride2", (2, 4, 9, 9), 8, 3, 2, 1, 1, 4, "oihw"),
    ("pointwise", (2, 8, 5, 6), 16, 1, 1, 0, 1, 1, "oihw"),
    ("blocked", (1, 4, 6, 5), 16, 3, 1, 1, 1, 1, "blocked"),
    ("blocked-batch2-stride2", (2, 3, 7, 9), 8, 3, 2, 1, 1, 1, "blocked"),
    ("winograd2-batch2", (2, 4, 6, 6), 6, 3, 1, 1, 1, 1, 2),
    ("winograd4", (1, 3, 8, 8), 5, 3, 1, 1, 1, 1, 4),
]


def _convolution(case, rng):
    """``(inputs, relu(conv), arrays, want)`` of one row of :data:`CONVOLUTIONS` (``want`` in float64)."""
    from tesched.nn import winograd
    from tesched.nn.conv_channels import conv2d_weight_last, weight_last
    _, shape, k, size, stride, pad, dilation, groups, layout = case
    x = ts.placeholder(shape, name="x")
    xv = rng.uniform(-1, 1, shape).astype("float32")
    wv = rng.uniform(-1, 1, (k, shape[1] // groups, size, size)).astype("float32")
    want = conv2d_reference(xv, wv, stride, pad, dilation, groups)
    if layout == "oihw":
        stored = wv
        conv = lambda w: nn.conv2d(x, w, stride, pad, dilation, groups)      # noqa: E731
    elif layout == "blocked":
        stored = weight_last(wv, 8 if k % 8 == 0 else 4)
        conv = lambda w: conv2d_weight_last(x, w, stride, pad, dilation)     # noqa: E731
    else:
        stored = winograd.transform_weight(wv, layout).astype("float32")
        conv = lambda w: winograd.winograd_conv2d(x, w, padding=pad)         # noqa: E731
        want = winograd.reference(xv, stored, layout, (pad,) * 4)
    w = ts.placeholder(stored.shape, name="w")
    out = nn.relu(conv(w))
    return [x, w], out, [xv, stored], np.maximum(want, 0).reshape(out.shape)


def _private_arrays(source):
    """The arrays the kernels declare per thread (a register tile each)."""
    return re.findall(r"\n\s+float (\w+)\[\d+\];", source)


@pytest.mark.parametrize("case", CONVOLUTIONS, ids=[c[0] for c in CONVOLUTIONS])
def test_convolutions_in_shared_tiles_with_register_tiles_match_numpy_on_opencl(case):
    need_opencl()
    inputs, out, arrays, want = _convolution(case, np.random.default_rng(len(case[0])))
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("opencl")), inputs + [out], target="opencl")
    assert "__local float" in f.source and _private_arrays(f.source)
    np.testing.assert_allclose(f(*arrays), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", CONVOLUTIONS, ids=[c[0] for c in CONVOLUTIONS])
def test_convolutions_in_shared_tiles_compile_for_cuda(case):
    need_nvrtc()
    inputs, out, _, _ = _convolution(case, np.random.default_rng(0))
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("cuda")), inputs + [out], target="cuda")
    assert "__shared__ float" in f.source and _private_arrays(f.source) and "sm_90" in f.ptx


def test_a_broadcasting_epilogue_of_a_batch_of_one_is_fused_and_matches_numpy(rand):
    """``add`` broadcasting a (K, 1, 1) shift reads the convolution of a batch of one at index 0 along the
    batch: still its own point, so the epilogue is fused (one kernel)."""
    x, w, b = ts.placeholder((1, 3, 9, 9), name="x"), ts.placeholder((4, 3, 3, 3), name="w"), \
        ts.placeholder((4, 1, 1), name="b")
    out = nn.relu(nn.add(nn.conv2d(x, w, padding=1), b))
    for schedule in (nn.gpu_default_schedule(out, ts.Target("cuda")), ts.auto_schedule(out, target="cuda")):
        src = generate_gpu(lower_for_target(ts.lower(schedule, [x, w, b, out]), ts.Target("cuda")), ts.Target("cuda"))
        assert len(src.kernels) == 1 and not src.scratch
    need_opencl()
    f = ts.build(nn.gpu_default_schedule(out, ts.Target("opencl")), [x, w, b, out], target="opencl")
    xv, wv, bv = rand((1, 3, 9, 9), low=-1), rand((4, 3, 3, 3), low=-1), rand((4, 1, 1), low=-1)
    np.testing.assert_allclose(f(xv, wv, bv), np.maximum(conv2d_reference(xv, wv, 1, 1, 1, 1) + bv, 0), rtol=RTOL,
                               atol=ATOL)
