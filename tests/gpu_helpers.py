"""Skips for the GPU tests: pyopencl with an OpenCL device (pocl gives one on any CPU), NVRTC, a CUDA GPU."""
from __future__ import annotations

import functools

import pytest

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
