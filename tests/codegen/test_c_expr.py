"""Tests of tesched.codegen.c_expr: C text of constants and expressions."""
import math

import numpy as np
import pytest

from tesched.codegen.c_expr import c_const
from tesched.te.expr import Const


@pytest.mark.parametrize("value, dtype, text", [
    (1.5, "float32", "1.5f"), (2.0, "float64", "2.0"), (0.1, "float32", "0.10000000149011612f"),
    (math.inf, "float32", "INFINITY"), (-math.inf, "float64", "(-INFINITY)"), (math.nan, "float32", "NAN"),
    (True, "bool", "1"), (7, "int32", "7"), (-(2**31), "int32", "(-2147483647 - 1)"),
    (3 * 2**40, "int64", f"INT64_C({3 * 2**40})"),
])
def test_c_constants(value, dtype, text):
    assert c_const(Const(value, dtype)) == text


def test_narrow_constants_are_rounded_and_typed():
    assert Const(0.1, "float16").value == float(np.float16(0.1))
    assert c_const(Const(4294967295, "uint32")) == "4294967295u"
    assert c_const(Const(-128, "int8")) == "-128"
    with pytest.raises(TypeError, match="256 does not fit in uint8"):
        Const(256, "uint8")
