"""``ts.auto_schedule(.., target="opencl" | "cuda")``: kernels on pocl against NumPy (GEMM, conv2d, a
conv -> relu -> conv chain, a blur, reductions, random pipelines), the same schedules compiled by NVRTC,
what ``explain_schedule`` names, and the device limits respected. Decisions are asserted for the ``cuda``
target, whose limits are its presets (no device is asked)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.codegen.gpu import generate_gpu
from tesched.errors import ScheduleError
from tesched.lower.pipeline import lower_for_target
from tesched.recipes import conv_chain
from tests.autoschedule.helpers import blur, data, pipelines, run, softmax_matmul
from tests.gpu_helpers import need_nvrtc, need_opencl
from tests.nn.helpers import ATOL, RTOL, conv2d_reference


def gemm_bias_relu(m=37, n=45, k=29):
    """relu(A @ B + b): sizes that no tile divides."""
    A, B, b = ts.placeholder((m, k), name="A"), ts.placeholder((k, n), name="B"), ts.placeholder((n,), name="b")
    r = ts.reduce_axis((0, k), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    out = nn.relu(nn.bias_add(C, b, axis=1))
    return [A, B, b], [out], lambda a, bb, bias: np.maximum(a.astype(np.float64) @ bb + bias, 0)


def conv_relu(channels=5, filters=6, size=13):
    x, w = ts.placeholder((1, channels, size, size), name="x"), ts.placeholder((filters, channels, 3, 3), name="w")
    out = nn.relu(nn.conv2d(x, w, strides=1, padding=1))
    return [x, w], [out], lambda xv, wv: np.maximum(conv2d_reference(xv, wv, 1, 1, 1, 1), 0)


def chain(channels=4, size=11):
    c = conv_chain.declare(channels, size, 1)
    return c.args[:3], [c.conv2], conv_chain.reference


def row_sum(rows=19, cols=53):
    A = ts.placeholder((rows, cols), name="A")
    r = ts.reduce_axis((0, cols), name="r")
    return [A], [ts.compute((rows,), lambda i: ts.sum(A[i, r], axis=r), name="rows")], lambda a: a.sum(1)


def total(rows=19, cols=53):
    A = ts.placeholder((rows, cols), name="A")
    return [A], [nn.sum(A, axis=None)], lambda a: a.sum(dtype=np.float64)


CASES = {"gemm": gemm_bias_relu, "conv": conv_relu, "chain": chain, "blur": lambda: blur(17, 29),
         "row_sum": row_sum, "total": total, "attention": softmax_matmul}


@pytest.mark.parametrize("case", sorted(CASES))
def test_auto_gpu_schedules_match_numpy_on_opencl(case):
    need_opencl()
    inputs, outputs, reference = CASES[case]()
    s = ts.auto_schedule(outputs, target="opencl")
    f = ts.build(s, inputs + outputs, target="opencl")
    arrays = [data(*(int(d) for d in t.shape), seed=k) for k, t in enumerate(inputs)]
    np.testing.assert_allclose(run(f, inputs, outputs, arrays)[0], reference(*arrays), rtol=RTOL, atol=ATOL)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines())
def test_random_pipelines_match_numpy_on_opencl(pipeline):
    need_opencl()
    A, out, reference = pipeline
    f = ts.build(ts.auto_schedule(out, target="opencl"), [A, out], target="opencl")
    a = data(*(int(d) for d in A.shape))
    np.testing.assert_allclose(f(a), reference(a.astype(np.float64)), rtol=RTOL, atol=ATOL)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 70), st.integers(1, 70), st.integers(1, 40), st.integers(1, 8), st.integers(3, 37))
def test_register_tiles_of_any_size_match_numpy_on_opencl(m, n, k, filters, size):
    """Partial blocks, partial register tiles and partial reduction steps (a GEMM); channel tiles and
    halos at the image's edges (a convolution)."""
    need_opencl()
    for inputs, outputs, reference in (gemm_bias_relu(m, n, k), conv_relu(3, filters, size)):
        f = ts.build(ts.auto_schedule(outputs, target="opencl"), inputs + outputs, target="opencl")
        arrays = [data(*(int(d) for d in t.shape), seed=j) for j, t in enumerate(inputs)]
        np.testing.assert_allclose(run(f, inputs, outputs, arrays)[0], reference(*arrays), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", ["gemm", "conv", "chain", "blur"])
def test_the_same_schedules_compile_for_cuda(case):
    need_nvrtc()
    inputs, outputs, _ = CASES[case]()
    f = ts.build(ts.auto_schedule(outputs, target="cuda"), inputs + outputs, target="cuda")
    assert "__shared__" in f.source and "__syncthreads()" in f.source and "sm_90" in f.ptx


def _kernels(s, args, target):
    return generate_gpu(lower_for_target(ts.lower(s, args), target), target).kernels


def test_gemm_is_one_kernel_with_register_tiles_and_both_operands_staged():
    inputs, outputs, _ = gemm_bias_relu(m=100, n=70, k=40)
    target = ts.Target("cuda")
    s = ts.auto_schedule(outputs, target=target)
    text = ts.explain_schedule(s)
    assert "fused with the reduction C" in text and "block tile 32 x 32: 16 x 16 threads, each a 2 x 2 register " \
                                                       "tile, reduction in steps of 16 (k)" in text
    assert "A: staged in shared memory per step of k (A.shared): does not depend on j" in text
    assert "B: staged in shared memory per step of k (B.shared): does not depend on i" in text
    assert "inlined into their readers (elementwise, recomputed where read): bias_add" in text
    [kernel] = _kernels(s, inputs + outputs, target)
    assert kernel.shared_bytes == (32 * 16 + 16 * 32) * 4                   # the two panels of one step
    assert kernel.geometry(lambda e: int(e.value)) == ((3, 4, 1), (16, 16, 1))


def test_conv_stages_its_input_with_the_halo_and_its_weights():
    inputs, outputs, _ = conv_relu(channels=5, filters=6, size=13)
    s = ts.auto_schedule(outputs, target="cuda")
    text = ts.explain_schedule(s)
    assert "pad: staged in shared memory per step of rc (pad.shared): read through windows of yy, xx" in text
    assert "w: staged in shared memory per step of rc (w.shared): does not depend on yy, xx" in text
    [kernel] = _kernels(s, inputs + outputs, ts.Target("cuda"))
    assert "block tile 2 x 13 x 13: 13 x 13 threads, each a 2 x 1 x 1 register tile" in text    # 2 filters each
    assert kernel.shared_bytes == (5 * 15 * 15 + 2 * 5 * 3 * 3) * 4        # 13 x 13 pixels and their halo


def test_a_blur_computes_its_first_pass_per_block_with_the_halo():
    inputs, outputs, _ = blur(17, 29)
    s = ts.auto_schedule(outputs, target="cuda")
    text = ts.explain_schedule(s)
    assert "bx: computed per block in shared memory, halo included" in text
    assert "A: staged in shared memory per block (A.shared), read by bx" in text
    [kernel] = _kernels(s, inputs + outputs, ts.Target("cuda"))
    assert kernel.shared_bytes == (18 * 18 + 18 * 16) * 4                   # A's 18 x 18 box, bx's 18 x 16


def test_small_devices_get_fewer_threads_and_shorter_steps():
    inputs, outputs, _ = conv_relu(channels=16, filters=4, size=20)
    small = ts.Target("cuda").with_gpu_limits(64, 4096)
    s = ts.auto_schedule(outputs, target=small)
    [kernel] = _kernels(s, inputs + outputs, small)
    blocks, threads = kernel.geometry(lambda e: int(e.value))
    assert threads[0] * threads[1] * threads[2] <= 64 and 0 < kernel.shared_bytes <= 4096
    assert "64 threads and 4 KiB shared memory per block" in ts.explain_schedule(s)
    tiny = ts.Target("cuda").with_gpu_limits(64, 256)               # room for 3 x 3 pixels of one channel
    s = ts.auto_schedule(outputs, target=tiny)
    [kernel] = _kernels(s, inputs + outputs, tiny)
    assert 0 < kernel.shared_bytes <= 256 and "rejected" not in ts.explain_schedule(s)


def test_a_device_too_small_for_shared_tiles_gets_one_thread_per_element_and_says_why():
    inputs, outputs, _ = blur(17, 29)
    tiny = ts.Target("cuda").with_gpu_limits(64, 64)
    s = ts.auto_schedule(outputs, target=tiny)
    text = ts.explain_schedule(s)
    assert "by: one thread per element" in text and "the tiled schedules were rejected" in text
    assert "one thread per element instead of tiles: stage" in text and "but cuda has 64" in text
    assert [k.shared_bytes for k in _kernels(s, inputs + outputs, tiny)] == [0]


def test_a_scalar_reduction_is_spread_over_one_block_and_said_so():
    _, outputs, _ = total()
    text = ts.explain_schedule(ts.auto_schedule(outputs, target="cuda"))
    assert "sum: one thread per element" in text and "a scalar: its reduction spread over one block's threads" in text


def test_a_gpu_target_takes_tensors_not_a_schedule():
    _, outputs, _ = row_sum()
    with pytest.raises(ScheduleError, match="auto_schedule for cuda takes the output tensors"):
        ts.auto_schedule(ts.create_schedule(outputs[0].op), target="cuda")
