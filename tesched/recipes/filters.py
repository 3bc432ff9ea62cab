"""Three of Halide's image applications declared with ``compute``, no schedule: the Harris corner response
(``apps/harris``), the unsharp mask (``apps/unsharp``) and non-local means denoising (``apps/nl_means``).

Each takes a planar RGB image ``(3, h, w)`` (float32, channel outermost, as Halide's buffers) and reads
it through a repeat-edge boundary (indices clamped), so every output pixel is defined. As in Halide, only
the output has a shape: every intermediate is declared without one (``compute(None, ...)``), indexed in
image coordinates, and computes the region its readers read (bounds inference, when a schedule is
created: ``gray`` of the unsharp mask covers ``[-3, h + 3) x [-3, w + 3)``). The functions return a
:class:`App` (input, output and every stage by name, for schedules). This module declares;
:mod:`tesched.recipes.app_schedules` schedules, and ``tests/recipes/references.py`` holds the NumPy
references.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from tesched.te.functions import clamp, exp, if_then_else, minimum
from tesched.te.functions import sum as sum_
from tesched.te.inferred import compute
from tesched.te.tensor import Tensor, placeholder, reduce_axis

GRAY = (0.299, 0.587, 0.114)
"""Luma weights of R, G and B."""


@dataclass
class App:
    """A declared application: its input placeholders, its output and its stages by name."""

    inputs: list[Tensor]
    output: Tensor
    stages: dict[str, Tensor] = field(default_factory=dict)

    @property
    def args(self) -> list[Tensor]:
        """The kernel's arguments: the inputs, then the output."""
        return [*self.inputs, self.output]

    def __getitem__(self, name: str) -> Tensor:
        return self.stages[name]


def _rgb(h: int, w: int, name: str = "input") -> Tensor:
    if h < 1 or w < 1:
        raise ValueError(f"{name}: the image must be at least 1x1, got {h}x{w}")
    return placeholder((3, h, w), name=name)


def _gray(img: Tensor) -> Tensor:
    """Luma of ``img``, defined everywhere through a repeat-edge border."""
    _, h, w = (int(d) for d in img.shape)

    def at(y, x):
        yy, xx = clamp(y, 0, h - 1), clamp(x, 0, w - 1)
        return GRAY[0] * img[0, yy, xx] + GRAY[1] * img[1, yy, xx] + GRAY[2] * img[2, yy, xx]
    return compute(None, at, name="gray")


def harris(h: int, w: int, k: float = 0.04) -> App:
    """Harris corner response ``det(S) - k * trace(S)^2`` of the luma, ``S`` the 3x3 box sums of the
    products of its Sobel derivatives (weights ``1/12``, ``2/12``); output ``(h, w)``."""
    img = _rgb(h, w)
    gray = _gray(img)
    taps = ((-1, 1.0), (0, 2.0), (1, 1.0))

    def iy(y, x):
        return sum(wt / 12 * (gray[y + 1, x + d] - gray[y - 1, x + d]) for d, wt in taps)

    def ix(y, x):
        return sum(wt / 12 * (gray[y + d, x + 1] - gray[y + d, x - 1]) for d, wt in taps)
    Ix, Iy = compute(None, ix, name="Ix"), compute(None, iy, name="Iy")
    stages = {"gray": gray, "Ix": Ix, "Iy": Iy}
    box = {}
    for key, a, b in (("xx", Ix, Ix), ("yy", Iy, Iy), ("xy", Ix, Iy)):
        prod = compute(None, lambda y, x, a=a, b=b: a[y, x] * b[y, x], name=f"I{key}")
        box[key] = compute(None, lambda y, x, p=prod: sum(p[y + dy, x + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)),
                           name=f"S{key}")
        stages[f"I{key}"], stages[f"S{key}"] = prod, box[key]
    sxx, syy, sxy = box["xx"], box["yy"], box["xy"]

    def response(y, x):
        trace = sxx[y, x] + syy[y, x]
        return sxx[y, x] * syy[y, x] - sxy[y, x] * sxy[y, x] - k * trace * trace
    return App([img], compute((h, w), response, name="harris"), stages)


def gaussian_taps(sigma: float, radius: int = 3) -> list[float]:
    """``exp(-i^2 / (2 sigma^2)) / (sqrt(2 pi) sigma)`` for ``i = 0 .. radius`` (the unsharp mask's kernel)."""
    return [math.exp(-i * i / (2 * sigma * sigma)) / (math.sqrt(2 * math.pi) * sigma) for i in range(radius + 1)]


def unsharp(h: int, w: int, sigma: float = 1.5) -> App:
    """Unsharp mask on the luma: ``sharpen = 2 gray - blur(gray)`` (a separable 7-tap Gaussian), and
    each channel scaled by ``sharpen / gray``; output ``(3, h, w)``."""
    img = _rgb(h, w)
    taps = gaussian_taps(sigma)
    gray = _gray(img)
    blur_y = compute(None, lambda y, x: taps[0] * gray[y, x] + sum(
        taps[i] * (gray[y - i, x] + gray[y + i, x]) for i in (1, 2, 3)), name="blur_y")
    blur_x = compute(None, lambda y, x: taps[0] * blur_y[y, x] + sum(
        taps[i] * (blur_y[y, x - i] + blur_y[y, x + i]) for i in (1, 2, 3)), name="blur_x")
    sharpen = compute(None, lambda y, x: 2.0 * gray[y, x] - blur_x[y, x], name="sharpen")
    ratio = compute(None, lambda y, x: sharpen[y, x] / gray[y, x], name="ratio")
    out = compute((3, h, w), lambda c, y, x: ratio[y, x] * img[c, y, x], name="unsharp")
    return App([img], out, {"gray": gray, "blur_y": blur_y, "blur_x": blur_x, "sharpen": sharpen, "ratio": ratio})


def nl_means(h: int, w: int, patch: int = 7, search: int = 7, sigma: float = 0.12) -> App:
    """Non-local means: each pixel the mean of the pixels of a ``search x search`` window, weighted by
    ``exp(-|patch difference|^2 / (sigma^2 patch^2))`` over ``patch x patch`` patches; output ``(3, h, w)``,
    clamped to [0, 1]. The differences are 4-D stages ``(dy, dx, y, x)``, ``search^2`` planes each."""
    if patch < 1 or search < 1 or patch % 2 == 0 or search % 2 == 0:
        raise ValueError(f"nl_means: patch and search must be odd and positive, got patch={patch}, search={search}")
    img = _rgb(h, w)
    p, s = patch // 2, search // 2
    clamped = compute(None, lambda c, y, x: img[c, clamp(y, 0, h - 1), clamp(x, 0, w - 1)], name="clamped")

    def diff(dy, dx, y, x):     # the pixel (y, x) and the one at (y + dy - s, x + dx - s)
        deltas = [clamped[c, y, x] - clamped[c, y + dy - s, x + dx - s] for c in range(3)]
        return sum(t * t for t in deltas)
    d = compute(None, diff, name="d")
    ry = reduce_axis((0, patch), name="ry")
    blur_d_y = compute(None, lambda dy, dx, y, x: sum_(d[dy, dx, y + ry - p, x], axis=ry), name="blur_d_y")
    rx = reduce_axis((0, patch), name="rx")
    blur_d = compute(None, lambda dy, dx, y, x: sum_(blur_d_y[dy, dx, y, x + rx - p], axis=rx), name="blur_d")
    inv_sigma_sq = -1.0 / (sigma * sigma * patch * patch)
    weight = compute(None, lambda dy, dx, y, x: exp(blur_d[dy, dx, y, x] * inv_sigma_sq), name="w")
    sy, sx = reduce_axis((0, search), name="sy"), reduce_axis((0, search), name="sx")

    def total(c, y, x):         # channel 3 is the weight itself (an alpha of 1)
        pixel = if_then_else(c < 3, clamped[minimum(c, 2), y + sy - s, x + sx - s], 1.0)
        return sum_(weight[sy, sx, y, x] * pixel, axis=[sy, sx])
    sums = compute(None, total, name="nlm_sum")
    out = compute((3, h, w), lambda c, y, x: clamp(sums[c, y, x] / sums[3, y, x], 0.0, 1.0), name="nl_means")
    return App([img], out, {"clamped": clamped, "d": d, "blur_d_y": blur_d_y, "blur_d": blur_d, "w": weight,
                            "nlm_sum": sums})


__all__ = ["App", "GRAY", "gaussian_taps", "harris", "nl_means", "unsharp"]
