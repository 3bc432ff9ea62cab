"""Tests of tesched.te.scatter: reductions whose output index is an expression (a histogram, a bilateral
grid's splat, a scatter-max), against NumPy; their loops stay serial unless the updates are atomic; an
index outside the output raises BoundsError when the kernel runs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts


def _histogram(h=12, w=10, bins=16, dtype="int32"):
    img = ts.placeholder((h, w), dtype, name="img")
    ry, rx = ts.reduce_axis((0, h), name="ry"), ts.reduce_axis((0, w), name="rx")
    hist = ts.scatter_add((bins,), img[ry, rx], 1, [ry, rx], name="hist")
    return img, ry, rx, hist


@pytest.mark.parametrize("schedule", ["plain", "split", "reorder", "atomic_parallel", "fused_atomic", "unrolled"])
def test_a_histogram_counts_what_bincount_counts(rand, schedule):
    img, ry, rx, hist = _histogram()
    s = ts.create_schedule(hist.op)
    if schedule == "split":
        s[hist].split(rx, factor=3)
    elif schedule == "reorder":
        s[hist].reorder(rx, ry)
    elif schedule == "atomic_parallel":
        s[hist].atomic().parallel(ry)
    elif schedule == "fused_atomic":
        s[hist].atomic()
        s[hist].parallel(s[hist].fuse(ry, rx))
    elif schedule == "unrolled":
        _, inner = s[hist].split(rx, factor=2)
        s[hist].unroll(inner)
    f = ts.build(s, [img, hist], name=f"hist_{schedule}")
    a = rand((12, 10), "int32", 0, 15)
    np.testing.assert_array_equal(f(a), np.bincount(a.ravel(), minlength=16))


def test_a_uint8_image_needs_no_check_for_256_bins():
    img, _, _, hist = _histogram(bins=256, dtype="uint8")
    text = str(ts.lower(ts.create_schedule(hist.op), [img, hist]))
    assert "hist[img[ry, rx]] = hist[img[ry, rx]] + 1" in text and "checked" not in text


def test_a_bin_outside_the_histogram_raises_bounds_error(rand):
    img, _, _, hist = _histogram()
    f = ts.build(ts.create_schedule(hist.op), [img, hist], name="hist_checked")
    a = rand((12, 10), "int32", 0, 15)
    a[4, 2] = 16
    with pytest.raises(ts.BoundsError, match=r"stage hist: hist\[img\[ry, rx\]\] writes dimension 0 at a "
                                             r"data-dependent index outside \[0, 16\)"):
        f(a)


def test_a_bilateral_grid_splat_mixes_affine_and_data_dependent_indices(rand):
    """Halide's bilateral grid: grid(x / s, y / s, clamp(val * bins)) += (val, 1)."""
    h, w, cell, bins = 16, 12, 4, 8
    X = ts.placeholder((h, w), name="X")
    ry, rx = ts.reduce_axis((0, h), name="ry"), ts.reduce_axis((0, w), name="rx")
    z = ts.minimum(ts.maximum((X[ry, rx] * float(bins)).astype("int32"), 0), bins - 1)
    grid = ts.scatter_add((h // cell, w // cell, bins), (ry // cell, rx // cell, z), X[ry, rx], [ry, rx], name="grid")
    count = ts.scatter_add((h // cell, w // cell, bins), (ry // cell, rx // cell, z), 1.0, [ry, rx], name="count")
    norm = ts.compute(grid.shape, lambda i, j, k: grid[i, j, k] / ts.maximum(count[i, j, k], 1.0), name="norm")
    s = ts.create_schedule(norm.op)
    assert "checked" not in str(ts.lower(s, [X, norm]))
    f = ts.build(s, [X, norm], name="splat")
    x = rand((h, w))
    g, c = np.zeros((h // cell, w // cell, bins), "float32"), np.zeros((h // cell, w // cell, bins), "float32")
    zz = np.clip((x * bins).astype(np.int32), 0, bins - 1)
    for y in range(h):
        for xx in range(w):
            g[y // cell, xx // cell, zz[y, xx]] += x[y, xx]
            c[y // cell, xx // cell, zz[y, xx]] += 1
    np.testing.assert_allclose(f(x), g / np.maximum(c, 1), rtol=1e-5)


@pytest.mark.parametrize("reducer, numpy_at, start", [("max", np.maximum.at, -np.inf), ("min", np.minimum.at, np.inf)])
def test_scatter_max_and_min_with_a_where_mask(rand, reducer, numpy_at, start):
    V = ts.placeholder((40,), name="V")
    I = ts.placeholder((40,), "int32", name="I")
    r = ts.reduce_axis((0, 40), name="r")
    out = ts.scatter((7,), I[r], V[r], r, reducer=getattr(ts, reducer), where=V[r] > 0.2, name="out")
    f = ts.build(ts.create_schedule(out.op), [V, I, out], name=f"scatter_{reducer}")
    v, idx = rand((40,)), rand((40,), "int32", 0, 6)
    expected = np.full(7, start, "float32")
    keep = v > 0.2
    numpy_at(expected, idx[keep], v[keep])
    np.testing.assert_array_equal(f(v, idx), expected)


def test_a_scatter_read_by_a_later_stage_and_fed_by_an_inlined_one(rand):
    A = ts.placeholder((30,), name="A")
    B = ts.compute((30,), lambda i: (A[i] * 10.0).astype("int32") % 5, name="B")
    r = ts.reduce_axis((0, 30), name="r")
    H = ts.scatter_add((5,), B[r], A[r], r, name="H")
    C = ts.compute((5,), lambda i: H[i] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    s[B].compute_inline()
    f = ts.build(s, [A, C], name="scatter_chain")
    a = rand((30,))
    expected = np.zeros(5, "float32")
    np.add.at(expected, (a * 10).astype(np.int32) % 5, a)
    np.testing.assert_allclose(f(a), 2 * expected, rtol=1e-5)


def test_symbolic_sizes(rand):
    n = ts.var("n")
    I = ts.placeholder((n,), "int32", name="I")
    r = ts.reduce_axis((0, n), name="r")
    H = ts.scatter_add((n,), I[r], 1, r, name="H")
    f = ts.build(ts.create_schedule(H.op), [I, H], name="scatter_symbolic")
    idx = rand((9,), "int32", 0, 8)
    np.testing.assert_array_equal(f(idx), np.bincount(idx, minlength=9))
    with pytest.raises(ts.BoundsError, match=r"outside \[0, n\)"):
        f(np.array([0, 3, 3], np.int32))


def test_a_parallel_scatter_without_atomics_is_refused():
    img, ry, rx, hist = _histogram()
    s = ts.create_schedule(hist.op)
    s[hist].parallel(ry)
    with pytest.raises(ts.ScheduleError, match=r"loop ry of stage hist is parallel, but its iterations depend on each "
                                               r"other: .*hist is a scatter .*s\[hist\]\.atomic\(\)"):
        ts.lower(s, [img, hist])
    s = ts.create_schedule(hist.op)
    s[hist].vectorize(rx)
    with pytest.raises(ts.ScheduleError, match=r"loop rx of stage hist is vectorized, but its iterations depend"):
        ts.lower(s, [img, hist])


def test_partial_histograms_per_parallel_iteration_need_no_atomics(rand):
    """rfactor by hand: each row block scatters into its own row of a partial histogram."""
    img = ts.placeholder((12, 10), "int32", name="img")
    ry, rx = ts.reduce_axis((0, 12), name="ry"), ts.reduce_axis((0, 10), name="rx")
    part = ts.scatter_add((3, 16), (ry // 4, img[ry, rx]), 1, [ry, rx], name="part")
    p = ts.reduce_axis((0, 3), name="p")
    hist = ts.compute((16,), lambda b: ts.sum(part[p, b], axis=p), name="hist")
    s = ts.create_schedule(hist.op)
    blocks, _ = s[part].split(ry, factor=4)
    s[part].parallel(blocks)
    f = ts.build(s, [img, hist], name="hist_partial")
    a = rand((12, 10), "int32", 0, 15)
    np.testing.assert_array_equal(f(a), np.bincount(a.ravel(), minlength=16))


@pytest.mark.parametrize("make, message", [
    (lambda A, r: ts.scatter((4,), (r % 4, 0), A[r], r), "the output has 1 dimensions, indexed with 2"),
    (lambda A, r: ts.scatter((4,), A[r], A[r], r), "index 0 of the output of scatter scatter must be an integer"),
    (lambda A, r: ts.scatter((4,), r % 4, A[r], ts.compute((4,), lambda i: i).op.axis[0]), "must be a reduce axis"),
    (lambda A, r: ts.scatter((4,), r % 4, A[r], r, reducer="prod"), "reducer must be one of sum, max, min"),
])
def test_declaration_mistakes(make, message):
    A = ts.placeholder((8,), name="A")
    r = ts.reduce_axis((0, 8), name="r")
    with pytest.raises((TypeError, ValueError, IndexError), match=message):
        make(A, r)


def test_schedule_mistakes():
    img, ry, rx, hist = _histogram()
    C = ts.compute((16,), lambda i: hist[i] + 1, name="C")
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="atomic of C: only a scatter"):
        s[C].atomic()
    s[hist].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ts.ScheduleError, match="compute_at of hist: a scatter writes anywhere in its tensor"):
        ts.lower(s, [img, C])
    with pytest.raises(ts.ScheduleError, match="compute_inline of hist: it is a reduction"):
        s[hist].compute_inline()
    F = ts.placeholder((8,), "float16", name="F")
    r = ts.reduce_axis((0, 8), name="r")
    H = ts.scatter((4,), r % 4, F[r], r, reducer="max", name="H")
    with pytest.raises(ts.ScheduleError, match="atomic of H: atomic updates are additions"):
        ts.create_schedule(H.op)[H].atomic()


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 60), bins=st.integers(1, 9), seed=st.integers(0, 2**31), factor=st.sampled_from([0, 2, 5]),
       parallel=st.booleans(), bad=st.booleans())
def test_random_scatters_and_schedules(n, bins, seed, factor, parallel, bad):
    rng = np.random.default_rng(seed)
    V = ts.placeholder((n,), name="V")
    I = ts.placeholder((n,), "int32", name="I")
    r = ts.reduce_axis((0, n), name="r")
    H = ts.scatter_add((bins,), I[r], V[r] * 2.0, r, name="H")
    s = ts.create_schedule(H.op)
    loop = r
    if factor:
        loop, _ = s[H].split(r, factor=factor)
    if parallel:
        s[H].atomic().parallel(loop)
    f = ts.build(s, [V, I, H], name="random_scatter")
    v = rng.uniform(size=n).astype("float32")
    idx = rng.integers(0, bins, size=n).astype("int32")
    if bad:
        idx[rng.integers(0, n)] = rng.choice([-1, bins])
        with pytest.raises(ts.BoundsError):
            f(v, idx)
        return
    expected = np.zeros(bins, "float32")
    np.add.at(expected, idx, 2 * v)
    np.testing.assert_allclose(f(v, idx), expected, rtol=1e-5, atol=1e-5)


def test_where_guards_the_index_too(rand):
    """Points filtered out by where= may carry an index outside the output: it is never checked."""
    I = ts.placeholder((20,), "int32", name="I")
    r = ts.reduce_axis((0, 20), name="r")
    H = ts.scatter_add((6,), I[r], 1, r, where=(I[r] >= 0) & (I[r] < 6), name="H")
    f = ts.build(ts.create_schedule(H.op), [I, H], name="scatter_where")
    idx = rand((20,), "int32", -3, 9)
    keep = idx[(idx >= 0) & (idx < 6)]
    np.testing.assert_array_equal(f(idx), np.bincount(keep, minlength=6))
