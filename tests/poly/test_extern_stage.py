"""Tests of tesched.poly.extern_stage: extern stages (``ts.extern``) lowered to one call of the user's C
function between scheduled stages, checked against NumPy, and the schedules that cannot hold such a stage
refused naming it."""
import numpy as np
import pytest

import tesched as ts

SCALE = """void scale_add(const float *a, const float *b, float *out, int64_t n, int64_t m) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++)
      out[i * m + j] = 2.0f * a[i * m + j] + b[j];
}"""
CUMSUM = """void running_sum(int64_t n, int32_t *out, const int32_t *in) {
  int32_t s = 0;
  for (int64_t i = 0; i < n; i++) { s += in[i]; out[i] = s; }
}"""


def _pipeline():
    """``P = A + 1`` -> ``E = scale_add(P, B)`` (C, over symbolic n x m) -> ``C`` reading E at two places,
    split, parallel and vectorized."""
    n, m = ts.var("n"), ts.var("m")
    A, B = ts.placeholder((n, m), name="A"), ts.placeholder((m,), name="B")
    P = ts.compute((n, m), lambda i, j: A[i, j] + 1.0, name="P")
    E = ts.extern((n, m), [P, B], name="E", fname="scale_add", source=SCALE)
    C = ts.compute((n, m), lambda i, j: E[i, j] * 3.0 + E[n - 1 - i, j], name="C")
    s = ts.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], 8)
    s[C].vectorize(ji)
    s[C].parallel(C.op.axis[0])
    s[P].parallel(P.op.axis[0])
    return s, A, B, E, C


def test_a_producer_an_extern_and_a_scheduled_consumer_match_numpy():
    s, A, B, E, C = _pipeline()
    text = str(ts.lower(s, [A, B, C]))
    assert "call scale_add(&P[0, 0], &B[0], &E[0, 0], int64(n), int64(m))" in text
    f = ts.build(s, [A, B, C])
    rng = np.random.default_rng(1)
    for n, m in ((5, 13), (1, 8), (7, 3)):
        a, b = rng.standard_normal((n, m)).astype("float32"), rng.standard_normal(m).astype("float32")
        c = np.full((n, m), np.nan, "float32")
        f(a, b, c)
        e = 2 * (a + 1) + b
        np.testing.assert_allclose(c, e * 3 + e[::-1], rtol=1e-5, atol=1e-5)


def test_the_extern_output_and_its_reader_are_both_kernel_arguments():
    s, A, B, E, C = _pipeline()
    f = ts.build(s, [A, B, E, C])
    a, b = np.ones((3, 4), "float32") * np.arange(4, dtype="float32"), np.arange(4, dtype="float32")
    e, c = np.full((3, 4), np.nan, "float32"), np.full((3, 4), np.nan, "float32")
    f(a, b, e, c)
    np.testing.assert_allclose(e, 2 * (a + 1) + b, rtol=1e-6)
    np.testing.assert_allclose(c, e * 3 + e[::-1], rtol=1e-6)


def test_tvm_form_with_arguments_in_the_functions_order_on_a_kernel_input():
    A = ts.placeholder((10,), name="A", dtype="int32")
    S = ts.extern((10,), [A], lambda ins, outs: ts.extern_call("running_sum", 10, outs[0], ins[0], source=CUMSUM),
                  name="S", dtype="int32")
    T = ts.compute((10,), lambda i: S[i] - A[i], name="T")    # the exclusive sum
    f = ts.build(ts.create_schedule(T.op), [A, S, T])
    a = np.random.default_rng(2).integers(-50, 50, 10).astype("int32")
    s, t = np.zeros(10, "int32"), np.zeros(10, "int32")
    f(a, s, t)
    np.testing.assert_array_equal(s, np.cumsum(a))
    np.testing.assert_array_equal(t, np.cumsum(a) - a)


def test_two_extern_stages_share_one_function():
    A = ts.placeholder((6,), name="A", dtype="int32")
    call = lambda ins, outs: ts.extern_call("running_sum", 6, outs[0], ins[0], source=CUMSUM)   # noqa: E731
    S1 = ts.extern((6,), [A], call, name="S1", dtype="int32")
    S2 = ts.extern((6,), [S1], call, name="S2", dtype="int32")
    f = ts.build(ts.create_schedule(S2.op), [A, S2])
    a, out = np.arange(6, dtype="int32"), np.zeros(6, "int32")
    f(a, out)
    np.testing.assert_array_equal(out, np.cumsum(np.cumsum(a)))


@pytest.mark.parametrize("primitive", ["split", "compute_at", "compute_inline", "vectorize", "parallel",
                                       "reorder_storage", "cache_write"])
def test_scheduling_the_extern_stage_is_refused_naming_it(primitive):
    s, A, B, E, C = _pipeline()
    calls = {"split": lambda: s[E].split(E.op.axis[0], 4),
             "compute_at": lambda: s[E].compute_at(s[C], C.op.axis[0]),
             "compute_inline": lambda: s[E].compute_inline(),
             "vectorize": lambda: s[E].vectorize(E.op.axis[1]),
             "parallel": lambda: s[E].parallel(E.op.axis[0]),
             "reorder_storage": lambda: s[E].reorder_storage(E.op.axis[1], E.op.axis[0]),
             "cache_write": lambda: s.cache_write(E, "local")}
    with pytest.raises(ts.ScheduleError, match=r"E: it is an extern stage|E is an extern stage"):
        calls[primitive]()


def test_placing_its_input_where_the_call_cannot_see_it_whole_is_refused():
    s, A, B, E, C = _pipeline()
    P = E.op.input_tensors[0]
    with pytest.raises(ts.ScheduleError, match="E is an extern stage"):
        s[P].compute_at(s[E], E.op.axis[0])
    s[P].compute_inline()
    with pytest.raises(ts.ScheduleError, match=r"extern stage E \(C function scale_add\) reads P whole, so P cannot "
                                               "be inlined"):
        ts.lower(s, [A, B, C])
    s, A, B, E, C = _pipeline()
    P = E.op.input_tensors[0]
    s[P].reorder_storage(P.op.axis[1], P.op.axis[0])     # P stored column-major: not what C is given
    with pytest.raises(ts.ScheduleError, match="extern stage E .* is given P as a whole dense row-major array"):
        ts.lower(s, [A, B, C])
    s, A, B, E, C = _pipeline()
    P = E.op.input_tensors[0]
    s[P].compute_at(s[C], C.op.axis[0])     # a region of P per row of C
    with pytest.raises(ts.ScheduleError, match="compute_at of P at C.i: E read.s. P outside that loop"):
        ts.lower(s, [A, B, C])
    with pytest.raises(ts.ScheduleError, match="cache_read of B: E is an extern stage"):
        ts.create_schedule(C.op).cache_read(B, "local", [E])


def test_a_source_that_does_not_compile_is_a_build_error_at_the_users_line():
    A = ts.placeholder((8,), name="A")
    bad = "void twice(const float *a, float *b) {\n  for (int i = 0; i < 8; i++)\n    b[i] = a[i] * nope;\n}"
    E = ts.extern((8,), [A], name="E", fname="twice", source=bad)
    with pytest.raises(ts.BuildError, match=r"extern twice:3:\d+: error: .nope. undeclared"):
        ts.build(ts.create_schedule(E.op), [A, E])


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_gpu_targets_are_refused(target):
    A = ts.placeholder((64,), name="A")
    E = ts.extern((64,), [A], name="E", fname="scale_add", source=SCALE)
    with pytest.raises(ts.BuildError, match=r"extern C functions \(scale_add\) run on CPU targets only"):
        ts.build(ts.create_schedule(E.op), [A, E], target=target)


def test_a_scalar_result_from_the_second_output_of_a_multi_output_compute():
    A = ts.placeholder((6,), name="A")
    M0, M1 = ts.compute((6,), lambda i: (A[i] + 1.0, A[i] * 3.0), name="M")
    src = "void total(const float *a, float *out) { float s = 0; for (int i = 0; i < 6; i++) s += a[i]; *out = s; }"
    T = ts.extern((), [M1], name="T", fname="total", source=src)
    C = ts.compute((6,), lambda i: M0[i] + T[()], name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    a, c = np.arange(6, dtype="float32") - 2, np.full(6, np.nan, "float32")
    ts.build(s, [A, C])(a, c)
    np.testing.assert_allclose(c, a + 1 + (a * 3).sum(), rtol=1e-6)


def test_two_outputs_of_one_call_and_their_readers():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    src = """void minmax_prefix(const float *a, float *lo, float *hi, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    lo[i] = i ? (a[i] < lo[i - 1] ? a[i] : lo[i - 1]) : a[0];
    hi[i] = i ? (a[i] > hi[i - 1] ? a[i] : hi[i - 1]) : a[0];
  }
}"""
    lo, hi = ts.extern([(n,), (n,)], [A], name="R", fname="minmax_prefix", source=src)
    C = ts.compute((n,), lambda i: hi[i] - lo[i], name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    assert "call minmax_prefix(&A[0], &R[0], &R.v1[0], int64(n))" in str(ts.lower(s, [A, lo, C]))
    f = ts.build(s, [A, lo, C])
    a = np.random.default_rng(3).standard_normal(11).astype("float32")
    got_lo, c = np.full(11, np.nan, "float32"), np.full(11, np.nan, "float32")
    f(a, got_lo, c)
    np.testing.assert_array_equal(got_lo, np.minimum.accumulate(a))
    np.testing.assert_allclose(c, np.maximum.accumulate(a) - np.minimum.accumulate(a), rtol=1e-6)
