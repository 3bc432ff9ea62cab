"""Tests of tesched.recipes.bilateral_grid: the grids' inferred regions and halos, and what it refuses; every
variant's results are in test_app_schedules.py."""
import pytest

import tesched as ts

from tesched.recipes.bilateral_grid import bilateral_grid, grid_shape


def test_grid_covers_every_cell_and_bin_the_slice_reads():
    """Bounds inference sizes the grids as grid_shape says, the blurs' halos and the histogram's bins on top."""
    assert grid_shape(20, 36, 8, 0.1) == (12, 4, 6)       # bins 0 .. 11, cells 0 .. 3 and 0 .. 5
    app = bilateral_grid(20, 36)
    text = str(ts.lower(ts.create_schedule(app.output.op), app.args))
    regions = {line.split(":")[0][2:]: line.split(": ", 2)[2] for line in text.splitlines() if "region inferred" in line}
    assert regions["blury"] == "c in [0, 2), z in [0, 12), y in [0, 4), x in [0, 6)"
    assert regions["blurz"] == "c in [0, 2), z in [0, 12), y in [-2, 6), x in [-2, 8)"
    # the blur along z reads bins -2 .. 13, the update writes bins 0 .. 10: the histogram covers both
    assert regions["histogram"] == "c in [0, 2), z in [-2, 14), y in [-2, 6), x in [-2, 8)"
    assert app.output.shape == (20, 36)


@pytest.mark.parametrize("kwargs", [{"s_sigma": 3}, {"r_sigma": 0.0}, {"h": 0}])
def test_bad_parameters_are_refused(kwargs):
    args = {"h": 8, "w": 8, **kwargs}
    with pytest.raises(ValueError, match="bilateral_grid: need h, w >= 1, an even s_sigma"):
        bilateral_grid(**args)
