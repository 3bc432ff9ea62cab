"""Skips for the GPU tests: pyopencl with an OpenCL device (pocl gives one on any CPU), NVRTC, a CUDA GPU;
and schedules several GPU test modules share."""
from __future__ import annotations

import functools

import pytest

import tesched as ts
from tesched.errors import TeschedError


@functools.lru_cache(maxsize=1)
def _opencl_problem() -> str:
    try:
        from tesched.driver.gpu import opencl_queue
        opencl_queue()
    except (ImportError, TeschedError) as err:
        return str(err)
    return ""


@functools.lru_cache(maxsize=1)
def _nvrtc_problem() -> str:
    try:
        from tesched.driver.gpu import compile_cuda
        compile_cuda('extern "C" __global__ void k(float *a) { a[threadIdx.x] = 0.0f; }', "sm_90")
    except (ImportError, TeschedError, RuntimeError, OSError) as err:
        return f"NVRTC cannot compile here: {err}"
    return ""


@functools.lru_cache(maxsize=1)
def _cuda_device_problem() -> str:
    try:
        from tesched.driver.gpu import CudaRuntime
        CudaRuntime.on(0)
    except (ImportError, TeschedError, RuntimeError, OSError) as err:
        return str(err)
    return ""


def need_opencl() -> None:
    """Skip unless pyopencl finds an OpenCL device (``pip install tesched[gpu]`` brings pocl)."""
    if _opencl_problem():
        pytest.skip(_opencl_problem())


def need_nvrtc() -> None:
    """Skip unless NVRTC compiles CUDA C here (``pip install tesched[gpu]``)."""
    if _nvrtc_problem():
        pytest.skip(_nvrtc_problem())


def need_cuda_device() -> None:
    """Skip unless a CUDA GPU and its driver are present (tests marked ``gpu``)."""
    if _cuda_device_problem():
        pytest.skip(_cuda_device_problem())


def row_sums_at_a_fused_loop(gpu: bool) -> tuple[ts.Schedule, list[ts.Tensor]]:
    """``S[n, y, x] = sum_r A[n, y, x, r]`` accumulated in a write cache computed per iteration of the fused
    loop over ``(n, y)`` (a region starting at a division of the fused loop); with ``gpu``, that loop a
    block and ``x`` its threads. The schedule and its arguments."""
    A = ts.placeholder((2, 3, 4, 5), name="A")
    r = ts.reduce_axis((0, 5), name="r")
    S = ts.compute((2, 3, 4), lambda n, y, x: ts.sum(A[n, y, x, r], axis=r), name="S")
    s = ts.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    n, y, x = S.op.axis
    fused = s[S].fuse(n, y)
    s[SL].compute_at(s[S], fused)
    if gpu:
        s[S].bind(fused, ts.thread_axis("blockIdx.x"))
        s[S].bind(x, ts.thread_axis("threadIdx.x"))
        s[SL].bind(s[SL].op.axis[2], ts.thread_axis("threadIdx.x"))
    return s, [A, S]
