"""Tests of register tiles: a stage made for registers, computed at a block loop, given to the threads as
private arrays where each element is one thread's, and refused with the reason where it is not. Running
the kernels against NumPy is in tests/driver/test_gpu.py."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes import gemm_gpu
from tests.codegen.test_gpu import _kernels
from tests.gpu_helpers import need_opencl, row_sums_at_a_fused_loop


@pytest.mark.parametrize("target, shared, barrier", [("opencl", "__local float", "barrier("),
                                                     ("cuda", "__shared__ float", "__syncthreads();")])
def test_gemm_register_tile_is_private_and_its_panels_shared(target, shared, barrier):
    g = gemm_gpu.register_tiles(70, 66, 33, threads=8, regs=4, ktile=8)
    src = _kernels(g.schedule, g.args, target)
    kernel = src.source[src.source.index(src.kernels[0].name):]
    assert f"{shared} A_shared[256];" in kernel and f"{shared} B_shared[256];" in kernel
    assert "  float C_local[16];" in kernel and f"{shared} C_local" not in kernel     # 4 x 4 per thread
    assert src.kernels[0].shared_bytes == 2 * 256 * 4
    # one barrier after the copies, one before the next step overwrites them; none for the registers
    assert kernel.count(barrier) == 2
    k_loop = kernel.index("for (int64_t k_outer")
    assert kernel.index("C_local[(") < k_loop < kernel.index("A_shared[(") < kernel.index(barrier)
    blocks, threads = src.kernels[0].geometry(lambda e: int(e.value))
    assert blocks == (3, 3, 1) and threads == (8, 8, 1)


def _register_stage(shift, bind=True):
    """B = 2 A made for registers at C's block loop, B's loop bound like C's; C[i] = B[i] + B[i + shift]."""
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((60,), lambda i: B[i] + B[i + shift], name="C")
    s = ts.create_schedule(C.op)
    BL = s.cache_write(B, "local")
    s[B].compute_inline()
    o, i = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(o, ts.thread_axis("blockIdx.x"))
    s[C].bind(i, ts.thread_axis("threadIdx.x"))
    s[BL].compute_at(s[C], o)
    if bind:
        s[BL].bind(s[BL].op.axis[0], ts.thread_axis("threadIdx.x"))
    return s, [A, C]


def test_each_thread_reading_its_own_element_gets_a_register():
    s, args = _register_stage(0)
    kernel = _kernels(s, args).source.split("__kernel")[1]
    assert "float B_local[1];" in kernel or "float B_local_r0;" in kernel
    assert "__local" not in kernel and "barrier(" not in kernel


@pytest.mark.parametrize("shift, bind, why", [
    (2, True, "along dimension 0 a thread's elements are not within one stride of its index"),
    (0, False, "its accesses are not all under loops bound to the same thread indices")])
def test_elements_other_threads_touch_are_refused_with_the_reason(shift, bind, why):
    s, args = _register_stage(shift, bind)
    with pytest.raises(ts.ScheduleError, match=rf"stage B.local was made for local memory but is computed at loop "
                                               rf"i.outer, where it lives in shared memory \(not a register tile: "
                                               rf"{why}\)"):
        _kernels(s, args)


def test_threads_that_would_each_keep_a_partial_sum_are_refused():
    # S.local[i] sums over k.inner, which is bound to threadIdx.y: per-thread copies would hold partial sums
    A = ts.placeholder((32, 8), name="A")
    k = ts.reduce_axis((0, 8), name="k")
    S = ts.compute((32,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    s = ts.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    o, i = s[S].split(S.op.axis[0], factor=16)
    s[S].bind(o, ts.thread_axis("blockIdx.x"))
    s[S].bind(i, ts.thread_axis("threadIdx.x"))
    s[SL].compute_at(s[S], o)
    s[SL].bind(s[SL].op.axis[0], ts.thread_axis("threadIdx.x"))
    s[SL].bind(s[SL].op.reduce_axis[0], ts.thread_axis("threadIdx.y"))
    with pytest.raises(ts.ScheduleError, match="not a register tile"):
        _kernels(s, [A, S])


def test_a_register_tile_at_a_fused_block_loop_is_private_and_matches_numpy(rand):
    """The tile's region starts where isl puts it piecewise (``select(f >= 3, f - 3, f)`` for ``f % 3``) and
    its accesses read the fused loop's divisions: each thread still keeps its one element in a register."""
    s, args = row_sums_at_a_fused_loop(gpu=True)
    kernel = _kernels(s, args).source.split("__kernel")[1]
    assert "float S_local[1];" in kernel and "__local" not in kernel and "barrier(" not in kernel
    need_opencl()
    f = ts.build(s, args, target="opencl")
    a = rand((2, 3, 4, 5))
    np.testing.assert_allclose(f(a), a.sum(axis=3, dtype=np.float64), rtol=1e-5)
