"""Tests of tesched.poly.compute_with: two root stages fused into one loop nest down to a loop (Halide's
``compute_with``), against NumPy, and the fusions refused (by the dependence check, or because the
loops cannot be shared)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts


def _row_pair(h=6, w=10):
    """f(i, j) = B + 1; g(i, j) = f(i, j) + f(i, j + 1), g reading f along the inner loop only."""
    B = ts.placeholder((h, w), name="B")
    f = ts.compute((h, w), lambda i, j: B[i, j] + 1.0, name="f")
    g = ts.compute((h, w - 1), lambda i, j: f[i, j] + f[i, j + 1], name="g")
    return B, f, g


def _row_pair_reference(b):
    return (b + 1)[:, :-1] + (b + 1)[:, 1:]


def test_a_stage_computed_with_another_runs_inside_its_loop_after_its_body(rand):
    B, f, g = _row_pair()
    s = ts.create_schedule(g)
    s[g].compute_with(s[f], f.op.axis[0])
    text = str(ts.lower(s, [B, g]))
    assert text.index("produce f {") < text.index("f[i, j] = ") < text.index("produce g {") and \
        text.count("for i in [0, 6)") == 1
    b = rand((6, 10))
    np.testing.assert_allclose(ts.build(s, [B, g])(b), _row_pair_reference(b), rtol=1e-6)


@settings(max_examples=6, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(2, 11), factor=st.integers(1, 4), parallel=st.booleans(),
       seed=st.integers(0, 2**31))
def test_compute_with_at_a_split_row_loop_under_random_schedules(h, w, factor, parallel, seed):
    B, f, g = _row_pair(h, w)
    s = ts.create_schedule(g)
    fo, fi = s[f].split(f.op.axis[0], factor)
    go, gi = s[g].split(g.op.axis[0], factor)
    s[g].compute_with(s[f], fi)
    if parallel:
        s[f].parallel(fo)
    b = np.random.default_rng(seed).random((h, w), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [B, g])(b), _row_pair_reference(b), rtol=1e-6)


def test_two_independent_stages_share_their_loop(rand):
    """compute_with.cpp: g.compute_with(f, x), both read A, h reads both."""
    A = ts.placeholder((8,), name="A")
    f = ts.compute((8,), lambda x: A[x] + 1.0, name="f")
    g = ts.compute((8,), lambda x: A[x] * 2.0, name="g")
    h = ts.compute((8,), lambda x: f[x] + g[x], name="h")
    s = ts.create_schedule(h)
    s[g].compute_with(s[f], f.op.axis[0])
    s[f].vectorize(f.op.axis[0])
    a = rand((8,))
    np.testing.assert_allclose(ts.build(s, [A, h])(a), 3 * a + 1, rtol=1e-6)


def test_a_fusion_that_reads_ahead_is_refused():
    B, f, g = _row_pair()
    s = ts.create_schedule(g)
    s[g].compute_with(s[f], f.op.axis[1])        # g(i, j) reads f(i, j + 1), computed one iteration later
    with pytest.raises(ts.ScheduleError, match=r"g\[i=\d, j=\d\] would read a value before f\[i=\d, j=\d\] "
                                               r"writes it"):
        ts.lower(s, [B, g])


def test_a_parallel_fused_loop_carrying_a_dependence_is_refused():
    B = ts.placeholder((6, 4), name="B")
    f = ts.compute((6, 4), lambda i, j: B[i, j] + 1.0, name="f")
    g = ts.compute((5, 4), lambda i, j: f[i + 1, j] - f[i, j], name="g")
    s = ts.create_schedule(g)
    s[g].compute_with(s[f], f.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"would read a value before"):
        ts.lower(s, [B, g])


@pytest.mark.parametrize("case, message", [
    ("reduction", r"compute_with of g at f.i: loop k of g is a reduction loop; the fused loops must be "
                  r"data-parallel"),
    ("marked", r"compute_with of g at f.i: loop i of g is parallel, but it runs as f's loop i; mark that one"),
    ("computed_at", r"compute_with of g at f.i: both stages must be computed at the root"),
    ("chain", r"compute_with of h at g.i: g is itself computed with f; compute h with f"),
])
def test_fusions_whose_loops_cannot_be_shared_are_refused(case, message):
    B = ts.placeholder((6, 4), name="B")
    f = ts.compute((6, 4), lambda i, j: B[i, j] + 1.0, name="f")
    k = ts.reduce_axis((0, 4), "k")
    if case == "reduction":
        g = ts.compute((6,), lambda i: ts.sum(B[i, k], axis=k), name="g")
    else:
        g = ts.compute((6, 4), lambda i, j: B[i, j] * 2.0, name="g")
    if case == "reduction":
        h = ts.compute((6, 4), lambda i, j: f[i, j] + g[i], name="h")
    else:
        h = ts.compute((6, 4), lambda i, j: f[i, j] + g[i, j], name="h")
    s = ts.create_schedule([h, g])
    if case == "reduction":
        s[g].reorder(k, g.op.axis[0])
        s[g].compute_with(s[f], f.op.axis[0])
    elif case == "marked":
        s[g].parallel(g.op.axis[0])
        s[g].compute_with(s[f], f.op.axis[0])
    elif case == "computed_at":
        s[f].compute_at(s[h], h.op.axis[0])
        s[g].compute_with(s[f], f.op.axis[0])
    else:
        s[g].compute_with(s[f], f.op.axis[0])
        s[h].compute_with(s[g], g.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=message):
        ts.lower(s, [B, h, g])
