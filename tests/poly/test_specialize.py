"""``Stage.specialize`` (tesched.poly.specialize): a fast path generated knowing a condition on the sizes,
chosen at run time; both paths checked against NumPy with sizes that do and do not satisfy it."""
from __future__ import annotations

import numpy as np
import pytest
from conv_helpers import loop_body

import tesched as ts


def _scaled(n):
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return A, B


def test_a_divisible_size_gets_a_path_without_tails(rand):
    n = ts.var("n")
    A, B = _scaled(n)
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(ii)
    s[B].specialize(n % 16 == 0)
    kernel = ts.build(s, [A, B], name="specialize_divisible")
    text = str(kernel.lowered)
    fast, general = text.split("} else {")
    assert "if (n % 16 == 0)" in fast and "vectorized for i.inner in [0, 16)" in fast, text
    assert "min(" not in fast and "min(16, n - 16 * i.outer" in general, text
    source = kernel.c_source
    fast_c = source[source.index("% 16) == 0)"):source.index("} else {")]
    assert "ts_vstore_f32x16" in fast_c or "ts_vstore_f32x8" in fast_c or "ts_vstore_f32x4" in fast_c
    assert "#pragma omp simd" not in fast_c and "ts_min_i64" not in fast_c, fast_c
    for size in (16, 64, 37, 5, 1):       # multiples of 16 take the fast path, the others the general one
        a = rand((size,))
        np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


def test_a_two_dimensional_stage_with_a_producer_inside(rand):
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, m + 2), name="A")
    P = ts.compute((n, m + 2), lambda i, j: A[i, j] * A[i, j], name="P")
    Q = ts.compute((n, m), lambda i, j: P[i, j] + P[i, j + 2], name="Q")
    s = ts.create_schedule(Q.op)
    io, jo, ii, ji = s[Q].tile(Q.op.axis[0], Q.op.axis[1], 4, 8)
    s[P].compute_at(s[Q], jo)
    s[Q].vectorize(ji)
    s[Q].specialize((n % 4 == 0) & (m % 8 == 0))
    kernel = ts.build(s, [A, Q], name="specialize_tiles")
    text = str(kernel.lowered)
    assert "if (n % 4 == 0 and m % 8 == 0)" in text.replace("&&", "and"), text
    for rows, cols in ((8, 16), (8, 13), (5, 16), (3, 3)):
        a = rand((rows, cols + 2))
        sq = a.astype(np.float64) ** 2
        np.testing.assert_allclose(kernel(a), sq[:, :cols] + sq[:, 2:], rtol=1e-5)


def test_several_conditions_pick_the_first_that_holds(rand):
    n = ts.var("n")
    A, B = _scaled(n)
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=8)
    s[B].specialize(n % 8 == 0)
    s[B].specialize(n >= 100)
    s[B].specialize(n >= 1)        # always holds: no path of its own
    kernel = ts.build(s, [A, B], name="specialize_chain")
    text = str(kernel.lowered)
    assert text.count("produce B") == 3 and text.index("n % 8 == 0") < text.index("n >= 100"), text
    for size in (8, 120, 101, 7):
        a = rand((size,))
        np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("mistake, message", [
    ("never", r"specialize of B: n < 1 never holds"),
    ("nonaffine", r"specialize of B: n \* n == 4 is not a condition isl can decide"),
    ("unknown size", r"specialize of B: .*variable m is not a loop index or size"),
    ("computed at", r"specialize of B: it is computed scope C"),
])
def test_specialize_refusals_at_lowering(mistake, message):
    n, m = ts.var("n"), ts.var("m")
    A, B = _scaled(n)
    C = ts.compute((n,), lambda i: B[i] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    condition = {"never": n < 1, "nonaffine": n * n == 4, "unknown size": m % 4 == 0,
                 "computed at": n % 4 == 0}[mistake]
    s[B].specialize(condition)
    if mistake == "computed at":
        s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=message):
        ts.lower(s, [A, C])


def test_specialize_refuses_a_condition_on_loops_or_data():
    n = ts.var("n")
    A, B = _scaled(n)
    s = ts.create_schedule(B.op)
    with pytest.raises(ts.ScheduleError, match="specialize of B: the condition uses loop variable i"):
        s[B].specialize(B.op.axis[0] % 2 == 0)
    with pytest.raises(ts.ScheduleError, match="specialize of B: the condition uses a read of A"):
        s[B].specialize(A[0] > 0.0)
    with pytest.raises(ts.ScheduleError, match="specialize of B: the condition must be a comparison"):
        s[B].specialize(n)
    assert not s[B].specializations


def test_loop_body_helper_sees_the_fast_path():
    n = ts.var("n")
    A, B = _scaled(n)
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    s[B].specialize(n % 4 == 0)
    text = str(ts.lower(s, [A, B]))
    assert "for i.inner in [0, 4)" in loop_body(text, "i.outer"), text
