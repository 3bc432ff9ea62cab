"""The apps of ``benchmarks/halide_apps.py`` written with Halide's Python bindings (``halide==21.0.0``): the
same algorithms, constants and borders as ``tesched.recipes`` declares them, each with Halide's published
CPU schedule translated to Python (``hand``). Halide indexes innermost-first: a NumPy ``(c, y, x)`` array
is a Halide buffer ``(x, y, c)``. Every input is read through ``BoundaryConditions.repeat_edge`` (Adams2019
schedules may read past an input otherwise), which changes nothing on the region the apps read.

Each builder returns ``(output Func, every Func by name, [ImageParam], hand)``; ``hand()`` applies the
published schedule. The unscheduled variant computes every Func at the root (as tesched's unscheduled
kernels do; Halide's default, everything inlined, recomputes a pyramid exponentially).
"""
from __future__ import annotations

import numpy as np

from tesched.recipes import camera_pipe as cp
from tesched.recipes.bilateral_grid import TAPS
from tesched.recipes.filters import GRAY, gaussian_taps
from tesched.recipes.local_laplacian import LUT_STEPS


def _param(hl, name, array):
    p = hl.ImageParam(hl.UInt(16) if array.dtype == np.uint16 else hl.Float(32), array.ndim, name)
    p.set_estimates([(0, int(d)) for d in reversed(array.shape)])
    return p


def _estimate(f, shape):
    f.set_estimates([(0, int(d)) for d in reversed(shape)])


def _funcs(hl, *names):
    return {n: hl.Func(n) for n in names}


def _gray(hl, f, x, y, clamped):
    f[x, y] = GRAY[0] * clamped[x, y, 0] + GRAY[1] * clamped[x, y, 1] + GRAY[2] * clamped[x, y, 2]


def harris(hl, in_shape):
    shape = in_shape[1:]
    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    p = _param(hl, "input", np.empty(in_shape, np.float32))
    cl = hl.BoundaryConditions.repeat_edge(p)
    F = _funcs(hl, "gray", "Ix", "Iy", "Ixx", "Iyy", "Ixy", "Sxx", "Syy", "Sxy", "harris")
    _gray(hl, F["gray"], x, y, cl)
    g = F["gray"]
    taps = ((-1, 1.0), (0, 2.0), (1, 1.0))
    F["Ix"][x, y] = sum(w / 12 * (g[x + 1, y + d] - g[x - 1, y + d]) for d, w in taps)
    F["Iy"][x, y] = sum(w / 12 * (g[x + d, y + 1] - g[x + d, y - 1]) for d, w in taps)
    for k, a, b in (("xx", "Ix", "Ix"), ("yy", "Iy", "Iy"), ("xy", "Ix", "Iy")):
        F[f"I{k}"][x, y] = F[a][x, y] * F[b][x, y]
        F[f"S{k}"][x, y] = sum(F[f"I{k}"][x + dx, y + dy] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    sxx, syy, sxy = F["Sxx"][x, y], F["Syy"][x, y], F["Sxy"][x, y]
    out = F["harris"]
    out[x, y] = sxx * syy - sxy * sxy - 0.04 * (sxx + syy) * (sxx + syy)
    _estimate(out, shape)

    def hand():
        vec = hl.get_host_target().natural_vector_size(hl.Float(32))
        out.split(y, y, yi, 32).parallel(y).vectorize(x, vec)
        for n in ("gray", "Ix", "Iy"):
            F[n].store_at(out, y).compute_at(out, yi).vectorize(x, vec)
        F["Ix"].compute_with(F["Iy"], x)
    return out, F, [p], hand


def unsharp(hl, shape):
    x, y, c, yo, yi = (hl.Var(n) for n in ("x", "y", "c", "yo", "yi"))
    p = _param(hl, "input", np.empty(shape, np.float32))
    cl = hl.BoundaryConditions.repeat_edge(p)
    F = _funcs(hl, "gray", "blur_y", "blur_x", "sharpen", "ratio", "unsharp")
    _gray(hl, F["gray"], x, y, cl)
    t = gaussian_taps(1.5)
    g, by = F["gray"], F["blur_y"]
    by[x, y] = t[0] * g[x, y] + sum(t[i] * (g[x, y - i] + g[x, y + i]) for i in (1, 2, 3))
    F["blur_x"][x, y] = t[0] * by[x, y] + sum(t[i] * (by[x - i, y] + by[x + i, y]) for i in (1, 2, 3))
    F["sharpen"][x, y] = 2.0 * g[x, y] - F["blur_x"][x, y]
    F["ratio"][x, y] = F["sharpen"][x, y] / g[x, y]
    out = F["unsharp"]
    out[x, y, c] = F["ratio"][x, y] * cl[x, y, c]
    _estimate(out, shape)

    def hand():
        vec = hl.get_host_target().natural_vector_size(hl.Float(32))
        out.split(y, yo, yi, 32).vectorize(x, vec).parallel(yo).reorder(x, c, yi, yo)
        for n in ("gray", "blur_y", "ratio"):
            F[n].compute_at(out, yi).store_at(out, yo).vectorize(x, vec)
    return out, F, [p], hand


def nl_means(hl, shape, patch=7, search=7, sigma=0.12):
    x, y, c, dx, dy = (hl.Var(n) for n in ("x", "y", "c", "dx", "dy"))
    tx, ty = hl.Var("tx"), hl.Var("ty")
    p = _param(hl, "input", np.empty(shape, np.float32))
    cl = hl.BoundaryConditions.repeat_edge(p)
    F = _funcs(hl, "d", "blur_d_y", "blur_d", "w", "alpha", "nlm_sum", "nl_means")
    F["d"][x, y, dx, dy] = sum((cl[x, y, k] - cl[x + dx, y + dy, k]) * (cl[x, y, k] - cl[x + dx, y + dy, k])
                               for k in range(3))
    r = hl.RDom([(-(patch // 2), patch)])
    F["blur_d_y"][x, y, dx, dy] = hl.sum(F["d"][x, y + r.x, dx, dy])
    r2 = hl.RDom([(-(patch // 2), patch)])
    F["blur_d"][x, y, dx, dy] = hl.sum(F["blur_d_y"][x + r2.x, y, dx, dy])
    F["w"][x, y, dx, dy] = hl.exp(F["blur_d"][x, y, dx, dy] * (-1.0 / (sigma * sigma * patch * patch)))
    F["alpha"][x, y, c] = hl.select(c < 3, cl[x, y, hl.min(c, 2)], 1.0)
    s = hl.RDom([(-(search // 2), search), (-(search // 2), search)])
    total = F["nlm_sum"]
    total[x, y, c] = 0.0
    total[x, y, c] += F["w"][x, y, s.x, s.y] * F["alpha"][x + s.x, y + s.y, c]
    out = F["nl_means"]
    out[x, y, c] = hl.clamp(total[x, y, c] / total[x, y, 3], 0.0, 1.0)
    _estimate(out, shape)

    def hand():
        out.compute_root().reorder(c, x, y).tile(x, y, tx, ty, x, y, 16, 8).parallel(ty).vectorize(x, 8)
        for n in ("blur_d_y", "d"):
            F[n].compute_at(out, tx).hoist_storage(out, ty).reorder(y, x).vectorize(x, 8)
        total.compute_at(out, x).reorder(c, x, y).bound(c, 0, 4).unroll(c).vectorize(x, 8)
        total.update(0).reorder(c, x, y, s.x, s.y).unroll(c).vectorize(x, 8)
        F["blur_d"].compute_at(total, s.x).vectorize(x, 8)
    return out, F, [p], hand


def bilateral_grid(hl, shape, s_sigma=8, r_sigma=0.1):
    x, y, z, c = (hl.Var(n) for n in ("x", "y", "z", "c"))
    p = _param(hl, "input", np.empty(shape, np.float32))
    cl = hl.BoundaryConditions.repeat_edge(p)
    F = _funcs(hl, "histogram", "blurz", "blurx", "blury", "interpolated", "bilateral_grid")
    inv_r = 1.0 / r_sigma
    r = hl.RDom([(0, s_sigma), (0, s_sigma)])
    val = hl.clamp(cl[x * s_sigma + r.x - s_sigma // 2, y * s_sigma + r.y - s_sigma // 2], 0.0, 1.0)
    zi = hl.i32(val * inv_r + 0.5)
    hist = F["histogram"]
    hist[x, y, z, c] = 0.0
    hist[x, y, zi, c] += hl.select(c == 0, val, 1.0)
    F["blurz"][x, y, z, c] = sum(t * hist[x, y, z + i - 2, c] for i, t in enumerate(TAPS))
    F["blurx"][x, y, z, c] = sum(t * F["blurz"][x + i - 2, y, z, c] for i, t in enumerate(TAPS))
    F["blury"][x, y, z, c] = sum(t * F["blurx"][x, y + i - 2, z, c] for i, t in enumerate(TAPS))
    b = F["blury"]
    zv = hl.clamp(cl[x, y], 0.0, 1.0) * inv_r
    zi = hl.i32(zv)
    zf = zv - hl.f32(zi)
    xi, yi = x / s_sigma, y / s_sigma
    xf, yf = hl.f32(x % s_sigma) * (1.0 / s_sigma), hl.f32(y % s_sigma) * (1.0 / s_sigma)

    def plane(zz):
        return hl.lerp(hl.lerp(b[xi, yi, zz, c], b[xi + 1, yi, zz, c], xf),
                       hl.lerp(b[xi, yi + 1, zz, c], b[xi + 1, yi + 1, zz, c], xf), yf)
    F["interpolated"][x, y, c] = hl.lerp(plane(zi), plane(zi + 1), zf)
    out = F["bilateral_grid"]
    out[x, y] = F["interpolated"][x, y, 0] / F["interpolated"][x, y, 1]
    _estimate(out, shape)
    def hand():
        for n in ("blurz", "blurx", "blury"):     # two channels: unrolled
            F[n].bound(c, 0, 2)
        hist.compute_at(F["blurz"], y)
        hist.update().reorder(c, r.x, r.y, x, y).unroll(c)
        F["blurz"].compute_root().reorder(c, z, x, y).parallel(y).vectorize(x, 8).unroll(c)
        for n in ("blurx", "blury"):
            F[n].compute_root().reorder(c, x, y, z).parallel(z).vectorize(x, 8).unroll(c)
        out.compute_root().parallel(y).vectorize(x, 8)
    return out, F, [p], hand


def _expr(hl, v):
    return v if isinstance(v, hl.Expr) else hl.Expr(v)


def _avg(hl, a, b):
    a = _expr(hl, a)
    wider = hl.Int(32) if a.type().is_int() else hl.UInt(32)
    return hl.cast(a.type(), (hl.cast(wider, a) + b + 1) / 2)


def camera_pipe(hl, in_shape, strip=32):
    """``in_shape``: the raw frame's ``(oh + 24, ow + 32)``."""
    x, y, c, yo, yi, yii, xi = (hl.Var(n) for n in ("x", "y", "c", "yo", "yi", "yii", "xi"))
    oh, ow = in_shape[0] - 2 * cp.MARGIN_Y, in_shape[1] - 2 * cp.MARGIN_X
    shape = (3, oh, ow)
    p = _param(hl, "input", np.empty(in_shape, np.uint16))
    raw = hl.BoundaryConditions.repeat_edge(p)
    F = _funcs(hl, "shifted", "denoised", "deinterleaved", "g_r", "g_b", "demosaiced", "corrected", "curve",
               "curved", "unsharp_y", "unsharp", "camera_pipe")
    sh = F["shifted"]
    sh[x, y] = hl.i16(raw[x + cp.MARGIN_X, y + cp.MARGIN_Y])
    a = hl.max(hl.max(sh[x - 2, y], sh[x + 2, y]), hl.max(sh[x, y - 2], sh[x, y + 2]))
    F["denoised"][x, y] = hl.clamp(sh[x, y], 0, a)
    dn = F["denoised"]
    F["deinterleaved"][x, y, c] = hl.select(c == 0, dn[2 * x, 2 * y], c == 1, dn[2 * x + 1, 2 * y],
                                            c == 2, dn[2 * x, 2 * y + 1], dn[2 * x + 1, 2 * y + 1])
    di = F["deinterleaved"]
    g_gr, r_r, b_b, g_gb = ((lambda xx, yy, k=k: _expr(hl, di[xx, yy, k])) for k in range(4))

    def avg(p_, q):
        return _avg(hl, p_, q)

    def choose(d1, v1, d2, v2):
        return hl.select(d1 < d2, v1, v2)
    F["g_r"][x, y] = choose(hl.absd(g_gr(x + 1, y), g_gr(x, y)), avg(g_gr(x + 1, y), g_gr(x, y)),
                            hl.absd(g_gb(x, y - 1), g_gb(x, y)), avg(g_gb(x, y - 1), g_gb(x, y)))
    F["g_b"][x, y] = choose(hl.absd(g_gb(x - 1, y), g_gb(x, y)), avg(g_gb(x - 1, y), g_gb(x, y)),
                            hl.absd(g_gr(x, y + 1), g_gr(x, y)), avg(g_gr(x, y + 1), g_gr(x, y)))
    gr, gb = (lambda xx, yy: _expr(hl, F["g_r"][xx, yy])), (lambda xx, yy: _expr(hl, F["g_b"][xx, yy]))

    def cavg(g, g1, g2, c1, c2):
        return g - avg(g1, g2) + avg(c1, c2)

    def diag(g, known, green, ps, ns):
        (p1, p2), (n1, n2) = ps, ns
        pv = cavg(g, green(*p1), green(*p2), known(*p1), known(*p2))
        nv = cavg(g, green(*n1), green(*n2), known(*n1), known(*n2))
        return choose(hl.absd(known(*p1), known(*p2)), pv, hl.absd(known(*n1), known(*n2)), nv)
    X, Y = x / 2, y / 2                          # half-resolution site (x, y order here)
    red = [[cavg(g_gr(X, Y), gr(X, Y), gr(X - 1, Y), r_r(X - 1, Y), r_r(X, Y)), r_r(X, Y)],
           [diag(gb(X, Y), r_r, gr, ((X, Y), (X - 1, Y + 1)), ((X - 1, Y), (X, Y + 1))),
            cavg(g_gb(X, Y), gr(X, Y), gr(X, Y + 1), r_r(X, Y), r_r(X, Y + 1))]]
    green = [[g_gr(X, Y), gr(X, Y)], [gb(X, Y), g_gb(X, Y)]]
    blue = [[cavg(g_gr(X, Y), gb(X, Y), gb(X, Y - 1), b_b(X, Y), b_b(X, Y - 1)),
             diag(gr(X, Y), b_b, gb, ((X, Y), (X + 1, Y - 1)), ((X + 1, Y), (X, Y - 1)))],
            [b_b(X, Y), cavg(g_gb(X, Y), gb(X, Y), gb(X + 1, Y), b_b(X, Y), b_b(X + 1, Y))]]

    def pick(q):
        return hl.select(y % 2 == 0, hl.select(x % 2 == 0, q[0][0], q[0][1]),
                         hl.select(x % 2 == 0, q[1][0], q[1][1]))
    F["demosaiced"][x, y, c] = hl.select(c == 0, pick(red), c == 1, pick(green), pick(blue))
    dm = F["demosaiced"]
    m = cp.color_matrix().astype(int)
    rgb = [hl.i32(dm[x, y, k]) for k in range(3)]
    rows = [hl.i16((int(m[i, 3]) + int(m[i, 0]) * rgb[0] + int(m[i, 1]) * rgb[1] + int(m[i, 2]) * rgb[2]) / 256)
            for i in range(3)]
    F["corrected"][x, y, c] = hl.select(c == 0, rows[0], c == 1, rows[1], rows[2])
    ca, cb, inv_range = cp.curve_constants()
    i = hl.Var("i")
    xf = hl.clamp(hl.f32(i - cp.BLACK) * inv_range, 0.0, 1.0)
    g = hl.pow(xf, 1.0 / cp.GAMMA)
    zc = hl.select(g > 0.5, 1.0 - (ca * (1.0 - g) * (1.0 - g) + cb * (1.0 - g)), ca * g * g + cb * g)
    val = hl.u8(hl.clamp(zc * 255.0 + 0.5, 0.0, 255.0))
    F["curve"][i] = hl.select(i <= cp.BLACK, hl.u8(0), hl.select(i > cp.WHITE, hl.u8(255), val))
    F["curved"][x, y, c] = F["curve"][hl.clamp(hl.i32(F["corrected"][x, y, c]), 0, 1023)]
    cv = F["curved"]

    def blur121(a_, b_, c_):
        return avg(avg(a_, c_), b_)
    F["unsharp_y"][x, y, c] = blur121(cv[x, y - 1, c], cv[x, y, c], cv[x, y + 1, c])
    uy = F["unsharp_y"]
    F["unsharp"][x, y, c] = blur121(uy[x - 1, y, c], uy[x, y, c], uy[x + 1, y, c])
    mask = hl.i16(cv[x, y, c]) - hl.i16(F["unsharp"][x, y, c])
    strength = int(min(255, cp.SHARPEN * 32))
    out = F["camera_pipe"]
    out[x, y, c] = hl.u8_sat(hl.i16(cv[x, y, c]) + (mask * strength) / 32)
    _estimate(out, shape)

    def hand():
        F["curve"].bound(i, 0, 1024)
        out.bound(c, 0, 3)
        vec = hl.get_host_target().natural_vector_size(hl.UInt(16))
        rnd = hl.TailStrategy.RoundUp
        F["curve"].compute_root()
        out.compute_root().reorder(c, x, y).split(y, yi, yii, 2, rnd).split(yi, yo, yi, strip // 2) \
            .vectorize(x, 2 * vec, rnd).unroll(c).parallel(yo)
        F["denoised"].compute_at(out, yi).store_at(out, yo).fold_storage(y, 16) \
            .tile(x, y, x, y, xi, yii, 2 * vec, 2).vectorize(xi).unroll(yii)
        F["deinterleaved"].compute_at(out, yi).store_at(out, yo).fold_storage(y, 8).reorder(c, x, y) \
            .vectorize(x, 2 * vec, rnd).unroll(c)
        cv.compute_at(out, yi).store_at(out, yo).reorder(c, x, y).tile(x, y, x, y, xi, yii, 2 * vec, 2, rnd) \
            .vectorize(xi).unroll(yii).unroll(c)
        F["corrected"].compute_at(cv, x).reorder(c, x, y).vectorize(x).unroll(y).unroll(c)
        for n in ("g_r", "g_b"):
            F[n].compute_at(out, yi).store_at(out, yo).vectorize(x, 2 * vec, rnd).fold_storage(y, 4)
        dm.compute_at(cv, x).vectorize(x).unroll(y).reorder(c, x, y).unroll(c)
    return out, F, [p], hand


def _down(hl, f, x, y, fine, name, lead):
    """``[1 3 3 1] / 8`` along x then y, indices clamped to the finer level ``fine = (h, w)``."""
    fh, fw = fine
    dx, dy = hl.Func(f"{name}x"), hl.Func(name)
    dx[(x, y, *lead)] = (f[(hl.max(2 * x - 1, 0), y, *lead)] + 3.0 * f[(hl.min(2 * x, fw - 1), y, *lead)]
                         + 3.0 * f[(hl.min(2 * x + 1, fw - 1), y, *lead)]
                         + f[(hl.min(2 * x + 2, fw - 1), y, *lead)]) * 0.125
    dy[(x, y, *lead)] = (dx[(x, hl.max(2 * y - 1, 0), *lead)] + 3.0 * dx[(x, hl.min(2 * y, fh - 1), *lead)]
                         + 3.0 * dx[(x, hl.min(2 * y + 1, fh - 1), *lead)]
                         + dx[(x, hl.min(2 * y + 2, fh - 1), *lead)]) * 0.125
    return dx, dy


def _up(hl, f, x, y, coarse, name, lead):
    """``[1/4 3/4]`` along x then y from the coarser level ``coarse = (h, w)``."""
    ch, cw = coarse
    ux, uy = hl.Func(f"{name}x"), hl.Func(name)
    ux[(x, y, *lead)] = (0.25 * f[(hl.clamp(x / 2 - 1 + 2 * (x % 2), 0, cw - 1), y, *lead)]
                         + 0.75 * f[(hl.min(x / 2, cw - 1), y, *lead)])
    uy[(x, y, *lead)] = (0.25 * ux[(x, hl.clamp(y / 2 - 1 + 2 * (y % 2), 0, ch - 1), *lead)]
                         + 0.75 * ux[(x, hl.min(y / 2, ch - 1), *lead)])
    return ux, uy


def local_laplacian(hl, shape, levels=8, k=8, alpha=1.0, beta=1.0):
    x, y, t, i, yo = (hl.Var(n) for n in ("x", "y", "k", "i", "yo"))
    h, w = shape
    p = _param(hl, "input", np.empty(shape, np.float32))
    img = hl.BoundaryConditions.repeat_edge(p)
    shapes = [(max(h >> j, 1), max(w >> j, 1)) for j in range(levels)]
    top = (k - 1) * LUT_STEPS
    F = {}
    remap = F["remap"] = hl.Func("remap")
    fx = (hl.f32(i) - float(top)) / float(LUT_STEPS)
    remap[i] = alpha * fx * hl.exp(fx * fx * -0.5)
    g0 = F["gpyr0"] = hl.Func("gpyr0")
    level = hl.f32(t) * (1.0 / (k - 1))
    idx = hl.clamp(hl.i32(img[x, y] * float(top)), 0, top)
    g0[x, y, t] = beta * (img[x, y] - level) + level + remap[idx - LUT_STEPS * t + top]
    gp, ip = [g0], [img]
    for j in range(1, levels):
        for pyr, name, lead in ((gp, "gpyr", (t,)), (ip, "inpyr", ())):
            F[f"{name}{j}x"], F[f"{name}{j}"] = _down(hl, pyr[-1], x, y, shapes[j - 1], f"{name}{j}", lead)
            pyr.append(F[f"{name}{j}"])
    out = None
    for j in range(levels - 1, -1, -1):
        if j == levels - 1:
            lap = gp[j]
        else:
            F[f"gup{j}x"], up = _up(hl, gp[j + 1], x, y, shapes[j + 1], f"gup{j}", (t,))
            lap = F[f"lpyr{j}"] = hl.Func(f"lpyr{j}")
            lap[x, y, t] = gp[j][x, y, t] - up[x, y, t]
        band = F[f"outlpyr{j}"] = hl.Func(f"outlpyr{j}")
        lv = ip[j][x, y] * float(k - 1)
        li = hl.clamp(hl.i32(lv), 0, k - 2)
        lf = lv - hl.f32(li)
        band[x, y] = (1.0 - lf) * lap[x, y, li] + lf * lap[x, y, li + 1]
        if out is None:
            out = band
        else:
            F[f"outup{j}x"], up = _up(hl, out, x, y, shapes[j + 1], f"outup{j}", ())
            out = F[f"outgpyr{j}"] = hl.Func(f"outgpyr{j}")
            out[x, y] = up[x, y] + band[x, y]
    _estimate(out, shape)

    def hand():   # Halide's local_laplacian CPU schedule (its gray and colour stages are not in this version)
        remap.bound(i, 0, 2 * top + 1).compute_root()
        for g in gp:
            g.bound(t, 0, k)
        out.split(y, yo, y, 64).parallel(yo).vectorize(x, 8)
        for j in range(1, levels):
            if j < 5:
                ip[j].compute_root().parallel(y, 32).vectorize(x, 8)
                gp[j].compute_root().reorder_storage(x, t, y).reorder(t, y).parallel(y, 8).vectorize(x, 8)
                if j < levels - 1:
                    F[f"outgpyr{j}"].store_at(out, yo).compute_at(out, y).fold_storage(y, 8).vectorize(x, 8)
            else:
                ip[j].compute_root()
                gp[j].compute_root().parallel(t)
                (F[f"outgpyr{j}"] if j < levels - 1 else F[f"outlpyr{j}"]).compute_root()
    return out, F, [p], hand


def interpolate(hl, shape, levels=10):
    x, y = hl.Var("x"), hl.Var("y")
    h, w = shape
    p = _param(hl, "input", np.empty(shape, np.float32))
    img = hl.BoundaryConditions.repeat_edge(p)
    shapes = [(max(h >> j, 1), max(w >> j, 1)) for j in range(levels)]
    F = {}
    down = [img]
    for j in range(1, levels):
        (fh, fw), f = shapes[j - 1], down[-1]
        dx, dy = F[f"downx{j}"], F[f"down{j}"] = hl.Func(f"downx{j}"), hl.Func(f"down{j}")
        dx[x, y] = (f[hl.max(2 * x - 1, 0), y] + 2.0 * f[hl.min(2 * x, fw - 1), y]
                    + f[hl.min(2 * x + 1, fw - 1), y]) * 0.25
        dy[x, y] = (dx[x, hl.max(2 * y - 1, 0)] + 2.0 * dx[x, hl.min(2 * y, fh - 1)]
                    + dx[x, hl.min(2 * y + 1, fh - 1)]) * 0.25
        down.append(dy)
    up = down[-1]
    for j in range(levels - 2, -1, -1):
        ch, cw = shapes[j + 1]
        ux, uy, it = (hl.Func(f"{n}{j}") for n in ("upx", "upy", "interp"))
        F[f"upx{j}"], F[f"upy{j}"], F[f"interp{j}"] = ux, uy, it
        ux[x, y] = (up[hl.min(x / 2, cw - 1), y] + up[hl.min((x + 1) / 2, cw - 1), y]) * 0.5
        uy[x, y] = (ux[x, hl.min(y / 2, ch - 1)] + ux[x, hl.min((y + 1) / 2, ch - 1)]) * 0.5
        it[x, y] = down[j][x, y] * 0.5 + uy[x, y] * 0.5
        up = it
    _estimate(up, shape)

    def hand():   # Halide's interpolate CPU schedule: every level at the root, rows in parallel, vectorized
        for j in range(1, levels):
            F[f"down{j}"].compute_root().parallel(y, 8).vectorize(x, 8)
        for j in range(levels - 1):
            F[f"interp{j}"].compute_root().parallel(y, 8).vectorize(x, 8)
    return up, F, [p], hand


APPS = {"bilateral_grid": bilateral_grid, "camera_pipe": camera_pipe, "harris": harris, "unsharp": unsharp,
        "nl_means": nl_means, "local_laplacian": local_laplacian, "interpolate": interpolate}
"""Each app's builder: ``(hl, input shape) -> (output Func, Funcs by name, [ImageParam], hand)``."""
