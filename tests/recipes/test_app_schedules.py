"""Tests of tesched.recipes.app_schedules: every app of Halide's (bilateral grid, camera pipeline, Harris,
unsharp mask, non-local means, local Laplacian, interpolation) computes its NumPy reference unscheduled,
with its hand schedule and with ``auto_schedule``, at small sizes (the builds of a minute or more are
marked slow); the hand schedules place stages as Halide's published schedules do."""
import numpy as np
import pytest

import tesched as ts
from tesched.recipes import app_schedules
from tests.recipes.apps import APPS, case

SIZES = {"local_laplacian": (24, 40), "interpolate": (24, 40), "camera_pipe": (16, 36)}
SLOW = {("camera_pipe", "hand"), ("local_laplacian", "none"), ("local_laplacian", "auto"),
        ("local_laplacian", "hand")}
"""Builds of a minute or more (the unscheduled local Laplacian is also in test_local_laplacian.py)."""
VARIANTS = {"none": lambda c: ts.create_schedule(c.output.op), "hand": lambda c: c.hand(),
            "auto": lambda c: ts.auto_schedule(c.output)}
_CASES: dict = {}


@pytest.mark.parametrize("name, variant", [
    pytest.param(a, v, marks=[pytest.mark.slow] if (a, v) in SLOW else []) for a in APPS for v in VARIANTS])
def test_every_variant_matches_numpy(name, variant):
    if name not in _CASES:      # one declaration and reference per app, for its three variants
        _CASES[name] = case(name, *SIZES.get(name, (20, 36)))
    c = _CASES[name]
    got = ts.build(VARIANTS[variant](c), c.args)(*c.arrays)
    if c.expected.dtype == np.uint8:
        np.testing.assert_array_equal(got, c.expected)
    else:
        np.testing.assert_allclose(got, c.expected, rtol=c.rtol, atol=c.atol)


def test_stages_of_names_every_computed_stage():
    c = case("harris", 8, 8)
    names = set(app_schedules.stages_of(c.output))
    assert names == {"gray", "Ix", "Iy", "Ixx", "Iyy", "Ixy", "Sxx", "Syy", "Sxy", "harris"}


def test_hand_schedules_slide_windows_and_run_strips_in_parallel():
    c = case("unsharp", 40, 36)
    text = str(ts.lower(c.hand(), c.args))
    assert "parallel for y.outer" in text
    # gray, blur_y and ratio are stored per strip and computed per row: allocated inside the parallel loop
    for name in ("gray", "blur_y", "ratio"):
        assert text.index("parallel for y.outer") < text.index(f"allocate {name}[")
    assert "allocate blur_x[" not in text and "allocate sharpen[" not in text    # inlined


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=ts.ScheduleError,
                   reason="the sliding window of g_r (half resolution) under the sliding window of curved, which "
                          "reads it through the inlined demosaic's (y - 1) // 2, is computed a row short: the "
                          "dependence check refuses the schedule Halide's camera_pipe uses")
def test_camera_pipe_half_resolution_windows_as_halide_slides_them():
    c = case("camera_pipe", 16, 36)
    st = app_schedules.stages_of(c.output)
    s = ts.create_schedule(c.output.op)
    _, y, _ = c.output.op.axis
    yo, yr = s[c.output].split(y, 8)
    yi, _ = s[c.output].split(yr, 2)
    for name in ("demosaiced", "corrected", "unsharp_y", "unsharp"):
        s[st[name]].compute_inline()
    for name in ("curved", "g_r", "g_b"):
        s[st[name]].compute_at(s[c.output], yi)
        s[st[name]].store_at(s[c.output], yo)
    np.testing.assert_array_equal(ts.build(s, c.args)(*c.arrays), c.expected)
