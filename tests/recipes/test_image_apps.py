"""Tests of tesched.recipes.image_apps: each pipeline, unscheduled, computes its NumPy reference."""
import numpy as np

import tesched as ts
from tesched.recipes import image_apps
from tests.autoschedule.helpers import bilateral_slice, lut_curve


def test_tone_curve_and_bilateral_slice_match_numpy():
    rng = np.random.default_rng(4)
    inputs, outputs, reference = lut_curve(6, 10)
    gray = (np.arange(60, dtype=np.float64).reshape(6, 10) * 4.0 - 20.25) / 255.0     # away from .5 ties
    img = ((gray - 0.1) / 0.8).astype(np.float32)
    f = ts.build(ts.create_schedule(outputs[0].op), inputs + outputs)
    np.testing.assert_allclose(f(img), reference(img), rtol=1e-5, atol=1e-6)
    inputs, outputs, reference = bilateral_slice(20, 12, cell=4, depth=5)
    arrays = [rng.uniform(-0.2, 1.2, (20, 12)).astype(np.float32), rng.uniform(0, 1, (6, 4, 5)).astype(np.float32)]
    f = ts.build(ts.create_schedule(outputs[0].op), inputs + outputs)
    np.testing.assert_allclose(f(*arrays), reference(*arrays), rtol=1e-5, atol=1e-5)


def test_histogram_matches_numpy():
    (img,), hist = image_apps.histogram(9, 7, 5)
    a = np.random.default_rng(5).uniform(-0.1, 1.1, (9, 7)).astype(np.float32)
    index = (np.clip(a, 0, 1) * np.float32(4) + np.float32(0.5)).astype(np.int32)
    got = ts.build(ts.create_schedule(hist.op), [img, hist])(a)
    np.testing.assert_allclose(got, np.bincount(index.ravel(), weights=a.ravel(), minlength=5), rtol=1e-5, atol=1e-6)


def test_equalize_matches_numpy():
    (img,), out = image_apps.equalize(9, 7, 6)
    a = np.random.default_rng(6).uniform(-0.1, 1.1, (9, 7)).astype(np.float32)
    index = (np.clip(a, 0, 1) * np.float32(5) + np.float32(0.5)).astype(np.int32)
    cdf = np.cumsum(np.bincount(index.ravel(), minlength=6))
    got = ts.build(ts.create_schedule(out.op), [img, out])(a)
    np.testing.assert_allclose(got, cdf[index] / 63.0, rtol=1e-6)
