"""Tests of tesched.poly.updates: Halide's update-definition examples (a histogram, running sums, a prefix
sum, ``f(x, r) += ...``, several updates in turn) lowered as Halide lowers them and checked against NumPy
under random legal schedules; the dependence check refusing schedules that break an update's order; the
placements refused."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from update_helpers import histogram


def _prefix_sum(h, w):
    """Running sums along rows: f(x, y) = g(x, y); f(x, r) = f(x, r) + f(x, r - 1)."""
    g = ts.placeholder((h, w), name="g")
    f = ts.Func((h, w), name="f")
    x, y = f.axis
    f[x, y] = g[x, y]
    r = ts.reduce_axis((1, w), "r")
    f[x, r] = f[x, r] + f[x, r - 1]
    return g, f


def test_a_histogram_lowers_to_its_pure_definition_then_its_update(rand):
    im, _, f = histogram(8, 20)
    s = ts.create_schedule(f)
    text = str(ts.lower(s, [im, f.tensor]))
    assert text.index("produce hist {") < text.index("produce hist.update0 {")
    assert "hist[checked(im[r], 8)] = hist[checked(im[r], 8)] + 1" in text
    kernel = ts.build(s, [im, f.tensor], name="update_hist")
    a = rand((20,), "int32", 0, 7)
    np.testing.assert_array_equal(kernel(a), np.bincount(a, minlength=8))
    a[3] = 8
    with pytest.raises(ts.BoundsError, match=r"hist\[im\[r\]\] writes dimension 0"):
        kernel(a)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(1, 24), factor=st.integers(1, 5), unroll=st.booleans(),
       seed=st.integers(0, 2**31))
def test_a_histogram_under_random_splits_counts_what_bincount_counts(n, m, factor, unroll, seed):
    im, _, f = histogram(n, m)
    s = ts.create_schedule(f)
    u = s[f].update(0)
    _, inner = u.split(u.leaf_iter_vars[0], factor)
    if unroll:
        u.unroll(inner)
    xo, xi = s[f].split(f.op.axis[0], 2)
    s[f].vectorize(xi)
    a = np.random.default_rng(seed).integers(0, n, m).astype("int32")
    np.testing.assert_array_equal(ts.build(s, [im, f.tensor])(a), np.bincount(a, minlength=n))


@settings(max_examples=8, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(2, 12), factor=st.integers(1, 4),
       order=st.sampled_from(["xr", "rx", "rx_vector", "parallel_x"]), seed=st.integers(0, 2**31))
def test_a_prefix_sum_under_random_legal_schedules_is_cumsum(h, w, factor, order, seed):
    g, f = _prefix_sum(h, w)
    s = ts.create_schedule(f)
    u = s[f].update(0)
    x, r = u.leaf_iter_vars
    xo, xi = u.split(x, factor)
    if order.startswith("rx"):
        u.reorder(r, xo, xi)
        if order == "rx_vector":
            u.vectorize(xi)
    elif order == "parallel_x":
        u.parallel(xo)
    a = np.random.default_rng(seed).random((h, w), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [g, f.tensor])(a), np.cumsum(a, axis=1), rtol=1e-5, atol=1e-5)


def test_an_update_over_a_pure_axis_and_a_reduction_domain(rand):
    """f(x, y) = 0; f(x, r) += h(r, x): each row's column r gets h[r, x]; then a second update reads it."""
    H, W = 5, 7
    g = ts.placeholder((W, H), name="g")
    f = ts.Func((H, W), name="f")
    x, y = f.axis
    f[x, y] = 0.0
    r = ts.reduce_axis((0, W), "r")
    f[x, r] += g[r, x]
    f[x, 0] = f[x, 0] * 2.0 + f[x, W - 1]
    s = ts.create_schedule(f)
    s[f].update(0).parallel(s[f].update(0).leaf_iter_vars[0])
    a = rand((W, H))
    expected = a.T.copy()
    expected[:, 0] = expected[:, 0] * 2 + expected[:, W - 1]
    np.testing.assert_allclose(ts.build(s, [g, f.tensor])(a), expected, rtol=1e-6)


def test_updates_may_follow_one_another_along_different_axes(rand):
    """Halide's lesson 9: f(x, y) = x + y; f(x, 0) = f(x, 8); f(0, y) = f(0, y) * 2 (here 6 x 9)."""
    f = ts.Func((6, 9), "int32", name="f")
    x, y = f.axis
    f[x, y] = x + y
    f[x, 0] = f[x, 8]
    f[0, y] = f[0, y] * 2
    expected = np.add.outer(np.arange(6), np.arange(9)).astype("int32")
    expected[:, 0] = expected[:, 8]
    expected[0, :] *= 2
    np.testing.assert_array_equal(ts.build(ts.create_schedule(f), [f.tensor])(), expected)


@settings(max_examples=5, deadline=None)
@given(tile=st.integers(1, 5), split_rows=st.booleans(), seed=st.integers(0, 2**31))
def test_a_func_with_updates_computed_at_a_readers_tile(tile, split_rows, seed):
    """Per tile of the reader, the updates run over the rows it reads, the pure definition over every
    column the updates touch (f(x, y) = g; f(x, W - 1 - r) += g(x, r): a row and its mirror)."""
    H, W = 6, 8
    g = ts.placeholder((H, W), name="g")
    f = ts.Func((H, W), name="f")
    x, y = f.axis
    f[x, y] = g[x, y]
    r = ts.reduce_axis((0, W), "r")
    f[x, W - 1 - r] += g[x, r]
    out = ts.compute((H, W), lambda i, j: f[i, j] + 1.0, name="out")
    s = ts.create_schedule(out)
    i, j = out.op.axis
    if split_rows:
        io, jo, _, _ = s[out].tile(i, j, tile, tile)
        s[f].compute_at(s[out], jo)
    else:
        s[f].compute_at(s[out], i)
    a = np.random.default_rng(seed).random((H, W), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [g, out])(a), a + a[:, ::-1] + 1, rtol=1e-6)


def test_a_producer_computed_at_an_updates_loop(rand):
    N = 6
    g = ts.placeholder((N,), name="g")
    h = ts.compute((N,), lambda i: g[i] * 2.0, name="h")
    f = ts.Func((N, N), name="f")
    x, y = f.axis
    f[x, y] = 0.0
    r = ts.reduce_axis((0, N), "r")
    f[x, r] += h[r] + x
    s = ts.create_schedule(f)
    u = s[f].update(0)
    s[h].compute_at(u, u.leaf_iter_vars[1])
    assert "allocate h" in str(ts.lower(s, [g, f.tensor]))
    a = rand((N,))
    np.testing.assert_allclose(ts.build(s, [g, f.tensor])(a), 2 * a[None, :] + np.arange(N)[:, None], rtol=1e-6)


@pytest.mark.parametrize("kind", ["parallel", "vectorize"])
def test_a_loop_carrying_an_updates_recurrence_may_not_run_at_once(kind):
    g, f = _prefix_sum(4, 8)
    s = ts.create_schedule(f)
    u = s[f].update(0)
    getattr(u, kind)(u.leaf_iter_vars[1])
    with pytest.raises(ts.ScheduleError, match=rf"loop r of stage f.update0 is {kind}d?, but its iterations depend "
                                               r"on each other: f.update0\[x=\d, r=\d\] and f.update0"):
        ts.lower(s, [g, f.tensor])


def test_a_histograms_loop_may_not_run_in_parallel():
    im, _, f = histogram(8, 20)
    s = ts.create_schedule(f)
    s[f].update(0).parallel(s[f].update(0).leaf_iter_vars[0])
    with pytest.raises(ts.ScheduleError, match=r"loop r of stage hist.update0 is parallel"):
        ts.lower(s, [im, f.tensor])


def test_a_reorder_that_breaks_an_updates_order_is_refused():
    """f(ry, rx) = f(ry - 1, rx + 1) * 2 + f(ry, rx) reads the row above, one column right: running rx
    outside ry reads it before it is updated."""
    N = 5
    f = ts.Func((N, N), "int32", name="f")
    x, y = f.axis
    f[x, y] = x + y
    ry, rx = ts.reduce_axis((1, N), "ry"), ts.reduce_axis((0, N - 1), "rx")
    f[ry, rx] = f[ry - 1, rx + 1] * 2 + f[ry, rx]
    s = ts.create_schedule(f)
    expected = np.add.outer(np.arange(N), np.arange(N)).astype("int32")
    for i in range(1, N):
        for j in range(N - 1):
            expected[i, j] = expected[i - 1, j + 1] * 2 + expected[i, j]
    np.testing.assert_array_equal(ts.build(s, [f.tensor])(), expected)
    u = s[f].update(0)
    u.reorder(u.leaf_iter_vars[1], u.leaf_iter_vars[0])
    with pytest.raises(ts.ScheduleError, match=r"f.update0\[ry=\d, rx=\d\] would read a value before "
                                               r"f.update0\[ry=\d, rx=\d\] writes it"):
        ts.lower(s, [f.tensor])


def _two_updates():
    T = ts.compute((6,), lambda i: i * 1.0, name="T")
    r = ts.reduce_axis((0, 6), "r")
    T1 = ts.update(T, (r,), T[r] + 1.0)
    return T, T1, ts.update(T1, (r,), T1[r] * 2.0)


def test_only_the_latest_version_is_read_or_passed():
    T, T1, T2 = _two_updates()
    C = ts.compute((6,), lambda i: T1[i] + 1.0, name="C")
    with pytest.raises(ts.ScheduleError, match=r"stage C reads T.update0, a version of T that a later definition "
                                               r"\(T.update1\) updates in place; read the latest version"):
        ts.lower(ts.create_schedule([C, T2]), [C, T2])
    with pytest.raises(ts.ScheduleError, match=r"the kernel's arguments hold T.update0"):
        ts.lower(ts.create_schedule(T2), [T1, T2])


def test_placements_an_update_group_cannot_take():
    T, T1, T2 = _two_updates()
    C = ts.compute((6,), lambda i: T2[i] + 1.0, name="C")
    s = ts.create_schedule(C)
    s[T].compute_inline()
    with pytest.raises(ts.ScheduleError, match=r"compute_inline of T: it has update definitions"):
        ts.lower(s, [C])
    s = ts.create_schedule(C)
    s[T2].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"compute_at of T.update1: an update definition is computed where "
                                               r"its pure definition is; place that one \(s\[T\]\)"):
        ts.lower(s, [C])
    s = ts.create_schedule(C)
    s[T].compute_at(s[C], C.op.axis[0])
    s[T].store_root()
    with pytest.raises(ts.ScheduleError, match=r"store_root of T: it has update definitions"):
        ts.lower(s, [C])


def test_an_update_reading_other_pure_coordinates_stays_at_the_root(rand):
    g = ts.placeholder((8,), name="g")
    f = ts.Func((8,), name="f")
    x, = f.axis
    f[x] = g[x]
    f[x] = f[x] + f[ts.max(x - 1, 0)]
    out = ts.compute((8,), lambda i: f[i] * 2.0, name="out")
    s = ts.create_schedule(out)
    a = rand((8,))
    expected = a.copy()
    expected[0] *= 2                    # f[0] + f[max(-1, 0)]
    for k in range(1, 8):
        expected[k] += expected[k - 1]
    np.testing.assert_allclose(ts.build(s, [g, out])(a), 2 * expected, rtol=1e-5)
    s[f].compute_at(s[out], out.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"compute_at of f: its update f.update0 reads f\[max\(x - 1, 0\)\], "
                                               r"at max\(x - 1, 0\) along its pure axis x"):
        ts.lower(s, [g, out])
