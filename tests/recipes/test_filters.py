"""Tests of tesched.recipes.filters (Harris, unsharp mask, non-local means): what they declare and what
they refuse; every variant's results are in test_app_schedules.py."""
import pytest

from tesched.recipes import filters


def test_stages_carry_the_halo_their_readers_need():
    app = filters.unsharp(10, 12)
    assert app["gray"].shape == (16, 18) and app["blur_y"].shape == (10, 18) and app.output.shape == (3, 10, 12)
    nlm = filters.nl_means(10, 12, patch=5, search=3)
    assert nlm["d"].shape == (3, 3, 14, 16) and nlm["nlm_sum"].shape == (4, 10, 12)
    assert filters.harris(10, 12)["Ix"].shape == (12, 14)


def test_gaussian_taps_sum_to_one_over_the_window():
    t = filters.gaussian_taps(1.5, radius=8)
    assert t[0] + 2 * sum(t[1:]) == pytest.approx(1.0, abs=1e-6)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="input: the image must be at least 1x1, got 0x4"):
        filters.harris(0, 4)
    with pytest.raises(ValueError, match="patch and search must be odd and positive, got patch=4, search=7"):
        filters.nl_means(8, 8, patch=4)
