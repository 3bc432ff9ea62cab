"""Tests of the GPU kernel printer: the code of both dialects, the launch geometry, and the schedules it
refuses. Running the kernels is tested in tests/driver/test_gpu.py."""
import pytest

import tesched as ts
from tesched.codegen.gpu import generate_gpu
from tesched.codegen.gpu_dialect import CUDA, OPENCL
from tesched.lower.pipeline import lower_for_target
from tesched.recipes import gemm_gpu
from tesched.target import Target


def _kernels(s, args, target="opencl"):
    machine = Target(target)
    return generate_gpu(lower_for_target(ts.lower(s, args), machine), machine)


def _scale(rows=None):
    n = ts.var("n") if rows is None else rows
    A = ts.placeholder((n, 37), name="A")
    B = ts.compute((n, 37), lambda i, j: A[i, j] * 2.0, name="B")
    return A, B


@pytest.mark.parametrize("dialect", [OPENCL, CUDA])
def test_bound_loops_become_indices_and_geometry_covers_them(dialect):
    A, B = _scale()
    s = ts.create_schedule(B.op)
    s[B].gpu_tile(B.op.axis[0], B.op.axis[1], 4, 8)
    src = _kernels(s, [A, B], dialect.name)
    assert src.dialect == dialect.name and len(src.kernels) == 1
    for tag in ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"):
        assert dialect.index[tag] in src.source
    assert dialect.kernel in src.source and dialect.barrier not in src.source
    n = s[B].op.input_tensors[0].shape[0]
    blocks, threads = src.kernels[0].geometry(lambda e: ts_eval(e, {id(n): 10}))
    assert blocks == (5, 3, 1) and threads == (8, 4, 1)


def ts_eval(e, values):
    from tesched.driver.allocations import evaluate_size
    return evaluate_size(e, values)


def test_two_root_stages_are_two_kernels_and_the_intermediate_is_scratch():
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: A[i] + 1.0, name="B")
    C = ts.compute((64,), lambda i: B[63 - i] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    for T in (B, C):
        o, i = s[T].split(T.op.axis[0], factor=16)
        s[T].bind(o, ts.thread_axis("blockIdx.x"))
        s[T].bind(i, ts.thread_axis("threadIdx.x"))
    src = _kernels(s, [A, C])
    assert [b.name for b in src.scratch] == ["B"] and len(src.kernels) == 2


def test_unbound_loop_outside_the_kernel_is_refused():
    A, B = _scale(12)
    s = ts.create_schedule(B.op)
    s[B].bind(B.op.axis[1], ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match="loop i of stage B is left unbound outside the GPU kernel"):
        _kernels(s, [A, B])


def test_block_loop_inside_a_thread_loop_is_refused():
    A, B = _scale(12)
    s = ts.create_schedule(B.op)
    s[B].bind(B.op.axis[0], ts.thread_axis("threadIdx.x"))
    s[B].bind(B.op.axis[1], ts.thread_axis("blockIdx.x"))
    with pytest.raises(ts.ScheduleError, match="loop j of stage B is bound to blockIdx.x inside loop i of stage B"):
        _kernels(s, [A, B])


def test_too_many_threads_per_block_names_the_loops():
    A, B = _scale(64)
    s = ts.create_schedule(B.op)
    s[B].bind(B.op.axis[0], ts.thread_axis("threadIdx.y"))
    s[B].bind(B.op.axis[1], ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match=r"2368 threads per block \(threadIdx.y: 64, threadIdx.x: 37\) "
                                                r"but opencl allows 256"):
        _kernels(s, [A, B])
    with pytest.raises(ts.ScheduleError, match="but cuda allows 1024"):
        _kernels(s, [A, B], "cuda")


def _gemm(M=40, N=36, K=50, tile=8, ktile=8, shared=True):
    if shared:
        g = gemm_gpu.shared_tiles(M, N, K, tile, ktile)
        return g.schedule, tuple(g.args), g.caches, g.loops
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].gpu_tile(C.op.axis[0], C.op.axis[1], tile, tile)
    return s, (A, B, C), [], ()


def test_shared_tiles_get_a_barrier_before_their_readers_and_one_before_they_are_overwritten():
    s, args, _, _ = _gemm()
    src = _kernels(s, list(args))
    body = src.source[src.source.index("__kernel"):]
    assert "__local float A_shared[64];" in body and "__local float B_shared[64];" in body
    assert body.count("barrier(") == 2
    reads = body.index("A_shared[(A_shared_off")
    assert body.index("barrier(") < reads < body.rindex("barrier(")
    assert src.kernels[0].shared_bytes == 2 * 64 * 4
    s, args, _, _ = _gemm(shared=False)
    assert "barrier(" not in _kernels(s, list(args)).source


def test_registers_need_no_barrier():
    A, B = _scale(32)
    s = ts.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    bi, bj, ti, tj = s[B].gpu_tile(B.op.axis[0], B.op.axis[1], 4, 8)
    s[BL].compute_at(s[B], tj)
    text = str(ts.lower(s, [A, B]))
    assert "per thread, in registers" in text
    src = _kernels(s, [A, B])
    kernel = src.source.split("__kernel")[1]
    assert "float B_local_r0;" in kernel and "__local" not in kernel     # promoted to a scalar register
    assert "barrier(" not in src.source


def test_cache_stages_computed_where_their_scope_cannot_live_are_refused():
    s, args, (AA, BB), (bi, bj, ti, tj, ko) = _gemm()
    s[AA].compute_at(s[args[2]], tj)
    with pytest.raises(ts.ScheduleError, match="stage A.shared was made for shared memory but is computed at loop"):
        _kernels(s, list(args))
    A, B = _scale(32)
    s = ts.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    bi, bj, ti, tj = s[B].gpu_tile(B.op.axis[0], B.op.axis[1], 4, 8)
    s[BL].compute_at(s[B], bj)      # its loops left serial: every thread would run them
    with pytest.raises(ts.ScheduleError, match="stage B.local was made for local memory but is computed at loop "
                                               "j.outer, where it lives in shared memory"):
        _kernels(s, [A, B])


def test_shared_memory_over_the_limit_names_the_stage():
    s, args, _, _ = _gemm(M=64, N=64, K=64, tile=16, ktile=32)    # two 16 x 32 float tiles: 4 KiB
    _kernels(s, list(args), "cuda")
    machine = Target("cuda").with_gpu_limits(1024, 3072)
    with pytest.raises(ts.ScheduleError, match=r"stage B.shared computed at loop k.outer needs 2048 bytes of "
                                                r"shared memory \(4096 in its kernel\) but cuda has 3072"):
        generate_gpu(lower_for_target(ts.lower(s, list(args)), machine), machine)


def shared_stage(shift, n=64, at_thread=False, bind=True):
    """B = 2 A computed per block of 16 in shared memory (per thread, in registers, with ``at_thread``), its
    loop bound to threadIdx.x if ``bind``; C[i] = B[i] - B[i + shift], a thread per element."""
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((n - 3,), lambda i: B[i] - B[i + shift], name="C")
    s = ts.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(o, ts.thread_axis("blockIdx.x"))
    s[C].bind(i, ts.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], i if at_thread else o)
    if bind:
        s[B].bind(B.op.axis[0], ts.thread_axis("threadIdx.x"))
    return s, [A, C]


@pytest.mark.parametrize("shift, barriers", [(0, 0), (1, 1)])
def test_a_barrier_only_where_another_thread_reads_the_shared_element(shift, barriers):
    s, args = shared_stage(shift)
    src = _kernels(s, args)
    assert "__local float B[" in src.source and src.source.count("barrier(") == barriers


def test_loop_kinds_inside_a_kernel():
    A, B = _scale(32)
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    jo, ji = s[B].split(B.op.axis[1], factor=4)
    s[B].bind(io, ts.thread_axis("blockIdx.x"))
    s[B].bind(jo, ts.thread_axis("threadIdx.x"))
    s[B].unroll(ii)
    s[B].vectorize(ji)
    src = _kernels(s, [A, B], "cuda").source
    assert "#pragma omp" not in src and "i_inner" not in src       # unrolled: four copies of the body
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(io, ts.thread_axis("blockIdx.x"))
    s[B].parallel(ii)
    with pytest.raises(ts.ScheduleError, match="loop i.inner of stage B is parallel .* inside a GPU kernel"):
        _kernels(s, [A, B])


def test_cross_thread_reduction_needs_the_whole_block():
    A = ts.placeholder((32, 64), name="A")
    k = ts.reduce_axis((0, 64), name="k")
    B = ts.compute((32,), lambda i: ts.sum(A[i, k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    ko, ki = s[B].split(k, factor=16)
    s[B].reorder(io, ii, ki, ko)
    s[B].bind(io, ts.thread_axis("blockIdx.x"))
    s[B].bind(ii, ts.thread_axis("threadIdx.y"))
    s[B].bind(ki, ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match="loop k.inner of stage B is a reduction bound to threadIdx.x: a "
                                               "cross-thread reduction needs every thread of the block, but it is "
                                               "inside loop i.inner, bound to threadIdx.y"):
        _kernels(s, [A, B])


def test_a_loop_bound_inside_a_loop_of_the_same_index_is_refused():
    s, args = shared_stage(2, at_thread=True)
    with pytest.raises(ts.ScheduleError, match="loop i of stage B is bound to threadIdx.x inside loop i.inner of "
                                               "stage C, bound to the same index"):
        _kernels(s, args)
