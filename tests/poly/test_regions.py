"""Tests of tesched.poly.regions: bounds inference of computes declared without a shape (Halide's blur, a
3-level pyramid, a clamped lookup table) against NumPy, the regions ``lower()`` prints (constant and
symbolic sizes, guards, reductions), and the errors naming the stage and the read it cannot bound."""
import numpy as np
import pytest

import tesched as ts


def _regions(s, args):
    text = str(ts.lower(s, args))
    return {line.split(":")[0][2:]: line.split(": ", 2)[2] for line in text.splitlines() if "region inferred" in line}


def test_halides_blur_with_symbolic_sizes_infers_its_halo_and_runs_at_any_size():
    H, W = ts.var("H"), ts.var("W")
    inp = ts.placeholder((H, W), name="inp")
    clamped = ts.compute(None, lambda y, x: inp[ts.clamp(y, 0, H - 1), ts.clamp(x, 0, W - 1)], name="clamped")
    bx = ts.Func(None, "float32", name="blur_x", axes=("y", "x"))
    y, x = bx.axis
    bx[y, x] = (clamped[y, x - 1] + clamped[y, x] + clamped[y, x + 1]) / 3
    by = ts.compute((H, W), lambda y, x: (bx[y - 1, x] + bx[y, x] + bx[y + 1, x]) / 3, name="blur_y")
    s = ts.create_schedule(by)
    assert _regions(s, [inp, by]) == {"clamped": "y in [-1, H + 1), x in [-1, W + 1)",
                                      "blur_x": "y in [-1, H + 1), x in [0, W)"}
    yo, yi = s[by].split(by.op.axis[0], 4)
    s[bx].compute_at(s[by], yo)
    s[clamped].compute_inline()
    s[bx].vectorize(s[bx].split(bx.op.axis[1], 4)[1])
    s[by].parallel(yo)
    kernel = ts.build(s, [inp, by])
    for h, w in [(7, 9), (1, 3), (5, 17)]:
        a = np.random.default_rng(h).random((h, w), dtype=np.float32)
        p = np.pad(a, 1, mode="edge")
        blur_x = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / 3
        np.testing.assert_allclose(kernel(a), (blur_x[:-2] + blur_x[1:-1] + blur_x[2:]) / 3, rtol=1e-5)


def _pyramid(image, levels):
    """Halide's interpolate, 3 levels: [1 2 1] / 4 downsampling, then upsampling averaged with each level."""
    h, w = image.shape
    down = [ts.compute(None, lambda y, x: image[ts.clamp(y, 0, h - 1), ts.clamp(x, 0, w - 1)], name="down0")]
    for k in range(1, levels):
        p = down[-1]
        dx = ts.compute(None, lambda y, x, p=p: (p[y, 2 * x - 1] + 2.0 * p[y, 2 * x] + p[y, 2 * x + 1]) * 0.25,
                        name=f"downx{k}")
        down.append(ts.compute(None, lambda y, x, d=dx: (d[2 * y - 1, x] + 2.0 * d[2 * y, x] + d[2 * y + 1, x])
                               * 0.25, name=f"down{k}"))
    up = down[-1]
    for k in range(levels - 2, -1, -1):
        ux = ts.compute(None, lambda y, x, c=up: (c[y, x // 2] + c[y, (x + 1) // 2]) * 0.5, name=f"upx{k}")
        uy = ts.compute(None, lambda y, x, u=ux: (u[y // 2, x] + u[(y + 1) // 2, x]) * 0.5, name=f"upy{k}")
        up = ts.compute((h, w) if k == 0 else None, lambda y, x, d=down[k], u=uy: (d[y, x] + u[y, x]) * 0.5,
                        name=f"interp{k}")
    return up


def _pyramid_reference(a, levels):
    h, w = a.shape

    def down(k, ys, xs):
        if k == 0:
            return a[np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)].astype(np.float64)

        def dx(ys, xs):
            return (down(k - 1, ys, 2 * xs - 1) + 2 * down(k - 1, ys, 2 * xs) + down(k - 1, ys, 2 * xs + 1)) / 4
        return (dx(2 * ys - 1, xs) + 2 * dx(2 * ys, xs) + dx(2 * ys + 1, xs)) / 4

    def interp(k, ys, xs):
        if k == levels - 1:
            return down(k, ys, xs)

        def ux(ys, xs):
            return (interp(k + 1, ys, xs // 2) + interp(k + 1, ys, (xs + 1) // 2)) / 2
        return (down(k, ys, xs) + (ux(ys // 2, xs) + ux((ys + 1) // 2, xs)) / 2) / 2

    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return interp(0, ys, xs)


def test_a_three_level_pyramid_sizes_every_level_from_its_readers():
    image = ts.placeholder((12, 20), name="image")
    out = _pyramid(image, 3)
    s = ts.create_schedule(out)
    regions = _regions(s, [image, out])
    # the coarsest level covers what level 1's upsampling reads; the finer ones also the downsampling's halo
    assert regions["down2"] == "y in [0, 4), x in [0, 6)" and regions["upy0"] == "y in [0, 12), x in [0, 20)"
    assert regions["down1"] == "y in [-1, 8), x in [-1, 12)" and regions["down0"] == "y in [-3, 16), x in [-3, 24)"
    a = np.random.default_rng(3).random((12, 20), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [image, out])(a), _pyramid_reference(a, 3), rtol=1e-5)
    auto = ts.auto_schedule(out)
    np.testing.assert_allclose(ts.build(auto, [image, out])(a), _pyramid_reference(a, 3), rtol=1e-5)


def test_a_lookup_table_read_at_a_clamped_data_dependent_index_covers_the_clamp():
    n = 16
    im = ts.placeholder((n,), name="im")
    lut = ts.compute(None, lambda i: ts.exp(ts.cast("float32", i) * 0.01), name="lut")
    out = ts.compute((n,), lambda i: lut[ts.cast("int32", ts.clamp(im[i], 0.0, 1.0) * 255.0)], name="out")
    s = ts.create_schedule(out)
    assert _regions(s, [im, out]) == {"lut": "i in [0, 256)"}
    a = np.random.default_rng(4).uniform(-0.2, 1.2, n).astype(np.float32)
    expected = np.exp((np.clip(a, 0, 1) * 255).astype(np.int32).astype(np.float32) * 0.01)
    np.testing.assert_allclose(ts.build(s, [im, out])(a), expected, rtol=1e-5)


def test_reads_under_a_condition_count_only_where_it_holds():
    """A zero-padded convolution: f is read only inside [0, n), so that is its region."""
    n = 10
    A = ts.placeholder((n,), name="A")
    f = ts.compute(None, lambda i: A[i] * 2.0, name="f")
    k = ts.reduce_axis((-1, 2), name="k")
    out = ts.compute((n,), lambda i: ts.sum(ts.if_then_else((i + k >= 0) & (i + k < n), f[i + k], 0.0), axis=k),
                     name="out")
    s = ts.create_schedule(out)
    assert _regions(s, [A, out]) == {"f": "i in [0, 10)"}
    a = np.random.default_rng(5).random(n, dtype=np.float32)
    p = np.pad(2 * a, 1)
    np.testing.assert_allclose(ts.build(s, [A, out])(a), p[:-2] + p[1:-1] + p[2:], rtol=1e-5)


def test_a_compute_with_a_shape_is_not_changed_by_an_inferred_producer():
    A = ts.placeholder((8,), name="A")
    f = ts.compute(None, lambda i: A[ts.clamp(i, 0, 7)] + 1.0, name="f")
    g = ts.compute((6,), lambda i: f[i + 2], name="g")      # explicit: [0, 6), reading f at 2 .. 7
    s = ts.create_schedule(g)
    assert s[g].op.output(0).shape == (6,) and s[g].op.axis == g.op.axis
    assert _regions(s, [A, g]) == {"f": "i in [2, 8)"}


@pytest.mark.parametrize("index, message", [
    (lambda idx, i: idx[i], r"stage out reads lut\[idx\[i\]\] at a data-dependent index, idx\[i\], whose values "
                            r"are not bounded \(clamp it\), so the region of lut, declared without a shape, "
                            r"cannot be inferred; bound the index or give lut a shape"),
    (lambda idx, i: i * ts.cast("int32", idx[0]), r"stage out reads lut\[i \* idx\[0\]\] at a data-dependent index"),
])
def test_an_unbounded_data_dependent_read_is_refused_naming_the_stage_and_the_read(index, message):
    idx = ts.placeholder((8,), "int32", name="idx")
    lut = ts.compute(None, lambda i: ts.cast("float32", i), name="lut")
    out = ts.compute((8,), lambda i: lut[index(idx, i)], name="out")
    with pytest.raises(ts.LoweringError, match=message):
        ts.create_schedule(out)


def test_an_inferred_output_or_a_compute_read_nowhere_is_refused():
    A = ts.placeholder((8,), name="A")
    f = ts.compute(None, lambda i: A[i] * 2.0, name="f")
    with pytest.raises(ts.LoweringError, match="compute f is an output but was declared without a shape: outputs "
                                               "carry their sizes"):
        ts.create_schedule(f)
    g = ts.compute((8,), lambda i: ts.if_then_else(i < 0, f[i], 0.0), name="g")
    with pytest.raises(ts.LoweringError, match="compute f was declared without a shape, but no stage of these "
                                               "outputs reads it anywhere"):
        ts.create_schedule(g)


def test_an_inferred_compute_is_not_a_kernel_argument():
    A = ts.placeholder((8,), name="A")
    f = ts.compute(None, lambda i: A[ts.clamp(i - 1, 0, 7)], name="f")
    g = ts.compute((8,), lambda i: f[i] + f[i + 1], name="g")
    with pytest.raises(ts.ScheduleError, match="f is an argument, but it was declared without a shape"):
        ts.build(ts.create_schedule(g), [A, f, g])


def test_a_scan_reading_an_inferred_compute_is_refused():
    n = 6
    X = ts.placeholder((n, 4), name="X")
    f = ts.compute(None, lambda t, j: X[ts.clamp(t, 0, n - 1), j] * 2.0, name="f")
    state = ts.placeholder((n, 4), name="state")
    init = ts.compute((1, 4), lambda _, j: f[0, j], name="init")
    update = ts.compute((n, 4), lambda t, j: state[t - 1, j] + f[t, j], name="update")
    scan = ts.scan(init, update, state)
    with pytest.raises(ts.LoweringError, match=r"stage scan \(ScanOp\) reads init, which reads f, whose region is "
                                               r"inferred; .* give f a shape"):
        ts.create_schedule(scan)


def test_an_inferred_func_with_an_update_covers_what_the_update_writes():
    """A histogram of clamped bins (Halide's f(x) = 0; f(clamp(im(r))) += 1), read by a 3-point blur: its region
    is the blur's halo, [-1, 9), which holds every bin the update writes."""
    n, bins = 20, 8
    im = ts.placeholder((n,), "int32", name="im")
    f = ts.Func(None, "float32", name="hist", axes=("b",))
    b, = f.axis
    f[b] = 0.0
    r = ts.reduce_axis((0, n), "r")
    f[ts.clamp(im[r], 0, bins - 1) * 2] += 1.0          # bins 0, 2 .. 14: beyond what the blur reads
    out = ts.compute((bins,), lambda i: f[i - 1] + f[i] + f[i + 1], name="out")
    s = ts.create_schedule(out)
    assert _regions(s, [im, out]) == {"hist": "b in [-1, 15)"}
    a = np.random.default_rng(6).integers(-2, 10, n).astype(np.int32)
    h = np.bincount(np.clip(a, 0, bins - 1) * 2, minlength=15).astype(np.float32)
    p = np.pad(h, (1, 0))
    np.testing.assert_allclose(ts.build(s, [im, out])(a), p[:-2][:bins] + p[1:-1][:bins] + p[2:][:bins])


@pytest.mark.parametrize("at_loop", [None, 0, 1])
def test_running_sums_of_an_inferred_func_computed_at_a_loop_of_their_reader(at_loop):
    """c(y, x) = g(y, clamp(x)); c(r, x) += c(r - 1, x): the pure axis x covers the reader's halo [-1, W + 1)."""
    H, W = 5, 7
    g = ts.placeholder((H, W), name="g")
    c = ts.Func(None, "float32", name="c", axes=("y", "x"))
    y, x = c.axis
    c[y, x] = g[y, ts.clamp(x, 0, W - 1)]
    ry = ts.reduce_axis((1, H), "ry")
    c[ry, x] = c[ry, x] + c[ry - 1, x]
    out = ts.compute((H, W), lambda y, x: c[y, x - 1] + c[y, x + 1], name="out")
    s = ts.create_schedule(out)
    assert _regions(s, [g, out]) == {"c": "y in [0, 5), x in [-1, 8)"}
    yo, xo = s[out].op.axis
    s[out].reorder(xo, yo)
    xoo, _ = s[out].split(xo, 3)
    s[out].parallel(xoo)
    if at_loop is not None:
        s[c].compute_at(s[out], s[out].leaf_iter_vars[at_loop])
    a = np.random.default_rng(7).random((H, W), dtype=np.float32)
    sums = np.cumsum(a[:, np.clip(np.arange(-1, W + 1), 0, W - 1)], axis=0)
    np.testing.assert_allclose(ts.build(s, [g, out])(a), sums[:, :-2] + sums[:, 2:], rtol=1e-5)


def _bilateral_grid(h, w, s_sigma=8, r_sigma=0.1):
    """Halide's bilateral grid with no intermediate size: the histogram a Func whose update writes the bin of
    each pixel of its cell (clamped, so bounded), three [1 4 6 4 1] blurs, the trilinear slice."""
    from tesched.recipes.bilateral_grid import TAPS
    img = ts.placeholder((h, w), name="input")
    inv_r, half = 1.0 / r_sigma, s_sigma // 2
    hist = ts.Func(None, "float32", name="histogram", axes=("c", "z", "y", "x"))
    c, z, y, x = hist.axis
    hist[c, z, y, x] = 0.0
    ry, rx = ts.reduce_axis((0, s_sigma), name="ry"), ts.reduce_axis((0, s_sigma), name="rx")
    val = ts.clamp(img[ts.clamp(y * s_sigma + ry - half, 0, h - 1), ts.clamp(x * s_sigma + rx - half, 0, w - 1)],
                   0.0, 1.0)
    hist[c, ts.cast("int32", val * inv_r + 0.5), y, x] += ts.if_then_else(c == 0, val, 1.0)
    blurs = {"histogram": hist.tensor}
    for name, (dz, dy, dx) in (("blurz", (1, 0, 0)), ("blurx", (0, 0, 1)), ("blury", (0, 1, 0))):
        blurs[name] = ts.compute(None, lambda c, z, y, x, g=list(blurs.values())[-1], dz=dz, dy=dy, dx=dx: sum(
            t * g[c, z + dz * (i - 2), y + dy * (i - 2), x + dx * (i - 2)] for i, t in enumerate(TAPS)), name=name)
    blury = blurs["blury"]

    def interpolated(c, y, x):
        zv = ts.clamp(img[y, x], 0.0, 1.0) * inv_r
        zi = ts.cast("int32", zv)
        zf = zv - ts.cast("float32", zi)
        yi, xi = y // s_sigma, x // s_sigma
        yf, xf = (ts.cast("float32", v % s_sigma) * (1.0 / s_sigma) for v in (y, x))

        def plane(z):
            return ts.lerp(ts.lerp(blury[c, z, yi, xi], blury[c, z, yi, xi + 1], xf),
                           ts.lerp(blury[c, z, yi + 1, xi], blury[c, z, yi + 1, xi + 1], xf), yf)
        return ts.lerp(plane(zi), plane(zi + 1), zf)
    out = ts.compute((h, w), lambda y, x: interpolated(0, y, x) / interpolated(1, y, x), name="bilateral_grid")
    return img, out, blurs


def test_halides_bilateral_grid_without_any_intermediate_size_matches_the_recipes_reference():
    from tests.recipes.references import bilateral_grid as reference
    img, out, blurs = _bilateral_grid(20, 36)
    s = ts.create_schedule(out)
    regions = _regions(s, [img, out])
    assert regions["blury"] == "c in [0, 2), z in [0, 12), y in [0, 4), x in [0, 6)"
    # the blur along z reads bins -2 .. 13, the update writes bins 0 .. 10: the histogram covers both
    assert regions["histogram"] == "c in [0, 2), z in [-2, 14), y in [-2, 6), x in [-2, 8)"
    blurx = s[blurs["blurx"]]
    c, z, y, x = blurs["blurx"].op.axis
    blurx.reorder(z, c, y, x)
    blurx.parallel(z)
    blurx.vectorize(blurx.split(x, 4)[1])
    s[blurs["blurz"]].compute_at(blurx, y)
    s[blurs["blury"]].compute_inline()
    a = np.random.default_rng(8).random((20, 36), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [img, out])(a), reference(a), rtol=2e-4, atol=1e-5)
