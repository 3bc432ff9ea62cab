"""Tests of tesched.recipes.camera_pipe: dtypes, the fixed-point colour matrix, the tone curve, and what
it refuses; every variant's results are in test_app_schedules.py."""
import numpy as np
import pytest

from tesched.recipes import camera_pipe as cp
from tests.recipes.references import curve_table


def test_dtypes_follow_the_raw_pipeline():
    app = cp.camera_pipe(8, 12)
    assert app.inputs[0].dtype == "uint16" and app.inputs[0].shape == (32, 44)
    assert app["deinterleaved"].dtype == "int16" and app["curve"].dtype == "uint8"
    assert app.output.dtype == "uint8" and app.output.shape == (3, 8, 12)


def test_color_matrix_is_q8_8_between_the_calibrations():
    # Halide's blend: the 3200 K matrix weighted by alpha, which is 0 at 3200 K and 1 at 7000 K
    for kelvin, weights in ((3200.0, cp.MATRIX_7000), (7000.0, cp.MATRIX_3200)):
        m = cp.color_matrix(kelvin)
        np.testing.assert_allclose(m, np.float32(weights) * 256, atol=1.0)
        assert m.dtype == np.int16 and m.shape == (3, 4)


def test_tone_curve_is_monotone_from_black_to_white():
    table = curve_table()
    assert table[cp.BLACK] == 0 and table[cp.WHITE] == 255 and np.all(np.diff(table.astype(int)) >= 0)


@pytest.mark.parametrize("size", [(7, 8), (8, 0)])
def test_odd_or_empty_sizes_are_refused(size):
    with pytest.raises(ValueError, match="camera_pipe: the output size must be even and at least 2x2"):
        cp.camera_pipe(*size)
