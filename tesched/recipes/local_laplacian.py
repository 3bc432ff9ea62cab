"""Local Laplacian filter (Paris, Hasinoff and Kautz; Halide's ``local_laplacian`` app) on a gray image,
declared with ``compute``, no schedule.

:func:`local_laplacian` remaps the image at ``k`` intensity levels through a detail-enhancing curve (a
lookup table ``remap`` of ``alpha * f * exp(-f * f / 2)``, read at an index computed from the pixel's
float value), builds a Gaussian then a Laplacian pyramid of the ``k`` remapped images (a 3-D tensor per
level, the intensity level outermost), and a Gaussian pyramid of the input. Each level of the output's
Laplacian pyramid reads, per pixel, the two processed levels nearest the input's value there (a gather
along the intensity axis, ``int32`` of a float), and the output pyramid is collapsed. Resampling is
Halide's: ``[1 3 3 1] / 8`` down, ``[1/4 3/4]`` up, along x then y, indices clamped at the borders, so
any size and depth work. With ``levels`` pyramid levels it is ``11 * levels - 7`` stages (81 at 8): the
workload of issue "auto_schedule on real image pipelines". This module declares; it schedules nothing.
"""
from __future__ import annotations

from tesched.te.functions import cast, clamp, exp, maximum, minimum
from tesched.te.tensor import Tensor, compute

LUT_STEPS = 256
"""Entries of the remapping table per intensity level."""


def local_laplacian(image: Tensor, levels: int = 8, k: int = 8, alpha: float = 1.0, beta: float = 1.0) -> Tensor:
    """The filtered image (same shape as the 2-D float ``image``, values near [0, 1]).

    Parameters
    ----------
    image : Tensor
        A 2-D floating tensor of constant shape (a gray image).
    levels : int
        Pyramid levels, at least 2.
    k : int
        Intensity levels the image is processed at, at least 2.
    alpha, beta : float
        Detail and tone strength (Halide's ``alpha / (k - 1)`` and ``beta``).

    Example
    -------
    >>> A = ts.placeholder((64, 64), name="A")
    >>> s = ts.auto_schedule(local_laplacian(A, levels=4, k=4))
    """
    if image.ndim != 2 or not all(isinstance(d, int) for d in image.shape):
        raise ValueError(f"local_laplacian: {image.name} must be 2-D with constant sizes, got shape {image.shape}")
    if levels < 2 or k < 2:
        raise ValueError(f"local_laplacian: levels and k must be at least 2, got levels={levels}, k={k}")
    h, w = (int(d) for d in image.shape)
    shapes = [(max(h >> j, 1), max(w >> j, 1)) for j in range(levels)]
    top = (k - 1) * LUT_STEPS
    remap = compute((2 * top + 1,), lambda i: _curve((cast("float32", i) - float(top)) / float(LUT_STEPS), alpha),
                    name="remap")

    def processed(t, y, x):
        g = image[y, x]
        level = cast("float32", t) * (1.0 / (k - 1))
        idx = clamp(cast("int32", g * float(top)), 0, top)
        return beta * (g - level) + level + remap[idx - LUT_STEPS * t + top]

    g_pyr = [compute((k, h, w), processed, name="gpyr0")]
    in_pyr = [image]
    for j in range(1, levels):
        g_pyr.append(_down(g_pyr[-1], shapes[j], f"gpyr{j}"))
        in_pyr.append(_down(in_pyr[-1], shapes[j], f"inpyr{j}"))
    out = None
    for j in range(levels - 1, -1, -1):
        lap = g_pyr[j] if j == levels - 1 else _laplacian(g_pyr[j], g_pyr[j + 1], shapes[j], j)
        band = _slice(lap, in_pyr[j], shapes[j], k, j)
        out = band if out is None else _collapse(out, band, shapes[j], j)
    assert out is not None
    return out


def _curve(f, alpha: float):
    return alpha * f * exp(f * f * -0.5)


def _down(p: Tensor, coarse: tuple[int, int], name: str) -> Tensor:
    """``p`` at half resolution along its last two axes: ``[1 3 3 1] / 8`` along x, then y."""
    lead = tuple(int(d) for d in p.shape[:-2])
    fh, fw = (int(d) for d in p.shape[-2:])
    ch, cw = coarse

    def along_x(*i):
        *t, y, x = i
        return (p[(*t, y, maximum(2 * x - 1, 0))] + 3.0 * p[(*t, y, minimum(2 * x, fw - 1))]
                + 3.0 * p[(*t, y, minimum(2 * x + 1, fw - 1))] + p[(*t, y, minimum(2 * x + 2, fw - 1))]) * 0.125
    dx = compute(lead + (fh, cw), along_x, name=f"{name}x")

    def along_y(*i):
        *t, y, x = i
        return (dx[(*t, maximum(2 * y - 1, 0), x)] + 3.0 * dx[(*t, minimum(2 * y, fh - 1), x)]
                + 3.0 * dx[(*t, minimum(2 * y + 1, fh - 1), x)] + dx[(*t, minimum(2 * y + 2, fh - 1), x)]) * 0.125
    return compute(lead + (ch, cw), along_y, name=name)


def _up(p: Tensor, fine: tuple[int, int], name: str) -> Tensor:
    """``p`` at the resolution ``fine`` along its last two axes: ``[1/4 3/4]`` along x, then y (each fine
    sample is 3/4 of its coarse one and 1/4 of the coarse neighbour on its side)."""
    lead = tuple(int(d) for d in p.shape[:-2])
    ch, cw = (int(d) for d in p.shape[-2:])
    fh, fw = fine

    def along_x(*i):
        *t, y, x = i
        return (0.25 * p[(*t, y, clamp(x // 2 - 1 + 2 * (x % 2), 0, cw - 1))]
                + 0.75 * p[(*t, y, minimum(x // 2, cw - 1))])
    ux = compute(lead + (ch, fw), along_x, name=f"{name}x")

    def along_y(*i):
        *t, y, x = i
        return (0.25 * ux[(*t, clamp(y // 2 - 1 + 2 * (y % 2), 0, ch - 1), x)]
                + 0.75 * ux[(*t, minimum(y // 2, ch - 1), x)])
    return compute(lead + (fh, fw), along_y, name=name)


def _laplacian(fine: Tensor, coarse: Tensor, shape: tuple[int, int], j: int) -> Tensor:
    up = _up(coarse, shape, f"gup{j}")
    return compute(tuple(int(d) for d in fine.shape), lambda t, y, x: fine[t, y, x] - up[t, y, x], name=f"lpyr{j}")


def _slice(lap: Tensor, gray: Tensor, shape: tuple[int, int], k: int, j: int) -> Tensor:
    """Per pixel, ``lap`` interpolated between the two intensity levels nearest ``gray`` there."""
    def at(y, x):
        level = gray[y, x] * float(k - 1)
        li = clamp(cast("int32", level), 0, k - 2)
        lf = level - cast("float32", li)
        return (1.0 - lf) * lap[li, y, x] + lf * lap[li + 1, y, x]
    return compute(shape, at, name=f"outlpyr{j}")


def _collapse(coarse: Tensor, band: Tensor, shape: tuple[int, int], j: int) -> Tensor:
    up = _up(coarse, shape, f"outup{j}")
    return compute(shape, lambda y, x: up[y, x] + band[y, x], name=f"outgpyr{j}")
