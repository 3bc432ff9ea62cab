"""Tests of tesched.recipes.bilateral_grid: the grid's shape and halos, and what it refuses; every
variant's results are in test_app_schedules.py."""
import pytest

from tesched.recipes.bilateral_grid import bilateral_grid, grid_shape


def test_grid_covers_every_cell_and_bin_the_slice_reads():
    assert grid_shape(20, 36, 8, 0.1) == (12, 4, 6)       # bins 0 .. 11, cells 0 .. 3 and 0 .. 5
    app = bilateral_grid(20, 36)
    assert app["histogram"].shape == (2, 16, 8, 10)         # a halo of 2 along z, y and x for the blurs
    assert app["blury"].shape == (2, 12, 4, 6) and app.output.shape == (20, 36)


@pytest.mark.parametrize("kwargs", [{"s_sigma": 3}, {"r_sigma": 0.0}, {"h": 0}])
def test_bad_parameters_are_refused(kwargs):
    args = {"h": 8, "w": 8, **kwargs}
    with pytest.raises(ValueError, match="bilateral_grid: need h, w >= 1, an even s_sigma"):
        bilateral_grid(**args)
