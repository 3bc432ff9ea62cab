"""Tests of tesched.te.extern: declaring calls of the user's C functions, and the errors for a name, a
result dtype or a source that cannot be right."""
import pytest

import tesched as ts
from tesched.te.extern import RESULT_TYPES, ExternCall

SOURCE = "static inline float twice(float x) { return 2.0f * x; }"


def test_a_call_is_an_expression_of_its_result_dtype():
    A = ts.placeholder((4,), name="A")
    call = ts.call_pure_extern("float64", "twice", A[0] + 1.0, 3, source=SOURCE)
    assert isinstance(call, ExternCall) and call.dtype == "float64" and call.source == SOURCE
    assert [a.dtype for a in call.args] == ["float32", "int32"]
    again = call.with_children(call.args[::-1])      # rewrites keep the source
    assert isinstance(again, ExternCall) and again.source == SOURCE and again.args == call.args[::-1]
    assert (call * 2).dtype == "float64"


@pytest.mark.parametrize("dtype, name, source, error, words", [
    ("float32", "not an identifier", None, ValueError, "must be a C identifier"),
    ("float32", "exp", None, ValueError, "exp is a name of tesched's own functions"),
    ("float32", "ts_helper", None, ValueError, "ts_helper is a name of tesched's own functions"),
    ("float16", "twice", SOURCE, TypeError, "a C function cannot return float16"),
    ("float32", "twice", 42, TypeError, "source must be C text"),
    ("float32", "thrice", SOURCE, ValueError, "its source does not define thrice"),
])
def test_bad_declarations_name_the_function(dtype, name, source, error, words):
    with pytest.raises(error, match=words):
        ts.call_pure_extern(dtype, name, 1.0, source=source)


def test_result_types_have_c_types():
    from tesched.te import dtype as dt
    assert all(dt.info(d).value_c_type for d in RESULT_TYPES)
