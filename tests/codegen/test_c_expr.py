"""Tests of tesched.codegen.c_expr: C text of constants and expressions."""
import math

import numpy as np
import pytest

import tesched as ts
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


def test_a_gather_left_to_gcc_has_an_int32_offset(host_target):
    """A vectorized loop that stays scalar (it calls ``log``) and reads a table at a computed index: the
    offset is cast to ``int32`` for gcc's vectorizer (it gives up on 64-bit gather offsets); the values
    are NumPy's."""
    x = ts.placeholder((64,), name="x")
    lut = ts.placeholder((16,), name="lut")
    out = ts.compute((64,), lambda i: ts.log(lut[ts.clamp(ts.cast("int32", x[i] * 10.0), 0, 15)]), name="out")
    s = ts.create_schedule(out.op)
    s[out].vectorize(out.op.axis[0])
    f = ts.build(s, [x, lut, out], name="c_expr_gather_int32")
    assert "#pragma omp simd" in f.c_source and "lut[(int32_t)(" in f.c_source
    xs = np.linspace(-0.5, 2.0, 64, dtype=np.float32)
    table = np.linspace(0.5, 1.5, 16, dtype=np.float32)
    want = np.log(table[np.clip((xs * np.float32(10.0)).astype(np.int32), 0, 15)])
    np.testing.assert_allclose(f(xs, table), want, rtol=1e-6)
