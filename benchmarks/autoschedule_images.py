"""Image pipelines with pyramids, gathers and scatters for ``benchmarks/autoschedule.py``
(``tesched.recipes.pyramid``, ``tesched.recipes.local_laplacian`` and ``tesched.recipes.image_apps``): a
10-level interpolation pyramid, an 8-level local Laplacian filter, a tone curve through a ``pow`` lookup
table, a bilateral-grid slice, a weighted histogram and histogram equalization, at 1536x2048. No Halide
definitions (those variants are skipped).
"""
from __future__ import annotations

import numpy as np

import tesched as ts
from autoschedule_pipelines import Pipeline
from tesched.recipes import image_apps
from tesched.recipes.local_laplacian import local_laplacian
from tesched.recipes.pyramid import interpolate

H, W = 1536, 2048


def _image(rng, h=H, w=W):
    return rng.uniform(-0.2, 1.2, (h, w)).astype(np.float32)


def pyramid(levels=10):
    A = ts.placeholder((H, W), name="A")
    arrays = [np.random.default_rng(0).uniform(0, 1, (H, W)).astype(np.float32)]
    return Pipeline(f"interpolate, {levels}-level pyramid {H}x{W}", [A], [interpolate(A, levels)], arrays, None)


def laplacian(levels=8):
    A = ts.placeholder((H, W), name="A")
    arrays = [np.random.default_rng(4).uniform(0, 1, (H, W)).astype(np.float32)]
    return Pipeline(f"local Laplacian, {levels} levels {H}x{W}", [A], [local_laplacian(A, levels)], arrays, None,
                    tolerance=1e-3)


def curve():
    inputs, out = image_apps.tone_curve(H, W)
    return Pipeline(f"tone curve (pow LUT gather) {H}x{W}", inputs, [out], [_image(np.random.default_rng(1))],
                    None, tolerance=3e-3)       # a few pixels at a rounding tie pick the next entry


def bilateral():
    inputs, out = image_apps.bilateral_slice(H, W)
    rng = np.random.default_rng(2)
    grid = rng.uniform(0, 1, [int(d) for d in inputs[1].shape]).astype(np.float32)
    return Pipeline(f"bilateral-grid slice {H}x{W}", inputs, [out], [_image(rng), grid], None)


def histogram(bins=256):
    inputs, out = image_apps.histogram(H, W, bins)
    return Pipeline(f"weighted histogram (scatter) {H}x{W}, {bins} bins", inputs, [out],
                    [_image(np.random.default_rng(3))], None, tolerance=1e-2)


def equalize(bins=256):
    inputs, out = image_apps.equalize(H, W, bins)
    return Pipeline(f"histogram equalization {H}x{W}, {bins} bins", inputs, [out], [_image(np.random.default_rng(5))],
                    None, tolerance=1e-4)


IMAGE_PIPELINES = {"pyramid": pyramid, "laplacian": laplacian, "curve": curve, "bilateral": bilateral,
                   "imhist": histogram, "equalize": equalize}
