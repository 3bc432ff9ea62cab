"""Image pipelines with data-dependent reads, declared with ``compute`` (no schedule): a tone curve through
a lookup table computed with ``pow``, a bilateral-grid-like slice, a weighted histogram (a scatter), and
histogram equalization (a scatter, a cumulative sum, and a gather of it at every pixel's bin).

They are the shapes of Halide's camera-pipe curve, bilateral grid and histogram stages, small enough to
declare in a few lines, and exercise what a scheduler must do with gathers (a table or grid read at an
index computed from a pixel), float-to-int index conversions (``int32(clamp(v, 0, 1) * k + 0.5)``) and
scatters. Each function returns ``(inputs, output)``. This module declares; it schedules nothing.
"""
from __future__ import annotations

from tesched.te.expr import power
from tesched.te.functions import cast, clamp, if_then_else, maximum, minimum
from tesched.te.functions import sum as sum_
from tesched.te.scatter import scatter_add
from tesched.te.tensor import Tensor, compute, placeholder, reduce_axis


def tone_curve(h: int, w: int) -> tuple[list[Tensor], Tensor]:
    """``toned[y, x] = curve[int32(clamp(0.8 * img + 0.1, 0, 1) * 255 + 0.5)]`` with the 256-entry table
    ``curve[i] = (i / 255) ** (1 / 2.2)``."""
    img = placeholder((h, w), name="img")
    curve = compute((256,), lambda i: power(cast("float32", i) / 255.0, 1.0 / 2.2), name="curve")
    gray = compute((h, w), lambda y, x: img[y, x] * 0.8 + 0.1, name="gray")
    out = compute((h, w), lambda y, x: curve[cast("int32", clamp(gray[y, x], 0.0, 1.0) * 255.0 + 0.5)],
                  name="toned")
    return [img], out


def bilateral_slice(h: int, w: int, cell: int = 8, depth: int = 8) -> tuple[list[Tensor], Tensor]:
    """A ``(h // cell + 1) x (w // cell + 1) x depth`` grid blurred ([1 2 1]) along its intensity axis and
    along x, then sliced per pixel at its cell and at intensity ``clamp(img, 0, 1) * (depth - 1)``,
    interpolated linearly between the two nearest levels."""
    img = placeholder((h, w), name="img")
    gh, gw = h // cell + 1, w // cell + 1
    grid = placeholder((gh, gw, depth), name="grid")
    bz = compute((gh, gw, depth), lambda y, x, z: grid[y, x, maximum(z - 1, 0)] + 2.0 * grid[y, x, z]
                 + grid[y, x, minimum(z + 1, depth - 1)], name="blurz")
    bx = compute((gh, gw, depth), lambda y, x, z: bz[y, maximum(x - 1, 0), z] + 2.0 * bz[y, x, z]
                 + bz[y, minimum(x + 1, gw - 1), z], name="blurx")

    def slice_(y, x):
        v = clamp(img[y, x], 0.0, 1.0) * float(depth - 1)
        zi = cast("int32", v)
        zf = v - cast("float32", zi)
        return bx[y // cell, x // cell, zi] * (1.0 - zf) + bx[y // cell, x // cell, minimum(zi + 1, depth - 1)] * zf
    return [img, grid], compute((h, w), slice_, name="slice")


def histogram(h: int, w: int, bins: int) -> tuple[list[Tensor], Tensor]:
    """The sum of the pixels of ``img`` in each of ``bins`` bins of ``int32(clamp(img, 0, 1) * (bins - 1) +
    0.5)`` (a scatter)."""
    img = placeholder((h, w), name="img")
    b = compute((h, w), lambda y, x: cast("int32", clamp(img[y, x], 0.0, 1.0) * float(bins - 1) + 0.5), name="bin")
    ry, rx = reduce_axis((0, h), name="ry"), reduce_axis((0, w), name="rx")
    return [img], scatter_add((bins,), b[ry, rx], img[ry, rx], [ry, rx], name="hist")


def equalize(h: int, w: int, bins: int) -> tuple[list[Tensor], Tensor]:
    """Histogram equalization: ``out[y, x] = cdf[bin[y, x]] / (h * w)``, with ``bin = int32(clamp(img, 0, 1) *
    (bins - 1) + 0.5)``, ``hist`` the count of each bin (a scatter) and ``cdf`` its cumulative sum."""
    img = placeholder((h, w), name="img")
    b = compute((h, w), lambda y, x: cast("int32", clamp(img[y, x], 0.0, 1.0) * float(bins - 1) + 0.5), name="bin")
    ones = compute((h, w), lambda y, x: cast("float32", b[y, x] >= 0), name="ones")
    ry, rx = reduce_axis((0, h), name="ry"), reduce_axis((0, w), name="rx")
    hist = scatter_add((bins,), b[ry, rx], ones[ry, rx], [ry, rx], name="hist")
    k = reduce_axis((0, bins), name="k")
    cdf = compute((bins,), lambda i: sum_(if_then_else(k <= i, hist[k], 0.0), axis=k), name="cdf")
    return [img], compute((h, w), lambda y, x: cdf[b[y, x]] * (1.0 / (h * w)), name="equalized")
