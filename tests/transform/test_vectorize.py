"""Explicit SIMD: vectorized loops become GCC vector code, checked against NumPy and in the machine code."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tesched as ts
from tesched.arith.interval import VarRanges
from tesched.driver.cache import cache_dir
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Select
from tesched.te.visit import walk
from tesched.transform.vectorize import LoopVectorizer
from targets import AVX512, pinned, runs_here

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def relu_kernel(n=100, factor=16, name="simd_relu"):
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: ts.maximum(A[i] * 2.0 + 1.0, 0.0), name="B")
    s = ts.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=factor)
    s[B].vectorize(i)
    return ts.build(s, [A, B], name=name)


def test_vectorized_loop_becomes_vector_code():
    f = relu_kernel()
    assert "ts_vload_" in f.c_source and "ts_vstore_" in f.c_source and "ts_vmax_" in f.c_source
    a = np.linspace(-3, 3, 100, dtype=np.float32)
    np.testing.assert_allclose(f(a), np.maximum(a * 2 + 1, 0), rtol=1e-6)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump not installed")
@pytest.mark.parametrize("target, register", [(AVX512, "%zmm"), ("x86-64-avx2", "%ymm"), ("x86-64", "%xmm")])
def test_machine_code_uses_simd_registers(target, register):
    with ts.Target(target):
        f = relu_kernel(n=64, factor=16, name="simd_relu_objdump")
    module = next(cache_dir().glob(f"_tesched_{f.cache_key[:24]}*.so"))
    asm = subprocess.run(["objdump", "-d", str(module)], capture_output=True, text=True).stdout
    assert register in asm


def test_partial_tiles_use_the_scalar_loop():
    """37 by 16: full tiles are vector code, the last tile runs the scalar loop."""
    f = relu_kernel(n=37, factor=16, name="simd_relu_partial")
    a = np.linspace(-3, 3, 37, dtype=np.float32)
    np.testing.assert_allclose(f(a), np.maximum(a * 2 + 1, 0), rtol=1e-6)
    assert "#pragma omp simd" in f.c_source and "ts_vload_" in f.c_source


def test_odd_trip_counts_use_narrower_vectors():
    code, f = pinned(lambda: relu_kernel(n=28, factor=28, name="simd_relu_28"))
    assert "ts_vload_f32x16" in code.c_source and "ts_vload_f32x4" in code.c_source
    a = np.linspace(-3, 3, 28, dtype=np.float32)
    np.testing.assert_allclose(f(a), np.maximum(a * 2 + 1, 0), rtol=1e-6)


def test_strided_access_is_strided_vector_loads():
    A = ts.placeholder((64,), name="A")
    B = ts.compute((32,), lambda i: A[2 * i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], name="simd_strided")
    assert "ts_vloads_f32x" in f.c_source and "#pragma omp simd" not in f.c_source
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(f(a), a[::2] + 1)


def test_gathered_access_is_a_vector_gather():
    A = ts.placeholder((64,), name="A")
    B = ts.compute((32,), lambda i: A[(i * i) % 64] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], name="simd_gathered")
    assert "ts_vgather_f32" in f.c_source and "#pragma omp simd" not in f.c_source
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(f(a), a[(np.arange(32) ** 2) % 64] + 1)


def test_access_gathered_through_a_shared_value_falls_back_to_gcc():
    """The index is a value the body also uses elsewhere (a ``let`` that changes with the loop), as in a
    linear interpolation: its vector form cannot index memory."""
    A = ts.placeholder((8, 16), name="A")

    def interpolate(y, x):
        src = ts.cast("float32", x) * 0.45
        return A[y, ts.cast("int32", src)] * (src - ts.cast("float32", ts.cast("int32", src)))

    B = ts.compute((8, 16), interpolate, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = ts.build(s, [A, B], name="simd_gathered_let")
    a = np.random.default_rng(0).random((8, 16), dtype=np.float32)
    src = np.arange(16, dtype=np.float32) * np.float32(0.45)
    np.testing.assert_allclose(f(a), a[:, src.astype(int)] * (src - src.astype(int)), rtol=1e-6)

@pytest.mark.parametrize("dtype", ["float64", "int32", "int64"])
def test_other_dtypes(dtype):
    A = ts.placeholder((40,), dtype, name="A")
    B = ts.compute((40,), lambda i: ts.minimum(A[i] * 3, A[i] + 7), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], name=f"simd_{dtype}")
    assert "ts_vload_" in f.c_source
    a = np.arange(-20, 20).astype(dtype)
    np.testing.assert_allclose(f(a), np.minimum(a * 3, a + 7))


def test_select_without_loads_in_branches_is_vectorized():
    A = ts.placeholder((32,), name="A")
    B = ts.compute((32,), lambda i: ts.if_then_else(A[i] > 0.5, A[i] * 2.0, -1.0), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], name="simd_select")
    a = np.linspace(0, 1, 32, dtype=np.float32)
    np.testing.assert_allclose(f(a), np.where(a > 0.5, a * 2, -1))


@pytest.mark.parametrize("reducer,ref", [(ts.sum, np.sum), (ts.max, np.max), (ts.min, np.min)])
def test_vectorized_reduction_keeps_one_partial_result_per_lane(reducer, ref):
    A = ts.placeholder((5, 70), name="A")
    k = ts.reduce_axis((0, 70), name="k")
    R = ts.compute((5,), lambda i: reducer(A[i, k] - 0.25, axis=k), name="R")
    s = ts.create_schedule(R.op)
    s[R].vectorize(k)
    f = ts.build(s, [A, R], name=f"simd_{reducer.__name__}")
    assert f"ts_h{ {'sum': 'add'}.get(reducer.__name__, reducer.__name__) }_" in f.c_source
    a = np.random.default_rng(1).random((5, 70), dtype=np.float32)
    np.testing.assert_allclose(f(a), ref(a - 0.25, axis=1), rtol=1e-5)


def test_register_tile_is_promoted_to_vector_variables():
    n = 64
    A = ts.placeholder((n, n), name="A")
    B = ts.placeholder((n, n), name="B")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 32)
    s[CC].compute_at(s[C], jo)
    ci, cj = s[CC].op.axis
    s[CC].reorder(s[CC].op.reduce_axis[0], ci, cj)
    s[CC].unroll(ci)
    s[CC].vectorize(cj)
    s[C].vectorize(ji)        # the copy-out reads whole vectors, so the tile can live in registers
    f = ts.build(s, [A, B, C], name="register_tile")
    assert "C_local_r0" in f.c_source and "float C_local[" not in f.c_source
    a = np.random.default_rng(2).random((n, n), dtype=np.float32)
    b = np.random.default_rng(3).random((n, n), dtype=np.float32)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-4)


def test_loop_over_a_flattened_image_is_contiguous():
    X = ts.placeholder((4, 28, 28), name="X")
    Y = ts.compute((4, 784), lambda c, p: X[c, p // 28, p % 28] * 2.0, name="Y")
    s = ts.create_schedule(Y.op)
    po, pi = s[Y].split(Y.op.axis[1], 112)
    s[Y].vectorize(pi)
    f = ts.build(s, [X, Y], name="flattened_image")
    assert "ts_vload_" in f.c_source
    x = np.random.default_rng(4).random((4, 28, 28), dtype=np.float32)
    np.testing.assert_allclose(f(x), x.reshape(4, 784) * 2)


# narrow types ------------------------------------------------------------------------------------
def test_uint16_blur_vectorizes_with_wrapping_arithmetic(rand):
    """Halide's blur in uint16: sums wrap, // 3 of unsigned lanes is a vector division."""
    H, W = 10, 40
    inp = ts.placeholder((H + 2, W + 2), "uint16", name="input")
    bx = ts.compute((H + 2, W), lambda y, x: (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) // 3, name="blur_x")
    by = ts.compute((H, W), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) // 3, name="blur_y")
    s = ts.create_schedule(by.op)
    s[by].vectorize(s[by].op.axis[1])
    s[bx].compute_at(s[by], s[by].op.axis[0])
    s[bx].vectorize(s[bx].op.axis[1])
    code, f = pinned(lambda: ts.build(s, [inp, by], name="blur_u16"))
    assert "ts_vload_u16x32" in code.c_source and ") / 3)" in code.c_source
    a = rand((H + 2, W + 2), "uint16", 0, 65535)                # large values: the sums wrap
    b = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) // 3
    np.testing.assert_array_equal(f(a), (b[:-2] + b[1:-1] + b[2:]) // 3)


def test_mixed_widths_widen_multiply_and_pack_with_saturation(rand):
    """u8 and s8 loads widened to int32 lanes, a shift, a saturating narrowing store: one vector loop."""
    A, B = ts.placeholder((48,), "uint8", name="A"), ts.placeholder((48,), "int8", name="B")
    C = ts.compute((48,), lambda i: ts.saturate_cast(A[i].astype("int32") * B[i].astype("int32") // 16, "int8"),
                   name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    code, f = pinned(lambda: ts.build(s, [A, B, C], name="widen_pack"))
    assert "ts_vload_u8x16" in code.c_source and "ts_vstore_i8x16" in code.c_source and ">> 4" in code.c_source
    a, b = rand(48, "uint8", 0, 255), rand(48, "int8", -128, 127)
    expected = np.clip((a.astype(np.int64) * b) >> 4, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(f(a, b), expected)


def test_float16_arithmetic_is_float32_rounded_on_store(rand):
    A, B = ts.placeholder((40,), "float16", name="A"), ts.placeholder((40,), "float16", name="B")
    C = ts.compute((40,), lambda i: A[i] * B[i] + A[i] * 3.0, name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    code, f = pinned(lambda: ts.build(s, [A, B, C], name="f16_fma"))
    assert "ts_vload_f16x16" in code.c_source
    a, b = rand(40, "float16", -4, 4), rand(40, "float16", -4, 4)
    wide = a.astype(np.float32) * b.astype(np.float32) + a.astype(np.float32) * np.float32(3.0)
    np.testing.assert_array_equal(f(a, b).view(np.uint16), wide.astype(np.float16).view(np.uint16))


def _saturating(tensor, dtype):
    return lambda i: ts.saturate_cast(tensor[i], dtype)


@pytest.mark.parametrize("source, targets", [("int32", ["int8", "uint8", "int16", "uint16"]),
                                             ("int16", ["int8", "uint8"])])
def test_saturate_cast_of_full_vectors_is_a_saturating_pack(source, targets, rand):
    """saturate_cast(int32 or int16 lanes) packs with vpmovs* / vpmovus* on AVX-512 BW, and clamps
    exactly like NumPy elsewhere (the tail lanes, other targets)."""
    n = 72
    A = ts.placeholder((n,), source, name="A")
    outs = [ts.compute((n,), _saturating(A, t), name=f"to_{t}") for t in targets]
    s = ts.create_schedule([o.op for o in outs])
    for o in outs:
        s[o].vectorize(o.op.axis[0])
    code, f = pinned(lambda: ts.build(s, [A, *outs], name=f"packs_{source}"))
    assert code.c_source.count("ts_vsat_") >= len(targets)
    info = np.iinfo(source)
    a = rand(n, source, info.min, info.max)
    a[:6] = [info.min, info.max, -1, 0, 255, 256]
    for got, t in zip(f(a), targets):
        bounds = np.iinfo(t)
        np.testing.assert_array_equal(got, np.clip(a.astype(np.int64), bounds.min, bounds.max).astype(t))
    if shutil.which("objdump"):
        module = next(cache_dir().glob(f"_tesched_{code.cache_key[:24]}*.so"))
        asm = subprocess.run(["objdump", "-d", str(module)], capture_output=True, text=True).stdout
        assert "vpmovs" in asm and "vpmovus" in asm


@pytest.mark.parametrize("target", ["x86-64-avx2", "x86-64", "host"])
@pytest.mark.parametrize("n", [5, 7, 13])
def test_tails_use_vector_types_the_runtime_defines(target, n, rand):
    """A short row's tail is vectorized in chunks of at least 16 bytes on every target (a 2-lane float
    vector has no type in the runtime header), and the result is right."""
    A = ts.placeholder((3, n), name="A")
    B = ts.compute((3, n), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = ts.build(s, [A, B], target=target, name=f"tail_{n}_{target.replace('-', '_')}")
    assert "f32x2" not in f.c_source
    a = rand((3, n))
    np.testing.assert_allclose(f(a), a * 3.0 + 1.0, rtol=1e-6)


@pytest.mark.parametrize("rows, cols", [(64, 64), (37, 21)])
def test_transpose_reads_strided_vectors(rows, cols):
    A = ts.placeholder((cols, rows), name="A")
    T = ts.compute((rows, cols), lambda i, j: A[j, i] * 2.0, name="T")
    s = ts.create_schedule(T.op)
    s[T].vectorize(T.op.axis[1])
    f = ts.build(s, [A, T], name=f"transpose_{rows}_{cols}")
    a = np.random.default_rng(3).standard_normal((cols, rows)).astype(np.float32)
    np.testing.assert_array_equal(f(a), a.T * 2)
    assert "ts_vloads_f32x" in f.c_source and "omp simd" not in f.c_source


@pytest.mark.parametrize("lanes", [2, 16])
def test_an_int32_value_of_loop_indices_is_stored_as_int32(lanes):
    """The loop ramp is int64: a vectorized store of ``a * lanes + k`` into an int32 tensor converts it, as the
    scalar store does (it once stored int64 lanes, twice the bytes, past the row)."""
    f = ts.compute((3, lanes), lambda a, k: a * lanes + k, name="f")
    s = ts.create_schedule(f.op)
    s[f].vectorize(f.op.axis[1])
    out = np.full((3, lanes), -1, "int32")
    ts.build(s, [f])(out)
    np.testing.assert_array_equal(out, np.arange(3 * lanes, dtype="int32").reshape(3, lanes))


def test_masked_partial_sums_in_a_local_buffer_are_vectorized(rand):
    """``acc = select(c, acc + v, acc)`` (a sum with ``where=``) split by rfactor into lanes computed per
    row in a local buffer: the accumulator's own element is read in every lane, so it needs no mask."""
    n, bins = 48, 4
    A = ts.placeholder((n, n), name="A")
    binned = ts.compute((n, n), lambda y, x: (A[y, x] * bins).astype("int32"), name="bin")
    r = ts.reduce_axis((0, n), "r")
    g = ts.compute((n, bins), lambda y, z: ts.sum(A[y, r], axis=r, where=binned[y, r] == z), name="g")
    s = ts.create_schedule(g.op)
    _, lane = s[g].split(g.op.reduce_axis[0], 8)
    partial = s.rfactor(g, lane, factor_axis=2)
    axes = s[partial].op.axis
    s[partial].reorder(*axes[:-1], *s[partial].op.reduce_axis, axes[-1])
    s[partial].vectorize(axes[-1])
    s[partial].compute_at(s[g], g.op.axis[0])
    code, f = pinned(lambda: ts.build(s, [A, g]))
    assert "ts_vsel_f32x8" in code.c_source and "? (" not in code.c_source
    a = rand((n, n), low=0.0, high=0.999)
    b = (a * bins).astype(np.int32)
    expected = np.stack([(a * (b == z)).sum(1) for z in range(bins)], axis=1)
    np.testing.assert_allclose(f(a), expected, rtol=1e-5, atol=1e-5)


# masked reads of local buffers ---------------------------------------------------------------------
def _assert_masked_simd(f):
    """The select's reads are masked vector loads (not the scalar loop gcc would vectorize)."""
    assert "ts_vloadm_f32x" in f.c_source and "omp simd" not in f.c_source


@pytest.mark.parametrize("w", [37, 21])
def test_padded_select_reads_a_cache_read_buffer_with_masked_loads(w, rand):
    """``A[i, j - 1]`` through a per-row ``cache_read`` copy, under a data-dependent condition (so the
    loop cannot be split at it): lane ``j = 0`` would read before the copy, so its reads are masked."""
    h = 6
    A = ts.placeholder((h, w), name="A")
    C = ts.placeholder((h, w), name="C")
    P = ts.compute((h, w), lambda i, j: ts.if_then_else((j >= 1) & (C[i, j] > 0.5), A[i, j - 1], 0.0), name="P")
    s = ts.create_schedule(P.op)
    AA = s.cache_read(A, "local", [P])
    s[AA].compute_at(s[P], P.op.axis[0])
    s[P].vectorize(P.op.axis[1])
    code, f = pinned(lambda: ts.build(s, [A, C, P], name=f"masked_cache_read_{w}"))
    _assert_masked_simd(code)
    assert re.search(r"ts_vloadm_f32x\d+\(A_local, -1, ", code.c_source)    # the buffer and the offset apart
    a, c = rand((h, w), low=-1), rand((h, w))
    shifted = np.concatenate([np.zeros((h, 1), np.float32), a[:, :-1]], axis=1)
    np.testing.assert_array_equal(f(a, c), np.where((np.arange(w) >= 1) & (c > 0.5), shifted, 0))


def _band(h, width):
    """``P[i, j] = 2 * A[i, j - i]`` for ``i <= j < 2i + 3``, else -1, reading a producer computed per row:
    the two ends of the band are not a constant distance apart, so the loop is not split at them."""
    A = ts.placeholder((h, h + 3), name="A")
    B = ts.compute((h, h + 3), lambda i, j: A[i, j] * 2.0, name="B")
    P = ts.compute((h, width), lambda i, j: ts.if_then_else((j >= i) & (j < 2 * i + 3), B[i, j - i], -1.0), name="P")
    s = ts.create_schedule(P.op)
    s[B].compute_at(s[P], P.op.axis[0])
    s[P].vectorize(P.op.axis[1])
    return s, A, P


@pytest.mark.parametrize("target", ["host", "x86-64-avx2", "x86-64", "c"])
def test_select_reading_a_compute_at_producer_is_masked_on_every_simd_target(target, rand):
    h, width = 9, 37
    s, A, P = _band(h, width)
    f = ts.build(s, [A, P], target=target, name=f"masked_band_{target.replace('-', '_')}")
    if ts.Target(target).vector_bytes:
        _assert_masked_simd(f)
    else:                                   # portable C: the scalar loop, for gcc
        assert "ts_vloadm" not in f.c_source and "omp simd" in f.c_source
    a = rand((h, h + 3), low=-1)
    expected = np.full((h, width), -1, np.float32)
    for r in range(h):
        expected[r, r:2 * r + 3] = 2 * a[r, :r + 3]
    np.testing.assert_array_equal(f(a), expected)


def test_select_reading_a_store_at_window_is_masked(rand):
    """A circular window of rows (``store_at``, folded modulo 4) read under a data-dependent condition."""
    h, w = 10, 29
    A = ts.placeholder((h + 2, w), name="A")
    M = ts.placeholder((h, w), name="M")
    bx = ts.compute((h + 2, w), lambda y, x: A[y, x] * 0.5, name="bx")
    P = ts.compute((h, w), lambda y, x: ts.if_then_else(
        (x >= 1) & (M[y, x] > 0.5), bx[y, x - 1] + bx[y + 1, x - 1] + bx[y + 2, x - 1], 0.0), name="P")
    s = ts.create_schedule(P.op)
    yo, yi = s[P].split(P.op.axis[0], 4)
    s[bx].compute_at(s[P], yi)
    s[bx].store_at(s[P], yo)
    s[P].vectorize(P.op.axis[1])
    f = ts.build(s, [A, M, P], name="masked_window")
    _assert_masked_simd(f)
    a, m = rand((h + 2, w), low=-1), rand((h, w))
    b = a * 0.5
    rows = b[:-2] + b[1:-1] + b[2:]
    shifted = np.concatenate([np.zeros((h, 1), np.float32), rows[:, :-1]], axis=1)
    np.testing.assert_allclose(f(a, m), np.where((np.arange(w) >= 1) & (m > 0.5), shifted, 0), rtol=1e-6)


def test_reads_inside_a_local_buffer_are_not_masked():
    """Where the loops' ranges keep every lane inside the local buffer's box (origin subtracted), the
    select's read is a plain vector load."""
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    c, b = (ir.Buffer(name, [8, 32], "float32", ir.BufferScope.ARG) for name in "CB")
    local = ir.Buffer("T", [1, 33], "float32", ir.BufferScope.LOCAL, [i, Const(-1, "int64")])
    cond = Binary("gt", ir.Load(c, [i, j]), Const(0.5, "float32"), "bool")

    def loads(column):
        store = ir.Store(b, (i, j), Select(cond, ir.Load(local, [i, column]), Const(0.0, "float32")))
        loop = ir.For(j, Const(0, "int64"), Const(32, "int64"), LoopKind.VECTORIZED, store)
        code = LoopVectorizer(loop, 64, VarRanges().where(i, 0, 7).where(j, 0, 31)).run()
        return [n for st in walk_stmts(code) if isinstance(st, ir.VStore) for n in walk(st.value)
                if getattr(n, "buffer", None) is local]
    inside = loads(Binary("sub", j, Const(1, "int64"), "int64"))     # columns -1..30 of a box from -1
    assert inside and all(isinstance(n, ir.VLoad) for n in inside)
    outside = loads(Binary("sub", j, Const(2, "int64"), "int64"))    # column -2 is before the box
    assert outside and all(isinstance(n, ir.VLoadMasked) for n in outside)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_masked_lanes_read_nothing_outside_the_local_buffer(tmp_path, rand):
    """The band kernel's C, compiled with AddressSanitizer and UndefinedBehaviorSanitizer (the local
    buffer is on the stack, so a read past it would be reported), runs clean and gives the same result."""
    h, width = 9, 37
    s, A, P = _band(h, width)
    f = ts.build(s, [A, P], name="masked_band_asan")
    _assert_masked_simd(f)
    name = re.search(r"^int (\w+)\(float \*restrict \w+, float \*restrict \w+\)", f.c_source, re.M).group(1)
    a = rand((h, h + 3), low=-1)
    (tmp_path / "a.bin").write_bytes(a.tobytes())
    main = f"""
#include <stdio.h>
int main(void) {{
  float *a = malloc(sizeof(float) * {a.size}), *p = malloc(sizeof(float) * {h * width});
  FILE *in = fopen("{tmp_path / 'a.bin'}", "rb");
  if (fread(a, sizeof(float), {a.size}, in) != {a.size}) return 3;
  fclose(in);
  int status = {name}(a, p);
  FILE *out = fopen("{tmp_path / 'p.bin'}", "wb");
  fwrite(p, sizeof(float), {h * width}, out);
  fclose(out);
  free(a); free(p);
  return status;
}}
"""
    (tmp_path / "main.c").write_text(f.c_source + main)
    runtime = Path(ts.__file__).parent / "runtime"
    exe = tmp_path / "main"
    build = subprocess.run(["gcc", "-O2", "-march=native", "-fopenmp", "-fsanitize=address,undefined",
                            "-fno-sanitize-recover=all", "-I", str(runtime), str(tmp_path / "main.c"), "-o", str(exe),
                            "-lm"], capture_output=True, text=True)
    if build.returncode != 0 and "sanitize" in build.stderr:
        pytest.skip("gcc without the sanitizer runtimes")
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    result = np.frombuffer((tmp_path / "p.bin").read_bytes(), np.float32).reshape(h, width)
    np.testing.assert_array_equal(result, f(a))


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump not installed")
@pytest.mark.parametrize("target, instruction", [("x86-64-avx512", r"vmovups\s+\S+,%[yz]mm\d+\{%k\d\}\{z\}"),
                                                 ("x86-64-avx2", r"vmaskmovps")])
def test_masked_loads_are_one_instruction_where_the_isa_has_one(target, instruction):
    """AVX-512 and AVX2 load under a mask in one instruction (the lanes off it do not fault), with no
    branch per lane."""
    s, A, P = _band(9, 37)
    f = ts.build(s, [A, P], target=target, name=f"masked_band_isa_{target.replace('-', '_')}")
    _assert_masked_simd(f)
    module = next(cache_dir().glob(f"_tesched_{f.cache_key[:24]}*.so"))
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(module)], capture_output=True, text=True).stdout
    assert re.search(instruction, asm)


@pytest.mark.parametrize("target", ["host", "x86-64-avx2", "x86-64"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int16", "int32"])
@pytest.mark.parametrize("vector_masks", [True, False])
def test_bool_stages_and_inputs_read_by_vectorized_consumers(target, dtype, vector_masks):
    """Bool lanes are masks in registers and bytes of 0 or 1 in memory: a bool input, a bool stage computed
    whole (vectorized or not) and its negation, combined with comparisons and read by vectorized selects; the
    exclusive or of a byte mask and a mask of the values' width."""
    if target != "host" and not runs_here(target):
        pytest.skip(f"this CPU cannot run code built for {target}")
    n = 70
    A = ts.placeholder((n,), dtype=dtype, name="A")
    K = ts.placeholder((n,), dtype="bool", name="K")
    M = ts.compute((n,), lambda i: A[i] > 3, name="M")
    N = ts.compute((n,), lambda i: (M[i] & (A[i] < 9)) | ~K[i], name="N")
    B = ts.compute((n,), lambda i: ts.if_then_else(N[i] & ~M[i], A[i], A[i] * 2), name="B")
    X = ts.compute((n,), lambda i: K[i] ^ (A[i] < 5), name="X")
    s = ts.create_schedule([B.op, X.op])
    for t in ((M, N, B, X) if vector_masks else (B, X)):
        s[t].vectorize(t.op.axis[0])
    with ts.Target(target):
        f = ts.build(s, [A, K, M, N, B, X], name=f"bool_lanes_{dtype}")
    assert "ts_vload_i8x" in f.c_source and (not vector_masks or "ts_vstore_i8x" in f.c_source)
    a = (np.arange(n) % 13).astype(dtype)
    k = np.arange(n) % 3 != 0
    m, nn_, b, x = f(a, k)
    np.testing.assert_array_equal(x, k ^ (a < 5))
    np.testing.assert_array_equal(m, a > 3)
    np.testing.assert_array_equal(nn_, ((a > 3) & (a < 9)) | ~k)
    np.testing.assert_array_equal(b, np.where(nn_ & ~m, a, a * 2))


@pytest.mark.parametrize("n", [64, 100])
def test_exp_of_float32_lanes_is_vector_code_and_matches_numpy(n):
    """``exp`` in a vectorized loop is the runtime header's vector exp (within 2 ulp of NumPy's), and
    overflow, underflow, denormals, infinities and NaN are expf's."""
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: ts.exp(A[i] * 2.0), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    code, run = pinned(lambda: ts.build(s, [A, B], name=f"simd_exp_{n}"))
    assert "ts_exp_f32x16(" in code.c_source and "#pragma omp simd" not in code.c_source
    a = np.random.default_rng(4).uniform(-40.0, 40.0, n).astype(np.float32)   # polynomial lanes past the first 16
    a[:12] = [np.nan, np.inf, -np.inf, 44.5, 44.2, -44.0, -50.0, -51.9, -60.0, 0.0, -0.0, 1e-20]
    with np.errstate(over="ignore"):
        want = np.exp(a * np.float32(2.0))
    np.testing.assert_allclose(run(a), want, rtol=2.5e-7, atol=0)


@pytest.mark.parametrize("divisor", [2, 8])
def test_floor_division_of_a_loop_index_by_a_small_constant_keeps_its_lanes_width(divisor):
    """``x % c`` and ``x // c`` of an int64 loop index by a user's (int32) constant: the broadcast divisor
    takes the index's lane type (the IR verifier refuses int64 lanes divided by int32 lanes)."""
    A = ts.placeholder((64,), name="A")
    f = ts.compute((64,), lambda x: ts.select(x % divisor == 1, A[x], A[x] * 2.0) + ts.cast("float32", x // divisor),
                   name="f")
    s = ts.create_schedule(f.op)
    _, inner = s[f].split(f.op.axis[0], factor=16)
    s[f].vectorize(inner)
    a = np.arange(64, dtype="float32")
    x = np.arange(64)
    want = np.where(x % divisor == 1, a, 2 * a) + x // divisor
    built, runnable = pinned(lambda: ts.build(s, [A, f]))     # the verifier checks the IR as it is built
    assert "ts_vstore_f32x" in built.c_source                                  # explicit SIMD, not left to gcc
    np.testing.assert_allclose(runnable(a), want, rtol=1e-6)
