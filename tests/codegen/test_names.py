"""Tests of tesched.codegen.names: user names that are not C identifiers still give kernels that build, run right,
and carry no user text into the C source except as sanitized identifiers."""
import re

import numpy as np
import pytest

import tesched as ts
from tesched.codegen.names import NameTable, sanitize

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@pytest.mark.parametrize("name, expected", [
    ("my input", "my_input"), ('q"uote', "q_uote"), ("a*/b", "a_b"), ("int", "u_int"), ("3d", "v3d"),
    ("", "v"), ("ts_helper", "u_ts_helper"), ("TS_ALIGN", "u_TS_ALIGN"), ("main", "u_main"),
    ("x", "x"), ("é", "u_"), ("_Decimal64", "u_Decimal64"), ("__x", "u_x"),
])
def test_sanitize(name, expected):
    assert sanitize(name) == expected
    assert IDENTIFIER.match(sanitize(name))


def test_name_table_gives_unique_identifiers_per_object():
    table = NameTable(reserved=("taken",))
    a, b, c = object(), object(), object()
    assert table.get(a, "x") == "x"
    assert table.get(b, "x") == "x_2"
    assert table.get(a, "x") == "x"
    assert table.get(c, "taken") == "taken_2"
    assert table.fresh("x y") == "x_y"


HOSTILE_NAMES = ["my input", 'q"uote', "a*/b", "int", "3d", "dup", "dup", "ts_foo", "é", "",
                 'x; system("rm -rf /"); //', "/* comment */", "#define", "line\nbreak"]


def test_hostile_names_build_run_and_stay_out_of_the_source(rand):
    inputs = [ts.placeholder((4,), name=name) for name in HOSTILE_NAMES]

    def total(i):
        out = inputs[0][i]
        for k, t in enumerate(inputs[1:]):
            out = out + t[i] * float(k + 2)
        return out

    mid = ts.compute((4,), lambda i: total(i) * 2.0, name="mid */ stage")
    out = ts.compute((4,), lambda i: mid[i] + 1.0, name="int")
    s = ts.create_schedule(out.op)
    f = ts.build(s, inputs + [out], name="kernel */ int main")
    arrays = [rand(4) for _ in inputs]
    expected = arrays[0] + sum(a * float(k + 2) for k, a in enumerate(arrays[1:]))
    np.testing.assert_allclose(f(*arrays), expected * 2 + 1, rtol=1e-5)
    src = f.c_source
    for name in HOSTILE_NAMES + ["mid */ stage", "kernel */ int main"]:
        if re.search(r"[^A-Za-z0-9_]", name):      # text that is not part of any identifier
            assert name not in src, name
    assert "system(" not in src and "#define" not in src and "rm -rf" not in src
    # every tensor became a distinct parameter
    signature = re.search(r"\nint \w+\([^)]*\)", src).group(0)
    params = re.findall(r"\*restrict (\w+)", signature)
    assert len(params) == len(set(params)) == len(inputs) + 1
    assert "int" not in params and all(IDENTIFIER.match(p) for p in params)


def test_two_tensors_with_the_same_name(rand):
    A = ts.placeholder((3,), name="T")
    B = ts.placeholder((3,), name="T")
    C = ts.compute((3,), lambda i: A[i] - B[i] * 10.0, name="T")
    f = ts.build(ts.create_schedule(C.op), [A, B, C], name="T")
    a, b = rand(3), rand(3)
    np.testing.assert_allclose(f(a, b), a - b * 10, rtol=1e-6)


def test_loop_names_that_collide_with_tensor_names(rand):
    A = ts.placeholder((4, 5), name="i")
    B = ts.compute((4, 5), lambda i, j: A[i, j] + 1.0, name="j")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=3)
    f = ts.build(s, [A, B], name="i")
    a = rand((4, 5))
    np.testing.assert_allclose(f(a), a + 1)


# Names that are valid C identifiers but mean something to the C compiler or its headers.
RESERVED_BY_HEADERS = ["linux", "asm", "M_PI", "INT_MAX", "HUGE_VAL", "errno"]


@pytest.mark.parametrize("name", RESERVED_BY_HEADERS)
def test_names_reserved_by_the_compiler_or_headers(name, run_python):
    # in a subprocess: some of these names used to crash the process instead of raising
    result = run_python(f"""
        import numpy as np, tesched as ts
        A = ts.placeholder((4,), name={name!r})
        B = ts.compute((4,), lambda i: A[i] + 1.0, name="out")
        f = ts.build(ts.create_schedule(B.op), [A, B], name="reserved_names")
        a = np.arange(4, dtype=np.float32)
        np.testing.assert_allclose(f(a), a + 1)
    """)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("kernel_name", ["select", "time", "round"])
def test_kernel_named_like_a_libc_function(kernel_name, rand):
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name=kernel_name)
    a = rand(4)
    np.testing.assert_allclose(f(a), a + 1)


@pytest.mark.parametrize("name", ["_Decimal32", "_Decimal64", "_Decimal128", "_cffi_types", "_CFFI_OP",
                                  "_cffi_f_reserved", "__int128", "_Bool"])
def test_names_reserved_by_c_and_cffi_are_renamed(name, rand):
    A = ts.placeholder((4,), name=name)
    B = ts.compute((4,), lambda i: A[i] * 2.0, name=name + "_out")
    f = ts.build(ts.create_schedule(B.op), [A, B], name=name)
    a = rand(4)
    np.testing.assert_allclose(f(a), 2 * a)
    assert not re.search(r"\bint _", f.c_source) and f"*restrict {name}" not in f.c_source
