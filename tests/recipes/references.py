"""NumPy references of Halide's applications as :mod:`tesched.recipes` declares them (the bilateral grid,
the camera pipeline, Harris, the unsharp mask, non-local means), used by the tests and by
``benchmarks/halide_apps.py``. Written from the algorithms, independently of the declarations: whole
arrays, edge padding instead of index arithmetic."""
from __future__ import annotations

import numpy as np

from tesched.recipes import camera_pipe as cp
from tesched.recipes.bilateral_grid import TAPS, grid_shape
from tesched.recipes.filters import GRAY, gaussian_taps


def _gray(img: np.ndarray, halo: int) -> np.ndarray:
    padded = np.pad(img.astype(np.float64), ((0, 0), (halo, halo), (halo, halo)), mode="edge")
    return np.tensordot(np.asarray(GRAY), padded, axes=1)


def harris(img: np.ndarray, k: float = 0.04) -> np.ndarray:
    """Harris response of a ``(3, h, w)`` image (float64)."""
    _, h, w = img.shape
    g = _gray(img, 2)
    sobel = np.array([1.0, 2.0, 1.0]) / 12
    ix = sum(sobel[d] * (g[d:d + h + 2, 2:w + 4] - g[d:d + h + 2, 0:w + 2]) for d in range(3))
    iy = sum(sobel[d] * (g[2:h + 4, d:d + w + 2] - g[0:h + 2, d:d + w + 2]) for d in range(3))

    def box(p):
        return sum(p[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3))
    sxx, syy, sxy = box(ix * ix), box(iy * iy), box(ix * iy)
    return sxx * syy - sxy * sxy - k * (sxx + syy) ** 2


def unsharp(img: np.ndarray, sigma: float = 1.5) -> np.ndarray:
    """Unsharp mask of a ``(3, h, w)`` image (float64)."""
    _, h, w = img.shape
    t = gaussian_taps(sigma)
    g = _gray(img, 3)
    weights = [t[abs(i - 3)] for i in range(7)]
    by = sum(weights[i] * g[i:i + h, :] for i in range(7))
    bx = sum(weights[i] * by[:, i:i + w] for i in range(7))
    gray = g[3:3 + h, 3:3 + w]
    return (2 * gray - bx) / gray * img.astype(np.float64)


def nl_means(img: np.ndarray, patch: int = 7, search: int = 7, sigma: float = 0.12) -> np.ndarray:
    """Non-local means of a ``(3, h, w)`` image (float64)."""
    _, h, w = img.shape
    p, s = patch // 2, search // 2
    m = p + s
    padded = np.pad(img.astype(np.float64), ((0, 0), (m, m), (m, m)), mode="edge")
    num, den = np.zeros((3, h, w)), np.zeros((h, w))
    for dy in range(-s, s + 1):
        for dx in range(-s, s + 1):
            here = padded[:, s:s + h + 2 * p, s:s + w + 2 * p]
            there = padded[:, s + dy:s + dy + h + 2 * p, s + dx:s + dx + w + 2 * p]
            d = ((here - there) ** 2).sum(axis=0)
            patch_sum = sum(d[r:r + h, c:c + w] for r in range(patch) for c in range(patch))
            weight = np.exp(-patch_sum / (sigma * sigma * patch * patch))
            num += weight * padded[:, m + dy:m + dy + h, m + dx:m + dx + w]
            den += weight
    return np.clip(num / den, 0, 1)


def bilateral_grid(img: np.ndarray, s_sigma: int = 8, r_sigma: float = 0.1) -> np.ndarray:
    """The bilateral grid of a ``(h, w)`` float32 image (float64 sums)."""
    h, w = img.shape
    nz, gy, gx = grid_shape(h, w, s_sigma, r_sigma)
    inv_r = np.float32(1.0 / r_sigma)
    half = s_sigma // 2
    grid = np.zeros((2, nz + 4, gy + 4, gx + 4))
    ys = np.clip((np.arange(gy + 4) - 2)[:, None] * s_sigma + np.arange(s_sigma)[None] - half, 0, h - 1)
    xs = np.clip((np.arange(gx + 4) - 2)[:, None] * s_sigma + np.arange(s_sigma)[None] - half, 0, w - 1)
    val = np.clip(img[ys[:, :, None, None], xs[None, None]], 0, 1).astype(np.float32)   # (cy, ry, cx, rx)
    zi = (val * inv_r + np.float32(0.5)).astype(np.int32) + 2
    cy, cx = np.broadcast_to(np.arange(gy + 4)[:, None, None, None], val.shape), \
        np.broadcast_to(np.arange(gx + 4)[None, None, :, None], val.shape)
    np.add.at(grid[0], (zi, cy, cx), val.astype(np.float64))
    np.add.at(grid[1], (zi, cy, cx), 1.0)

    def blur(g, axis, n):
        return sum(t * np.take(g, np.arange(n) + i, axis=axis) for i, t in enumerate(TAPS))
    b = blur(blur(blur(grid, 1, nz), 3, gx), 2, gy)
    v = np.clip(img, 0, 1).astype(np.float32) * inv_r
    zi = v.astype(np.int32)
    zf = (v - zi).astype(np.float64)
    y, x = np.arange(h)[:, None], np.arange(w)[None]
    yi, xi, yf, xf = y // s_sigma, x // s_sigma, (y % s_sigma) / s_sigma, (x % s_sigma) / s_sigma

    def at(c, z):
        return ((b[c, z, yi, xi] * (1 - xf) + b[c, z, yi, xi + 1] * xf) * (1 - yf)
                + (b[c, z, yi + 1, xi] * (1 - xf) + b[c, z, yi + 1, xi + 1] * xf) * yf)
    inter = [at(c, zi) * (1 - zf) + at(c, zi + 1) * zf for c in range(2)]
    return inter[0] / inter[1]


def _avg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.int32) + b + 1) >> 1


def curve_table() -> np.ndarray:
    """The camera pipeline's 1024-entry ``uint8`` tone curve (float32 arithmetic, as the kernel)."""
    a, b, inv_range = (np.float32(v) for v in cp.curve_constants())
    i = np.arange(1024)
    xf = np.clip((i - cp.BLACK).astype(np.float32) * inv_range, 0, 1).astype(np.float32)
    g = np.power(xf, np.float32(1.0 / cp.GAMMA))
    one = np.float32(1.0)
    z = np.where(g > 0.5, one - (a * (one - g) * (one - g) + b * (one - g)), a * g * g + b * g).astype(np.float32)
    val = np.clip(z * np.float32(255.0) + np.float32(0.5), 0, 255).astype(np.uint8)
    return np.where(i <= cp.BLACK, 0, np.where(i > cp.WHITE, 255, val)).astype(np.uint8)


def camera_pipe(raw: np.ndarray, kelvin: float = 3700.0) -> np.ndarray:
    """The camera pipeline of a ``(oh + 24, ow + 32)`` ``uint16`` raw frame: ``(3, oh, ow)`` ``uint8``."""
    oh, ow = raw.shape[0] - 2 * cp.MARGIN_Y, raw.shape[1] - 2 * cp.MARGIN_X
    s = raw[cp.MARGIN_Y - 8:cp.MARGIN_Y + oh + 8, cp.MARGIN_X - 8:cp.MARGIN_X + ow + 8].astype(np.int32)  # halo 8
    n = (oh + 12, ow + 12)

    def at(dy, dx):
        return s[2 + dy:2 + dy + n[0], 2 + dx:2 + dx + n[1]]
    denoised = np.clip(at(0, 0), 0, np.maximum(np.maximum(at(0, -2), at(0, 2)), np.maximum(at(-2, 0), at(2, 0))))
    g_gr, r_r, b_b, g_gb = (denoised[py::2, px::2] for py, px in ((0, 0), (0, 1), (1, 0), (1, 1)))   # halo 3

    def sh(p, dy, dx, halo=3, k=2):     # plane p (halo ``halo``) at offsets, over a region of halo k
        hh, hw = p.shape[0] - 2 * halo, p.shape[1] - 2 * halo
        return p[halo - k + dy:halo + hh + k + dy, halo - k + dx:halo + hw + k + dx]

    def choose(d1, v1, d2, v2):
        return np.where(d1 < d2, v1, v2)
    g_r = choose(abs(sh(g_gr, 0, 1) - sh(g_gr, 0, 0)), _avg(sh(g_gr, 0, 1), sh(g_gr, 0, 0)),
                 abs(sh(g_gb, -1, 0) - sh(g_gb, 0, 0)), _avg(sh(g_gb, -1, 0), sh(g_gb, 0, 0)))
    g_b = choose(abs(sh(g_gb, 0, -1) - sh(g_gb, 0, 0)), _avg(sh(g_gb, 0, -1), sh(g_gb, 0, 0)),
                 abs(sh(g_gr, 1, 0) - sh(g_gr, 0, 0)), _avg(sh(g_gr, 1, 0), sh(g_gr, 0, 0)))
    # everything below over half-resolution sites -1 .. hh (halo 1)

    def k1(p, dy=0, dx=0, halo=3):
        return sh(p, dy, dx, halo, 1)

    def cavg(g, g1, g2, c1, c2):
        return g - _avg(g1, g2) + _avg(c1, c2)

    def diag(g, known, green, p_sites, n_sites):
        (p1, p2), (n1, n2) = p_sites, n_sites
        p = cavg(g, k1(green, *p1, 2), k1(green, *p2, 2), k1(known, *p1), k1(known, *p2))
        nn = cavg(g, k1(green, *n1, 2), k1(green, *n2, 2), k1(known, *n1), k1(known, *n2))
        return choose(abs(k1(known, *p1) - k1(known, *p2)), p, abs(k1(known, *n1) - k1(known, *n2)), nn)
    red = [[cavg(k1(g_gr), k1(g_r, 0, 0, 2), k1(g_r, 0, -1, 2), k1(r_r, 0, -1), k1(r_r)), k1(r_r)],
           [diag(k1(g_b, 0, 0, 2), r_r, g_r, ((0, 0), (1, -1)), ((0, -1), (1, 0))),
            cavg(k1(g_gb), k1(g_r, 0, 0, 2), k1(g_r, 1, 0, 2), k1(r_r), k1(r_r, 1, 0))]]
    green = [[k1(g_gr), k1(g_r, 0, 0, 2)], [k1(g_b, 0, 0, 2), k1(g_gb)]]
    blue = [[cavg(k1(g_gr), k1(g_b, 0, 0, 2), k1(g_b, -1, 0, 2), k1(b_b), k1(b_b, -1, 0)),
             diag(k1(g_r, 0, 0, 2), b_b, g_b, ((0, 0), (-1, 1)), ((0, 1), (-1, 0)))],
            [k1(b_b), cavg(k1(g_gb), k1(g_b, 0, 0, 2), k1(g_b, 0, 1, 2), k1(b_b), k1(b_b, 0, 1))]]
    hh, hw = oh // 2, ow // 2
    full = np.empty((3, 2 * hh + 4, 2 * hw + 4), np.int32)      # full-resolution coordinates -2 .. oh + 1
    for c, quad in enumerate((red, green, blue)):
        for py in range(2):
            for px in range(2):
                full[c, py::2, px::2] = quad[py][px]
    demosaiced = full[:, 1:oh + 3, 1:ow + 3]                      # halo 1
    m = cp.color_matrix(kelvin).astype(np.int32)
    corrected = (np.einsum("ck,kyx->cyx", m[:, :3], demosaiced) + m[:, 3, None, None]) >> 8
    corrected = corrected.astype(np.int16)
    curved = curve_table()[np.clip(corrected, 0, 1023)].astype(np.int32)
    uy = _avg(_avg(curved[:, :-2], curved[:, 2:]), curved[:, 1:-1])
    u = _avg(_avg(uy[:, :, :-2], uy[:, :, 2:]), uy[:, :, 1:-1])
    v = curved[:, 1:-1, 1:-1]
    strength = int(min(255, cp.SHARPEN * 32))
    return np.clip(v + (((v - u) * strength) >> 5), 0, 255).astype(np.uint8)
