"""Tests of tesched.codegen.c: the generated C (signature, constants, loop pragmas, stack or heap buffers),
and the kernels it gives, checked against NumPy."""

import re

import numpy as np
import pytest

import tesched as ts
from tesched.codegen.c import STACK_LIMIT, generate_c


def test_signature_has_restrict_pointers_and_size_parameters():
    n = ts.var("n")
    A = ts.placeholder((n, 4), "float64", name="A")
    I = ts.placeholder((n,), "int32", name="I")
    B = ts.compute((n, 4), lambda i, j: A[i, j] * I[i], name="B")
    src = generate_c(ts.lower(ts.create_schedule(B.op), [A, I, B], name="scale_rows"))
    assert src.name == "scale_rows"
    assert src.source.startswith('#include "tesched_runtime.h"')
    assert "int scale_rows(double *restrict A, int32_t *restrict I, double *restrict B, int64_t n)" in src.source
    assert src.declaration == ("int scale_rows(double *, int32_t *, double *, int64_t);\n"
                               "int scale_rows_argv(void *const *args);")


def test_parallel_loops_become_openmp(rand):
    A = ts.placeholder((64, 32), name="A")
    B = ts.compute((64, 32), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = ts.build(s, [A, B], name="parallel_rows")
    assert "#pragma omp parallel for" in f.c_source
    a = rand((64, 32))
    np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_small_local_buffer_on_the_stack_large_one_on_the_heap(rand):
    n_small, n_large = 1024, STACK_LIMIT // 4 + 64     # float32 rows: 4 KiB fits the limit, the other not
    outs = []
    for n in (n_small, n_large):
        A = ts.placeholder((2, n), name="A")
        P = ts.compute((2, n), lambda i, j: A[i, j] * 3.0, name="P")
        C = ts.compute((2, n), lambda i, j: P[i, n - 1 - j] + 1.0, name="C")
        s = ts.create_schedule(C.op)
        s[P].compute_at(s[C], C.op.axis[0])                 # one row of P per row of C
        f = ts.build(s, [A, C], name=f"row_buffer_{n}")
        a = rand((2, n))
        np.testing.assert_allclose(f(a), a[:, ::-1] * 3 + 1, rtol=1e-6)
        outs.append(f.c_source)
    small, large = outs
    assert "ts_alloc" not in small and "aligned(TS_ALIGN)" in small
    assert "ts_alloc" in large and "ts_free" in large


def test_symbolic_local_buffer_is_allocated_on_the_heap(rand):
    n = ts.var("n")
    A = ts.placeholder((n, n), name="A")
    P = ts.compute((n, n), lambda i, j: A[i, j] * 3.0, name="P")
    C = ts.compute((n, n), lambda i, j: P[i, j] + P[j, i], name="C")
    s = ts.create_schedule(C.op)
    s[P].compute_at(s[C], C.op.axis[0])
    f = ts.build(s, [A, C], name="symbolic_heap_buffer")
    assert "ts_alloc" in f.c_source and "ts_free" in f.c_source
    for size in (1, 5):
        a = rand((size, size))
        np.testing.assert_allclose(f(a), 3 * a + 3 * a.T, rtol=1e-6)


def test_vectorized_and_unrolled_loops_compute_the_same(rand):
    A = ts.placeholder((37, 19), name="A")
    B = ts.compute((37, 19), lambda i, j: ts.sqrt(A[i, j]) * 2.0 + A[i, 18 - j], name="B")
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=8)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].reorder(io, jo, ii, ji)
    s[B].unroll(ii)
    s[B].vectorize(ji)
    f = ts.build(s, [A, B], name="simd_unroll")
    a = rand((37, 19))
    np.testing.assert_allclose(f(a), np.sqrt(a) * 2 + a[:, ::-1], rtol=1e-6)


def test_reduction_identities_in_c(rand):
    A = ts.placeholder((3, 5), "float64", name="A")
    k = ts.reduce_axis((0, 5), name="k")
    M = ts.compute((3,), lambda i: ts.max(A[i, k], axis=k), name="M")
    f = ts.build(ts.create_schedule(M.op), [A, M], name="max_identity")
    assert "(-INFINITY)" in f.c_source
    a = rand((3, 5), "float64", -1e300, -1e299)
    np.testing.assert_allclose(f(a), a.max(1))


def test_produce_comments_and_identifiers_only(rand):
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = ts.compute((4,), lambda i: B[i] * 2.0, name="C")
    src = generate_c(ts.lower(ts.create_schedule(C.op), [A, C], name="two_stages")).source
    assert "/* produce B */" in src and "/* produce C */" in src


def test_unroll_the_loop_a_producer_is_computed_at(rand):
    # regression: the buffer origin used to keep the unrolled loop's variable ('i' undeclared in C)
    A = ts.placeholder((3, 5), name="A")
    P = ts.compute((3, 5), lambda i, j: A[i, j] * 2.0, name="P")
    C = ts.compute((3, 5), lambda i, j: P[i, 4 - j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    s[C].unroll(C.op.axis[0])
    s[P].compute_at(s[C], C.op.axis[0])
    f = ts.build(s, [A, C], name="unroll_around_producer")
    a = rand((3, 5))
    np.testing.assert_allclose(f(a), a[:, ::-1] * 2 + 1, rtol=1e-6)


def test_vectorized_loop_around_a_parallel_loop(rand):
    A = ts.placeholder((9, 12), name="A")
    B = ts.compute((9, 12), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    s[B].parallel(B.op.axis[1])
    try:
        f = ts.build(s, [A, B], name="simd_around_parallel")
    except ts.ScheduleError:
        return                                           # refusing the schedule clearly is fine too
    a = rand((9, 12))
    np.testing.assert_allclose(f(a), a * 2)


# narrow types ------------------------------------------------------------------------------------
def _conversion_kernel(target: str, vectorized: bool):
    n = 64
    h, b = ts.placeholder((n,), "float16", name="h"), ts.placeholder((n,), "bfloat16", name="b")
    f, d = ts.placeholder((n,), "float32", name="f"), ts.placeholder((n,), "float64", name="d")
    outs = [ts.compute((n,), lambda i: h[i].astype("float32"), name="h2f"),
            ts.compute((n,), lambda i: b[i].astype("float32"), name="b2f"),
            ts.compute((n,), lambda i: f[i].astype("float16"), name="f2h"),
            ts.compute((n,), lambda i: f[i].astype("bfloat16"), name="f2b"),
            ts.compute((n,), lambda i: d[i].astype("float16"), name="d2h"),
            ts.compute((n,), lambda i: d[i].astype("bfloat16"), name="d2b")]
    s = ts.create_schedule([o.op for o in outs])
    if vectorized:
        for o in outs:
            s[o].vectorize(s[o].split(o.op.axis[0], 16)[1])
    with ts.Target(target):
        kernel = ts.build(s, [h, b, f, d, *outs], name=f"convert_{target.replace('-', '_')}_{int(vectorized)}")
    assert ("ts_vload" in kernel.c_source) == (vectorized and target != "c")
    return kernel


def _same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    nan = np.isnan(expected.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])


@pytest.mark.parametrize("target, vectorized", [("host", False), ("host", True), ("c", False)])
def test_float16_and_bfloat16_convert_bit_exactly_like_numpy_and_ml_dtypes(target, vectorized, rng):
    """Every float16 / bfloat16 bit pattern widens exactly; float32 and float64 round to nearest even
    (ties, subnormals, overflow to infinity) like NumPy and ml_dtypes; target "c" has no F16C."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kernel = _conversion_kernel(target, vectorized)
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(-1, 64)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 2.0 ** -24, 2.0 ** -25,
                         3 * 2.0 ** -26, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 3.4e38, 1e-40])
    with np.errstate(over="ignore"):
        wide = np.concatenate([specials, rng.uniform(-1, 1, 1008 * 16) * 2.0 ** rng.integers(-140, 130, 1008 * 16),
                               rng.uniform(-1, 1, 1024 * 8 - 16) * 2.0 ** rng.integers(-26, 17, 1024 * 8 - 16)]).reshape(-1, 64)
        for k in range(patterns.shape[0]):
            h = patterns[k].view(np.float16)
            bf = patterns[k].view(ml_dtypes.bfloat16)
            d = wide[k % wide.shape[0]]
            f = d.astype(np.float32)
            h2f, b2f, f2h, f2b, d2h, d2b = kernel(h, bf, f, d)
            np.testing.assert_array_equal(h2f, h.astype(np.float32))
            np.testing.assert_array_equal(b2f, bf.astype(np.float32))
            _same_bits(f2h, f.astype(np.float16))
            _same_bits(f2b, f.astype(ml_dtypes.bfloat16))
            _same_bits(d2h, d.astype(np.float16))
            _same_bits(d2b, d.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "uint32"])
def test_narrow_integer_arithmetic_wraps_like_numpy(dtype, rand):
    info = np.iinfo(dtype)
    A, B = ts.placeholder((64,), dtype, name="A"), ts.placeholder((64,), dtype, name="B")
    C = ts.compute((64,), lambda i: (A[i] * B[i] + A[i] - 3) // 5 + ts.maximum(-A[i], B[i]) % 7, name="C")
    f = ts.build(ts.create_schedule(C.op), [A, B, C], name=f"wrap_{dtype}")
    a, b = rand(64, dtype, info.min, info.max), rand(64, dtype, info.min, info.max)
    three, five, seven = (np.array(v, dtype) for v in (3, 5, 7))
    with np.errstate(over="ignore"):
        expected = (a * b + a - three) // five + np.maximum(-a, b) % seven
    np.testing.assert_array_equal(f(a, b), expected)



@pytest.mark.parametrize("vectorize", [False, True])
def test_a_select_reading_a_stack_buffer_stays_conditional(rand, vectorize):
    """Padding that reads a small intermediate (a stack array) under a select: gcc -O3 once turned the
    read into an unconditional one and dropped the condition (wrong border values). The array is
    reached through an opaque pointer, and every value equals NumPy."""
    n = 20
    A = ts.placeholder((3, n, n), name="A")
    R = ts.compute((3, n, n), lambda c, y, x: ts.max(A[c, y, x], 0.0), name="R")
    P = ts.compute((3, n + 2, n + 2), lambda c, y, x: ts.if_then_else(
        ts.all(y >= 1, y < n + 1, x >= 1, x < n + 1), R[c, y - 1, x - 1], 0.0), name="P")
    ry, rx = ts.reduce_axis((0, 3), "ry"), ts.reduce_axis((0, 3), "rx")
    B = ts.compute((3, n, n), lambda c, y, x: ts.sum(P[c, y + ry, x + rx], axis=[ry, rx]), name="B")
    s = ts.create_schedule(B.op)
    s[P].compute_at(s[B], B.op.axis[0])
    if vectorize:
        s[P].vectorize(P.op.axis[1])
    f = ts.build(s, [A, B], name="padded_stack_read")
    assert re.search(r"TS_OPAQUE\(R(_\d+)?\)", f.c_source)
    a = rand((3, n, n), low=-1.0)
    padded = np.pad(np.maximum(a, 0), ((0, 0), (1, 1), (1, 1))).astype(np.float64)
    want = sum(padded[:, dy:dy + n, dx:dx + n] for dy in range(3) for dx in range(3))
    np.testing.assert_allclose(f(a), want, rtol=1e-5, atol=1e-6)
