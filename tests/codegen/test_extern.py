"""Tests of tesched.codegen.extern: the user's functions a kernel calls, each once, written under a
``#line`` naming it, and two sources under one name refused."""
import pytest

import tesched as ts
from tesched.codegen.extern import extern_calls, extern_text

SOURCE = "static inline float twice(float x) {\n  return 2.0f * x;\n}"


def test_each_function_once_and_line_directives_that_name_it():
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: ts.call_pure_extern("float32", "twice", A[i], source=SOURCE)
                   + ts.call_pure_extern("float32", "twice", A[3 - i], source=SOURCE), name="B")
    C = ts.compute((4,), lambda i: ts.call_pure_extern("float64", "hypot", B[i], 1.0), name="C")
    calls = extern_calls(ts.lower(ts.create_schedule(C.op), [A, C]))
    assert [c.name for c in calls] == ["twice", "hypot"]
    text = extern_text(calls, 3, "k.c").splitlines()
    assert text == ['#line 1 "call_pure_extern twice"', *SOURCE.splitlines(), '#line 1 "call_pure_extern hypot"',
                    "static inline void ts_extern_hypot(void) { (void)&hypot; }",
                    '#line 10 "k.c"']    # the directive is line 9 of k.c


def test_two_sources_under_one_name_are_refused():
    A = ts.placeholder((4,), name="A")
    other = SOURCE.replace("2.0f", "3.0f")
    B = ts.compute((4,), lambda i: ts.call_pure_extern("float32", "twice", A[i], source=SOURCE)
                   + ts.call_pure_extern("float32", "twice", A[i], source=other), name="B")
    with pytest.raises(ts.BuildError, match="extern function twice is given two different C sources .*stage B"):
        extern_calls(ts.lower(ts.create_schedule(B.op), [A, B]))
