"""Tests of tesched.recipes.filters (Harris, unsharp mask, non-local means): what they declare and what
they refuse; every variant's results are in test_app_schedules.py."""
import pytest

import tesched as ts

from tesched.recipes import filters


def _regions(app):
    """The inferred region of every stage, as the lowered text prints it."""
    text = str(ts.lower(ts.create_schedule(app.output.op), app.args))
    return {line.split(":")[0][2:]: line.split(": ", 2)[2] for line in text.splitlines()
            if "region inferred" in line}


def test_stages_compute_the_halo_their_readers_need():
    """Only the outputs have shapes; each intermediate covers what its readers read (Halide's regions)."""
    regions = _regions(filters.unsharp(10, 12))
    assert regions["gray"] == "y in [-3, 13), x in [-3, 15)"
    assert regions["blur_y"] == "y in [0, 10), x in [-3, 15)" and regions["ratio"] == "y in [0, 10), x in [0, 12)"
    nlm = _regions(filters.nl_means(10, 12, patch=5, search=3))
    assert nlm["d"] == "dy in [0, 3), dx in [0, 3), y in [-2, 12), x in [-2, 14)"
    assert nlm["nlm_sum"] == "c in [0, 4), y in [0, 10), x in [0, 12)"
    assert nlm["clamped"] == "c in [0, 3), y in [-3, 13), x in [-3, 15)"
    harris = _regions(filters.harris(10, 12))
    assert harris["Ix"] == "y in [-1, 11), x in [-1, 13)" and harris["gray"] == "y in [-2, 12), x in [-2, 14)"


def test_gaussian_taps_sum_to_one_over_the_window():
    t = filters.gaussian_taps(1.5, radius=8)
    assert t[0] + 2 * sum(t[1:]) == pytest.approx(1.0, abs=1e-6)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="input: the image must be at least 1x1, got 0x4"):
        filters.harris(0, 4)
    with pytest.raises(ValueError, match="patch and search must be odd and positive, got patch=4, search=7"):
        filters.nl_means(8, 8, patch=4)
