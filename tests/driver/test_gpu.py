"""Tests of GPU kernels run on an OpenCL device (pocl where there is no GPU) against NumPy, compiled by
NVRTC for CUDA, and run on a CUDA GPU where there is one (``pytest -m gpu``)."""
import importlib
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tesched as ts
from tesched.driver import gpu
from tesched.recipes import gemm_gpu
from tests.gpu_helpers import need_cuda_device, need_nvrtc, need_opencl


def _scale_schedule(xf, yf):
    n = ts.var("n")
    A = ts.placeholder((n, 37), name="A")
    B = ts.compute((n, 37), lambda i, j: ts.exp(A[i, j]) * 2.0 - 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].gpu_tile(B.op.axis[0], B.op.axis[1], xf, yf)
    return s, A, B


@settings(max_examples=5, deadline=None)
@given(xf=st.integers(1, 8), yf=st.integers(1, 16), rows=st.integers(1, 20))
def test_gpu_tile_on_opencl_matches_numpy(xf, yf, rows):
    need_opencl()
    s, A, B = _scale_schedule(xf, yf)
    f = ts.build(s, [A, B], target="opencl")
    a = np.random.rand(rows, 37).astype("float32")
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)


def test_two_kernels_with_an_intermediate_and_pyopencl_arrays_in_place():
    need_opencl()
    cla = pytest.importorskip("pyopencl.array")
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * A[i], name="B")
    C = ts.compute((n,), lambda i: B[n - 1 - i] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    for T in (B, C):
        o, i = s[T].split(T.op.axis[0], factor=32)
        s[T].bind(o, ts.thread_axis("blockIdx.x"))
        s[T].bind(i, ts.thread_axis("threadIdx.x"))
    f = ts.build(s, [A, C], target="opencl")
    assert len(f.gpu.kernels) == 2
    a = np.random.rand(77).astype("float32")
    queue = gpu.opencl_queue()
    a_dev, c_dev = cla.to_device(queue, a), cla.empty(queue, (77,), np.float32)
    f(a_dev, c_dev)
    np.testing.assert_allclose(c_dev.get(), (a * a)[::-1] + 1, rtol=1e-6)
    c = np.full(77, np.nan, np.float32)
    f(a, c)
    np.testing.assert_allclose(c, (a * a)[::-1] + 1, rtol=1e-6)


def test_bad_arguments_name_the_argument():
    need_opencl()
    s, A, B = _scale_schedule(2, 8)
    f = ts.build(s, [A, B], target="opencl")
    a = np.zeros((3, 37), np.float32)
    with pytest.raises(TypeError, match="argument A: expected dtype float32, got float64"):
        f(a.astype(np.float64), a.copy())
    with pytest.raises(ValueError, match="argument B: dimension 0 is 4, but size n is 3"):
        f(a, np.zeros((4, 37), np.float32))
    with pytest.raises(ValueError, match=r"argument B: expected shape \(3, 37\), got \(3, 36\)"):
        f(a, np.zeros((3, 36), np.float32))
    with pytest.raises(TypeError, match="takes 2 arrays"):
        f(a, a.copy(), a.copy())
    with pytest.raises(TypeError, match="argument B: expected an array .* got list"):
        f(a, [0.0])


def test_array_of_another_context_is_refused():
    need_opencl()
    cl = pytest.importorskip("pyopencl")
    cla = pytest.importorskip("pyopencl.array")
    s, A, B = _scale_schedule(2, 8)
    f = ts.build(s, [A, B], target="opencl")
    other = cl.CommandQueue(cl.Context([gpu.opencl_queue().device]))
    a = cla.to_device(other, np.zeros((3, 37), np.float32))
    with pytest.raises(ValueError, match="argument A: a pyopencl array of another context"):
        f(a, np.zeros((3, 37), np.float32))


@pytest.mark.parametrize("arch", gpu.CUDA_ARCHES)
def test_cuda_kernels_compile_with_nvrtc(arch):
    need_nvrtc()
    s, A, B = _scale_schedule(4, 8)
    f = ts.build(s, [A, B], target="cuda")
    assert "blockIdx.y" in f.source and "threadIdx.x" in f.source
    assert f.ptx[arch].startswith(b"//") and b".entry default_function_kernel0" in f.ptx[arch]


def test_nvrtc_error_is_a_build_error_with_log_and_source():
    need_nvrtc()
    with pytest.raises(ts.BuildError, match=r"(?s)NVRTC rejected.*undefined.*--- source ---.*no_such_thing"):
        gpu.compile_cuda('extern "C" __global__ void k(float *a) { a[0] = no_such_thing; }', "sm_90")


def test_missing_package_names_the_extra(monkeypatch):
    real = importlib.import_module

    def without_pyopencl(name, *args):
        if name.startswith("pyopencl"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(gpu.importlib, "import_module", without_pyopencl)
    with pytest.raises(ImportError, match=r"target 'opencl' needs pyopencl.*pip install tesched\[gpu\]"):
        gpu.gpu_module("pyopencl", "opencl")


def test_no_opencl_platform_names_pocl(monkeypatch):
    cl = pytest.importorskip("pyopencl")
    monkeypatch.setattr(cl, "get_platforms", lambda: [])
    gpu._opencl_queue.cache_clear()
    try:
        with pytest.raises(ts.TeschedError, match="no OpenCL platform.*pocl"):
            gpu.opencl_queue()
    finally:
        monkeypatch.undo()
        gpu._opencl_queue.cache_clear()


@pytest.mark.gpu
def test_cuda_kernel_runs_on_a_gpu():
    need_cuda_device()
    s, A, B = _scale_schedule(4, 8)
    f = ts.build(s, [A, B], target="cuda")
    a = np.random.rand(9, 37).astype("float32")
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)


@settings(max_examples=4, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), tile=st.sampled_from([4, 8]),
       ktile=st.sampled_from([3, 8]))
def test_gemm_with_shared_tiles_matches_numpy(m, n, k, tile, ktile):
    need_opencl()
    gemm = gemm_gpu.shared_tiles(m, n, k, tile, ktile)
    f = ts.build(gemm.schedule, gemm.args, target="opencl")
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m, n, k, threads, regs, ktile", [(64, 64, 64, 4, 4, 8), (70, 66, 33, 8, 4, 8),
                                                              (37, 29, 45, 4, 2, 8), (1, 5, 3, 4, 2, 8),
                                                              (16, 17, 16, 2, 2, 3)])
def test_gemm_with_register_tiles_matches_numpy(m, n, k, threads, regs, ktile):
    need_opencl()
    gemm = gemm_gpu.register_tiles(m, n, k, threads, regs, ktile)
    f = ts.build(gemm.schedule, gemm.args, target="opencl")
    sizes = [int(x) for x in re.findall(r"\n +float C_local\[(\d+)\];", f.source)]    # registers, not __local
    assert sizes and max(sizes) <= regs * regs and (max(sizes) == regs * regs or min(m, n) < threads * regs)
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_gemm_with_register_tiles_compiles_for_cuda():
    need_nvrtc()
    gemm = gemm_gpu.register_tiles(70, 66, 33)
    f = ts.build(gemm.schedule, gemm.args, target="cuda")
    assert "__shared__ float A_shared[256];" in f.source and "  float C_local[16];" in f.source
    assert all(b".entry default_function_kernel0" in f.ptx[arch] for arch in gpu.CUDA_ARCHES)


def test_registers_and_symbolic_sizes_on_opencl():
    need_opencl()
    n = ts.var("n")
    A = ts.placeholder((n, 37), name="A")
    k = ts.reduce_axis((0, 37), name="k")
    S = ts.compute((n,), lambda i: ts.sum(A[i, k] * A[i, k], axis=k), name="S")
    s = ts.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    io, ii = s[S].split(S.op.axis[0], factor=16)
    s[S].bind(io, ts.thread_axis("blockIdx.x"))
    s[S].bind(ii, ts.thread_axis("threadIdx.x"))
    s[SL].compute_at(s[S], ii)
    f = ts.build(s, [A, S], target="opencl")
    for rows in (1, 16, 45):
        a = np.random.rand(rows, 37).astype("float32")
        out = np.full(rows, np.nan, np.float32)
        f(a, out)
        np.testing.assert_allclose(out, (a * a).sum(1), rtol=1e-5)


@pytest.mark.parametrize("shift", [0, 1, 3])
def test_shared_stage_read_by_the_same_or_other_threads(shift):
    need_opencl()
    from tests.codegen.test_gpu import shared_stage
    s, args = shared_stage(shift)
    f = ts.build(s, args, target="opencl")
    a = np.random.rand(64).astype("float32")
    c = np.full(61, np.nan, np.float32)
    f(a, c)
    np.testing.assert_allclose(c, 2 * a[:61] - 2 * a[shift:61 + shift], rtol=1e-6, atol=1e-6)


def cross_thread_reduction(combiner, inner_first, threads=16):
    """B[i] = combiner over k of A[i, k] (k < 100), a block per row, k.inner bound to threadIdx.x (TVM's
    reduction tutorial); ``inner_first`` puts k.inner outside k.outer (one tree per row)."""
    n = ts.var("n")
    A = ts.placeholder((n, 100), name="A")
    k = ts.reduce_axis((0, 100), name="k")
    B = ts.compute((n,), lambda i: combiner(A[i, k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=threads)
    if inner_first:
        s[B].reorder(ki, ko)
    s[B].bind(B.op.axis[0], ts.thread_axis("blockIdx.x"))
    s[B].bind(ki, ts.thread_axis("threadIdx.x"))
    return s, [A, B]


@pytest.mark.parametrize("combiner, reference", [(ts.sum, np.sum), (ts.max, np.max), (ts.min, np.min)])
@pytest.mark.parametrize("inner_first", [True, False])
def test_cross_thread_reduction_on_opencl(combiner, reference, inner_first):
    need_opencl()
    s, args = cross_thread_reduction(combiner, inner_first, threads=12)    # not a power of two
    f = ts.build(s, args, target="opencl")
    assert f.source.count("barrier(") >= 2
    a = np.random.rand(9, 100).astype("float32") - 0.5
    out = np.full(9, np.nan, np.float32)
    f(a, out)
    np.testing.assert_allclose(out, reference(a, axis=1), rtol=1e-5, atol=1e-5)


def test_cross_thread_reduction_compiles_for_cuda():
    need_nvrtc()
    s, args = cross_thread_reduction(ts.sum, True)
    f = ts.build(s, args, target="cuda")
    assert "__shared__ float B_partials[16];" in f.source and "__syncthreads();" in f.source


def _vectorized(body, dtype, lanes, shape=(5, 66)):
    n = ts.var("n")
    A = ts.placeholder((n, shape[1]), name="A", dtype=dtype)
    B = ts.compute((n, shape[1]), lambda i, j: body(A, i, j), name="B")
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=lanes)
    s[B].bind(B.op.axis[0], ts.thread_axis("blockIdx.x"))
    s[B].bind(jo, ts.thread_axis("threadIdx.x"))
    s[B].vectorize(ji)
    return s, [A, B]


@pytest.mark.parametrize("dtype, lanes, vector", [("float32", 4, "f32x4"), ("float32", 8, "f32x4"),
                                                   ("int32", 4, "i32x4"), ("float64", 2, "f64x2")])
def test_vectorize_gives_opencl_vectors(dtype, lanes, vector):
    need_opencl()
    s, args = _vectorized(lambda A, i, j: ts.max(A[i, j] * 3 + 1, A[i, j] * A[i, j] - 50), dtype, lanes)
    f = ts.build(s, args, target="opencl")
    assert f"ts_vstore_{vector}(" in f.source.split("__kernel")[1]       # 16-byte vectors: float4, double2
    a = (np.random.rand(5, 66) * 100).astype(dtype)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, np.maximum(a * 3 + 1, a * a - 50), rtol=1e-6)


def test_vector_code_opencl_lacks_falls_back_to_loops():
    need_opencl()
    s, args = _vectorized(lambda A, i, j: A[i, 65 - j] + 1.0, "float32", 4)     # a reversed vector read
    f = ts.build(s, args, target="opencl")
    assert "ts_vstore" not in f.source.split("__kernel")[1] and f.target.vector_bytes == 0
    a = np.random.rand(5, 66).astype("float32")
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, a[:, ::-1] + 1, rtol=1e-6)


@pytest.mark.parametrize("m, n, k", [(1, 7, 3), (5, 3, 9), (8, 8, 1)])
def test_one_block_kernels_and_threads_idle_along_an_index(m, n, k):
    # tiles larger than the matrix: the block loops have one iteration and are not generated, and the copy
    # of A runs on a row of threads while the block has several: the other rows must not write again
    need_opencl()
    gemm = gemm_gpu.shared_tiles(m, n, k, tile=8, ktile=8)
    f = ts.build(gemm.schedule, gemm.args, target="opencl")
    a, b = np.random.rand(m, k).astype("float32"), np.random.rand(k, n).astype("float32")
    c = np.full((m, n), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(h=st.integers(1, 30), w=st.integers(1, 30), ty=st.integers(1, 8), tx=st.integers(1, 8),
       placement=st.sampled_from(["root", "shared", "shared x", "shared split", "registers", "inline"]),
       factor=st.integers(1, 4))
def test_random_gpu_placements_of_a_stencil_match_numpy(h, w, ty, tx, placement, factor):
    stencil_case(h, w, ty, tx, placement, factor)


@pytest.mark.parametrize("case", [(1, 2, 1, 1, "shared split", 2), (9, 2, 2, 8, "shared", 1)])
def test_barriers_outside_any_guard_or_loop(case):
    # pocl 3.0 crashed on these kernels while their block loops were guards (or grid-stride loops) around
    # the barrier: where the launch is the block loop's trip count, the kernel has neither
    stencil_case(*case)


def stencil_case(h, w, ty, tx, placement, factor):
    """C = B[y] + B[y + 1] * B[y + 2] of B = a 3-point sum of A, C in gpu tiles, B placed as asked; vs NumPy."""
    need_opencl()
    A = ts.placeholder((h + 2, w + 2), name="A")
    B = ts.compute((h + 2, w), lambda y, x: A[y, x] + A[y, x + 1] + A[y, x + 2], name="B")
    C = ts.compute((h, w), lambda y, x: B[y, x] + B[y + 1, x] * B[y + 2, x], name="C")
    s = ts.create_schedule(C.op)
    yo, xo, yi, xi = s[C].gpu_tile(C.op.axis[0], C.op.axis[1], ty, tx)
    y, x = B.op.axis
    if placement == "root":
        s[B].gpu_tile(y, x, factor, ty)
    elif placement.startswith("shared"):
        s[B].compute_at(s[C], xo)
        if placement == "shared split":
            y = s[B].split(y, factor=factor)[1]
        if placement != "shared x":
            s[B].bind(y, ts.thread_axis("threadIdx.y"))
        s[B].bind(x, ts.thread_axis("threadIdx.x"))
    elif placement == "registers":
        s[B].compute_at(s[C], xi)
    else:
        s[B].compute_inline()
    f = ts.build(s, [A, C], target="opencl")
    a = np.random.rand(h + 2, w + 2).astype("float32")
    b = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    c = np.full((h, w), np.nan, np.float32)
    f(a, c)
    np.testing.assert_allclose(c, b[:-2] + b[1:-1] * b[2:], rtol=1e-5, atol=1e-5)


def test_omitted_outputs_are_returned():
    need_opencl()
    cla = pytest.importorskip("pyopencl.array")
    s, A, B = _scale_schedule(2, 8)
    f = ts.build(s, [A, B], target="opencl")
    a = np.random.rand(6, 37).astype("float32")
    out = f(a)
    assert isinstance(out, np.ndarray) and out.shape == (6, 37)
    np.testing.assert_allclose(out, np.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)
    on_device = f(cla.to_device(gpu.opencl_queue(), a))
    assert isinstance(on_device, cla.Array)
    np.testing.assert_allclose(on_device.get(), np.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)


def test_device_chooses_where_kernels_build_and_run():
    need_opencl()
    s, A, B = _scale_schedule(2, 8)
    with ts.Device("opencl", 0) as device:
        f = ts.build(s, [A, B], target="opencl")
    assert f.device is device and f.queue is device.queue()
    a = np.random.rand(3, 37).astype("float32")
    np.testing.assert_allclose(f(a), np.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)
    count = len([d for p in pytest.importorskip("pyopencl").get_platforms() for d in p.get_devices()])
    with pytest.raises(ValueError, match=rf"Device\('opencl', {count}\): there are {count} OpenCL devices: 0: "):
        ts.Device("opencl", count).queue()
    with pytest.raises(ValueError, match="kind must be 'opencl' or 'cuda', got 'metal'"):
        ts.Device("metal")


def test_torch_tensors_on_the_host_are_copied_in_and_out():
    need_opencl()
    torch = pytest.importorskip("torch")
    s, A, B = _scale_schedule(2, 8)
    f = ts.build(s, [A, B], target="opencl")
    a = torch.rand(4, 37)
    b = torch.full((4, 37), float("nan"))
    f(a, b)
    torch.testing.assert_close(b, torch.exp(a) * 2 - 1, rtol=1e-5, atol=1e-6)


def _params_kernel(target):
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    gain, flip, bias = ts.param("gain"), ts.param("flip", "bool"), ts.param("bias", "int32")
    B = ts.compute((n,), lambda i: ts.if_then_else(flip, A[i] * gain + bias, A[i] - gain), name="B")
    s = ts.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(o, ts.thread_axis("blockIdx.x"))
    s[B].bind(i, ts.thread_axis("threadIdx.x"))
    return ts.build(s, [A, B], target=target)


def test_runtime_params_on_opencl_change_between_calls():
    need_opencl()
    f = _params_kernel("opencl")
    assert "float gain, int8_t flip, int32_t bias)" in f.source
    a = np.random.rand(45).astype("float32")
    for gain, flip, bias in [(2.0, True, 3), (0.5, False, 1), (-1.5, True, -7)]:
        expected = a * np.float32(gain) + bias if flip else a - np.float32(gain)
        np.testing.assert_allclose(f(a, gain=gain, flip=flip, bias=bias), expected, rtol=1e-6)
        out = np.full_like(a, np.nan)
        f(a, out, gain, flip, bias)
        np.testing.assert_allclose(out, expected, rtol=1e-6)
    with pytest.raises(TypeError, match=r"missing param bias \(int32\)"):
        f(a, 1.0, True)


def test_runtime_params_compile_for_cuda():
    need_nvrtc()
    f = _params_kernel("cuda")
    assert "float gain, int8_t flip, int32_t bias)" in f.source and f.ptx


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_extern_calls_are_refused_on_gpu_targets(target):
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: ts.call_pure_extern("float32", "hypotf", A[i], 1.0), name="B")
    s = ts.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(o, ts.thread_axis("blockIdx.x"))
    s[B].bind(i, ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.BuildError, match=rf"calls of extern C functions \(hypotf\) run on CPU targets only, "
                                            rf"not on {target}"):
        ts.build(s, [A, B], target=target)


def _bit_ops():
    """Shifts by any amount and the bit counts of int32 and uint8 values: the runtime header's helpers."""
    A = ts.placeholder((64,), name="A", dtype="int32")
    S = ts.placeholder((64,), name="S", dtype="int32")
    U = ts.placeholder((64,), name="U", dtype="uint8")
    B = ts.compute((64,), lambda i: (A[i] << S[i]) + (A[i] >> S[i]) + ts.popcount(A[i])
                   + ts.count_leading_zeros(A[i]) * 100 + ts.count_trailing_zeros(A[i]) * 10000
                   + ts.cast("int32", ts.count_leading_zeros(U[i])) * 1000000, name="B")
    s = ts.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(o, ts.thread_axis("blockIdx.x"))
    s[B].bind(i, ts.thread_axis("threadIdx.x"))
    return s, [A, S, U, B]


def test_shifts_and_bit_counts_match_the_cpu_on_opencl():
    need_opencl()
    s, args = _bit_ops()
    rng = np.random.default_rng(5)
    a = rng.integers(-2 ** 31, 2 ** 31, 64, dtype=np.int64).astype(np.int32)
    a[:4] = [0, -1, 1, 2 ** 31 - 1]
    shifts = rng.integers(-3, 40, 64).astype(np.int32)
    u = rng.integers(0, 256, 64).astype(np.uint8)
    got = ts.build(s, args, target="opencl")(a, shifts, u)
    want = ts.build(s, args, target="c")(a, shifts, u)        # the runtime header's NumPy semantics
    np.testing.assert_array_equal(got, want)


def test_shifts_and_bit_counts_compile_for_cuda():
    need_nvrtc()
    s, args = _bit_ops()
    f = ts.build(s, args, target="cuda")
    assert "__popcll" in f.source and all(f.ptx[arch] for arch in gpu.CUDA_ARCHES)
