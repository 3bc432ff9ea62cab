"""Multi-scale interpolation (Halide's ``interpolate`` app) declared with ``compute``, no schedule.

:func:`interpolate` builds a Gaussian-like pyramid of a 2-D image (``[1 2 1] / 4`` along x, then y, at
half resolution, ``levels - 1`` times), then climbs back: each level is upsampled (the mean of the two
nearest coarser samples, ``x // 2`` and ``(x + 1) // 2``, along x then y) and averaged with the level of
the same size. Level ``l`` has ``max(h >> l, 1) x max(w >> l, 1)`` points; indices are clamped at the
borders, so any size and depth work. Five stages per level (``downx``, ``down``, ``upx``, ``upy``,
``interp``): a 10-level pyramid is a 46-stage pipeline, the shape of workload the automatic scheduler
must handle in polynomial time. This module declares; it schedules nothing.
"""
from __future__ import annotations

from tesched.te.functions import maximum, minimum
from tesched.te.tensor import Tensor, compute


def level_shapes(h: int, w: int, levels: int) -> list[tuple[int, int]]:
    """The shape of every level, finest first."""
    return [(max(h >> k, 1), max(w >> k, 1)) for k in range(levels)]


def interpolate(image: Tensor, levels: int) -> Tensor:
    """The interpolated image (same shape as ``image``) through a pyramid of ``levels`` levels.

    Parameters
    ----------
    image : Tensor
        A 2-D floating tensor of constant shape.
    levels : int
        Number of levels, at least 1 (1: the image itself, copied).

    Example
    -------
    >>> A = ts.placeholder((64, 64), name="A")
    >>> out = interpolate(A, 5)
    >>> s = ts.auto_schedule(out)
    """
    if image.ndim != 2 or not all(isinstance(d, int) for d in image.shape):
        raise ValueError(f"interpolate: {image.name} must be 2-D with constant sizes, got shape {image.shape}")
    if levels < 1:
        raise ValueError(f"interpolate: levels must be at least 1, got {levels}")
    h, w = (int(d) for d in image.shape)
    shapes = level_shapes(h, w, levels)
    down = [image]
    for k in range(1, levels):
        down.append(_downsample(down[-1], shapes[k - 1], shapes[k], k))
    up = down[-1]
    for k in range(levels - 2, -1, -1):
        up = _upsample_and_blend(up, down[k], shapes[k + 1], shapes[k], k)
    if levels == 1:
        return compute(shapes[0], lambda y, x: image[y, x] * 1.0, name="interp0")
    return up


def _downsample(p: Tensor, fine: tuple[int, int], coarse: tuple[int, int], k: int) -> Tensor:
    (fh, fw), (ch, cw) = fine, coarse
    dx = compute((fh, cw), lambda y, x: (p[y, maximum(2 * x - 1, 0)] + 2.0 * p[y, minimum(2 * x, fw - 1)]
                                         + p[y, minimum(2 * x + 1, fw - 1)]) * 0.25, name=f"downx{k}")
    return compute((ch, cw), lambda y, x: (dx[maximum(2 * y - 1, 0), x] + 2.0 * dx[minimum(2 * y, fh - 1), x]
                                           + dx[minimum(2 * y + 1, fh - 1), x]) * 0.25, name=f"down{k}")


def _upsample_and_blend(coarse_level: Tensor, same: Tensor, coarse: tuple[int, int], fine: tuple[int, int],
                        k: int) -> Tensor:
    (ch, cw), (fh, fw) = coarse, fine
    c = coarse_level
    ux = compute((ch, fw), lambda y, x: (c[y, minimum(x // 2, cw - 1)] + c[y, minimum((x + 1) // 2, cw - 1)]) * 0.5,
                 name=f"upx{k}")
    uy = compute((fh, fw), lambda y, x: (ux[minimum(y // 2, ch - 1), x] + ux[minimum((y + 1) // 2, ch - 1), x]) * 0.5,
                 name=f"upy{k}")
    return compute((fh, fw), lambda y, x: same[y, x] * 0.5 + uy[y, x] * 0.5, name=f"interp{k}")
