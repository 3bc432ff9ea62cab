"""The bilateral grid (Chen, Paris and Durand; Halide's ``bilateral_grid`` app) on a gray image, declared
with ``compute`` and ``scatter``, no schedule.

:func:`bilateral_grid` builds a coarse 3-D grid of cells ``s_sigma x s_sigma`` pixels wide and ``r_sigma``
deep in intensity: each cell's pixels (read through a repeat-edge border, the cell centred on its grid
point) are scattered into the intensity bin ``int32(clamp(v, 0, 1) / r_sigma + 0.5)`` of their cell, two
channels per bin (the sum of the values, and their count). The grid is blurred with ``[1 4 6 4 1]``
along intensity, then x, then y, and sliced at every pixel: the two channels are trilinearly
interpolated at ``(y / s_sigma, x / s_sigma, clamp(v, 0, 1) / r_sigma)`` and divided.

Grids are stored ``(channel, z, y, x)`` (x innermost, as Halide's). Each blur shrinks the region it
needs by the 2-point halo on each side of its axis; a grid's index ``i`` along an axis with a halo of
``r`` stands for cell ``i - r``. This module declares; :mod:`tesched.recipes.app_schedules` schedules
it, and ``tests/recipes/references.py`` holds its NumPy reference.
"""
from __future__ import annotations

from tesched.recipes.filters import App
from tesched.te.functions import cast, clamp, if_then_else, lerp
from tesched.te.scatter import scatter_add
from tesched.te.tensor import compute, placeholder, reduce_axis

TAPS = (1.0, 4.0, 6.0, 4.0, 1.0)
"""The grid blur, along each of z, x and y."""


def grid_shape(h: int, w: int, s_sigma: int, r_sigma: float) -> tuple[int, int, int]:
    """``(z, y, x)`` extents of the blurred grid the slice reads: cells ``0 .. (h - 1) // s_sigma + 1`` and
    bins ``0 .. int(1 / r_sigma) + 1``."""
    return int(1.0 / r_sigma) + 2, (h - 1) // s_sigma + 2, (w - 1) // s_sigma + 2


def bilateral_grid(h: int, w: int, s_sigma: int = 8, r_sigma: float = 0.1) -> App:
    """The filtered ``(h, w)`` float32 image of a ``(h, w)`` float32 input ``input``.

    Parameters
    ----------
    h, w : int
        The image's size.
    s_sigma : int
        Spatial size of a grid cell, in pixels (even).
    r_sigma : float
        Intensity size of a grid bin (in (0, 1]).

    Example
    -------
    >>> app = bilateral_grid(64, 96)
    >>> kernel = ts.build(ts.create_schedule(app.output.op), app.args)
    """
    if h < 1 or w < 1 or s_sigma < 2 or s_sigma % 2 or not 0.0 < r_sigma <= 1.0:
        raise ValueError(f"bilateral_grid: need h, w >= 1, an even s_sigma >= 2 and 0 < r_sigma <= 1, got "
                         f"h={h}, w={w}, s_sigma={s_sigma}, r_sigma={r_sigma}")
    img = placeholder((h, w), name="input")
    nz, gy, gx = grid_shape(h, w, s_sigma, r_sigma)
    inv_r = 1.0 / r_sigma
    half = s_sigma // 2
    # the histogram: halo 2 along z, y and x; cell c (index c + 2) holds pixels c * s - s / 2 .. + s - 1
    cy, cx = reduce_axis((0, gy + 4), name="cy"), reduce_axis((0, gx + 4), name="cx")
    ry, rx = reduce_axis((0, s_sigma), name="ry"), reduce_axis((0, s_sigma), name="rx")
    ch = reduce_axis((0, 2), name="ch")
    val = clamp(img[clamp((cy - 2) * s_sigma + ry - half, 0, h - 1),
                    clamp((cx - 2) * s_sigma + rx - half, 0, w - 1)], 0.0, 1.0)
    zi = cast("int32", val * inv_r + 0.5)
    hist = scatter_add((2, nz + 4, gy + 4, gx + 4), (ch, zi + 2, cy, cx), if_then_else(ch == 0, val, 1.0),
                       [cy, cx, ry, rx, ch], name="histogram")
    blurz = compute((2, nz, gy + 4, gx + 4), lambda c, z, y, x: sum(
        t * hist[c, z + i, y, x] for i, t in enumerate(TAPS)), name="blurz")
    blurx = compute((2, nz, gy + 4, gx), lambda c, z, y, x: sum(
        t * blurz[c, z, y, x + i] for i, t in enumerate(TAPS)), name="blurx")
    blury = compute((2, nz, gy, gx), lambda c, z, y, x: sum(
        t * blurx[c, z, y + i, x] for i, t in enumerate(TAPS)), name="blury")

    def interpolated(c, y, x):
        zv = clamp(img[y, x], 0.0, 1.0) * inv_r
        zi = cast("int32", zv)
        zf = zv - cast("float32", zi)
        yi, xi = y // s_sigma, x // s_sigma
        yf = cast("float32", y % s_sigma) * (1.0 / s_sigma)
        xf = cast("float32", x % s_sigma) * (1.0 / s_sigma)

        def plane(z):
            return lerp(lerp(blury[c, z, yi, xi], blury[c, z, yi, xi + 1], xf),
                        lerp(blury[c, z, yi + 1, xi], blury[c, z, yi + 1, xi + 1], xf), yf)
        return lerp(plane(zi), plane(zi + 1), zf)
    out = compute((h, w), lambda y, x: interpolated(0, y, x) / interpolated(1, y, x), name="bilateral_grid")
    return App([img], out, {"histogram": hist, "blurz": blurz, "blurx": blurx, "blury": blury})


__all__ = ["TAPS", "bilateral_grid", "grid_shape"]
