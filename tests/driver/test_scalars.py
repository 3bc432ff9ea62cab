"""Tests of tesched.driver.scalars: runtime parameters' values split from a call's arguments, positionally
or by keyword, converted to their dtypes, and every wrong value refused naming the parameter."""
import numpy as np
import pytest

from tesched.driver.scalars import ScalarParams, scalar_value
from tesched.te.expr import Param

GAIN, COUNT, FLAG = Param("gain", "float32"), Param("count", "uint8"), Param("flag", "bool")


def test_split_positional_keyword_and_mixed():
    params = ScalarParams("k", (GAIN, COUNT, FLAG), n_arrays=2)
    a, b = np.zeros(3), np.zeros(3)
    calls = [((a, b, 1.5, 7, True), {}), ((a, b), {"flag": True, "count": 7, "gain": 1.5}),
             ((a, 1.5, 7), {"flag": np.bool_(True)}), ((a, b, np.float64(1.5)), {"count": 7, "flag": True})]
    for args, keywords in calls:
        arrays, values = params.split(args, keywords)
        assert len(arrays) == len(args) - sum(not isinstance(x, np.ndarray) for x in args)
        assert [v.dtype for v in values] == [np.float32, np.uint8, np.bool_]
        assert [v.item() for v in values] == [1.5, 7, True]


def test_a_kernel_without_params_takes_no_keyword():
    with pytest.raises(TypeError, match=r"k: unexpected keyword argument 'gain' \(its params: none\)"):
        ScalarParams("k", (), n_arrays=1).split((np.zeros(1),), {"gain": 1.0})


@pytest.mark.parametrize("param, value, error, words", [
    (COUNT, 256, ValueError, r"param count \(uint8\): 256 does not fit in uint8 \(0 to 255\)"),
    (COUNT, -1, ValueError, r"does not fit in uint8"),
    (COUNT, 2.0, TypeError, r"param count \(uint8\): expected an integer, got float"),
    (COUNT, True, TypeError, r"expected a number, got the bool"),
    (FLAG, 1, TypeError, r"param flag \(bool\): expected a bool, got int"),
    (GAIN, None, TypeError, r"param gain \(float32\): expected a number, got NoneType"),
    (GAIN, 1j, TypeError, r"expected a number, got complex"),
    (GAIN, np.float64(1e300), ValueError, r"overflows float32"),
    (GAIN, np.zeros(2), TypeError, r"expected a number, got ndarray"),
])
def test_wrong_values_name_the_param(param, value, error, words):
    with pytest.raises(error, match=words):
        scalar_value(param, value)


def test_values_are_converted_to_the_dtype():
    assert scalar_value(GAIN, 0.1).item() == float(np.float32(0.1))
    assert scalar_value(GAIN, np.array(3)).dtype == np.float32          # a 0-d array, an integer for a float
    assert np.isinf(scalar_value(GAIN, float("inf")).item())             # infinity given is kept
    assert scalar_value(COUNT, np.int64(255)).item() == 255
