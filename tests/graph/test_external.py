"""External functions and libraries: declarations, the calling convention, C source checked against the
declared prototypes, shared libraries, missing symbols, and argument checks of external kernels."""
import subprocess

import numpy as np
import pytest

from tesched import graph as G
from tesched.errors import BuildError
from tesched.graph.external import ExternalKernel
from tesched.graph.types import TensorType

SCALE_SOURCE = r"""
#define N 3   /* a user macro with a size's name: the declared prototypes have no parameter names */
void scale_rows(const double *x, const double *s, double *out, int64_t R, int64_t C) {
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            out[i * C + j] = x[i * C + j] * s[i];
}
"""
SCALE_ROWS = G.ExternalFunction("scale_rows", inputs=[("R", "C"), ("R", 1)], output=("R", "C"), dtype="float64")
ROW_TYPES = [TensorType((4, 5), "float64"), TensorType((4, 1), "float64")]
OUT_TYPE = TensorType((4, 5), "float64")


@pytest.fixture(scope="module")
def scale_library():
    return G.ExternalLibrary([SCALE_ROWS], source=SCALE_SOURCE)


def test_the_prototype_follows_the_calling_convention():
    assert SCALE_ROWS.size_names == ("R", "C")
    assert SCALE_ROWS.prototype() == "void scale_rows(const double *in0, const double *in1, double *out, int64_t R, int64_t C)"
    assert SCALE_ROWS.prototype(named=False) == "void scale_rows(const double *, const double *, double *, int64_t, int64_t)"
    fixed = G.ExternalFunction("relu16", inputs=[(16,)], output=(16,))
    assert fixed.prototype() == "void relu16(const float *in0, float *out)"
    assert fixed.signature_text() == "(16,) -> (16,) float32"


def test_bind_gives_the_sizes_in_call_order():
    assert SCALE_ROWS.bind(ROW_TYPES, OUT_TYPE) == (4, 5)
    later = G.ExternalFunction("f", inputs=[("A", 2)], output=("B", "A"))
    assert later.bind([TensorType((7, 2))], TensorType((3, 7))) == (7, 3)


def test_an_external_kernel_calls_the_function_on_arrays(scale_library, rand):
    kernel = ExternalKernel(scale_library, SCALE_ROWS, ROW_TYPES, OUT_TYPE)
    x, s = rand((4, 5), "float64", low=-1), rand((4, 1), "float64", low=-1)
    out = np.empty((4, 5))
    kernel(x, s, out)
    np.testing.assert_allclose(out, x * s)
    prepared, again = kernel.prepare(x, s, out), np.empty((4, 5))
    x[:] = 2 * x       # a prepared call reads its inputs when it runs
    prepared()
    kernel(x, s, again)
    np.testing.assert_allclose(out, x * s)
    np.testing.assert_allclose(again, out)
    with pytest.raises(ValueError, match="the output overlaps an input"):
        kernel.prepare(x, s, x)


def test_an_external_kernel_checks_its_arrays(scale_library):
    kernel = ExternalKernel(scale_library, SCALE_ROWS, ROW_TYPES, OUT_TYPE)
    x, s, out = np.ones((4, 5)), np.ones((4, 1)), np.empty((4, 5))
    with pytest.raises(TypeError, match="takes 2 inputs and the output, got 2 arrays"):
        kernel(x, out)
    with pytest.raises(ValueError, match=r"input 0: expected Tensor\[\(4, 5\), float64\], got an array of shape "
                                         r"\(4, 5\) and dtype float32"):
        kernel(x.astype("float32"), s, out)
    with pytest.raises(ValueError, match=r"the output: expected .* shape \(5, 4\)"):
        kernel(x, s, np.empty((5, 4)))
    with pytest.raises(ValueError, match="input 0: array is not C-contiguous"):
        kernel(np.ones((5, 4)).T, s, out)
    with pytest.raises(TypeError, match="input 1: expected a numpy.ndarray, got list"):
        kernel(x, [1.0] * 4, out)
    with pytest.raises(ValueError, match="the output overlaps an input"):
        kernel(x, s, x)
    read_only = np.empty((4, 5))
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="the output array is read-only"):
        kernel(x, s, read_only)


@pytest.mark.parametrize("make, message", [
    (lambda: G.ExternalFunction("my-conv", inputs=[(4,)], output=(4,)), "'my-conv' is not a valid C identifier"),
    (lambda: G.ExternalFunction("2conv", inputs=[(4,)], output=(4,)), "'2conv' is not a valid C identifier"),
    (lambda: G.ExternalFunction("int", inputs=[(4,)], output=(4,)), "'int' is not a valid C identifier"),
    (lambda: G.ExternalFunction("f", inputs=[("n m",)], output=(4,)), "size name .*'n m' is not a valid C identifier"),
    (lambda: G.ExternalFunction("f", inputs=[(0,)], output=(4,)), "the shape of input 0 has 0"),
    (lambda: G.ExternalFunction("f", inputs=[4], output=(4,)), "the shape of input 0 must be a tuple"),
    (lambda: G.ExternalFunction("f", inputs="N", output=(4,)), "inputs must be a list of shapes"),
    (lambda: G.ExternalFunction("f", inputs=[(4,)], output=(4,), dtype="complex64"), "unsupported dtype 'complex64'"),
    (lambda: G.ExternalLibrary([SCALE_ROWS]), "give either source= .* or path="),
    (lambda: G.ExternalLibrary([SCALE_ROWS], source="", path="lib.so"), "give either source="),
    (lambda: G.ExternalLibrary([SCALE_ROWS, SCALE_ROWS], source=""), "function scale_rows is declared twice"),
    (lambda: G.ExternalLibrary(["scale_rows"], source=""), "expected ExternalFunction declarations"),
])
def test_bad_declarations_are_rejected(make, message):
    with pytest.raises(G.ExternalFunctionError, match=message):
        make()


@pytest.mark.parametrize("definition", [
    "void scale_rows(double *x, const double *s, double *out, int64_t R, int64_t C) {}",   # input not const
    "void scale_rows(const double *x, const double *s, double *out, int64_t R) {}",        # a size missing
    "void scale_rows(const float *x, const float *s, float *out, int64_t R, int64_t C) {}",  # float, not double
    "int scale_rows(const double *x, const double *s, double *out, int64_t R, int64_t C) { return 0; }",
])
def test_a_definition_that_disagrees_with_its_declaration_is_rejected(definition):
    library = G.ExternalLibrary([SCALE_ROWS], source=definition)
    with pytest.raises(G.ExternalFunctionError) as caught:
        library.load()
    message = str(caught.value)
    assert message.startswith("external function scale_rows: its definition in the library source does not match "
                              "its declared signature (R, C), (R, 1) -> (R, C) float64")
    assert SCALE_ROWS.prototype() in message
    assert "conflicting types for 'scale_rows'" in message and "<library source>:1" in message


@pytest.mark.parametrize("source", [
    "void scale_row(const double *x, const double *s, double *out, int64_t R, int64_t C) {}",   # misspelt
    "static void scale_rows(const double *x, const double *s, double *out, int64_t R, int64_t C) {}",
])
def test_a_function_missing_from_the_source_is_rejected(source):
    with pytest.raises(G.ExternalFunctionError, match=r"external function scale_rows: no symbol scale_rows in the "
                                                      r"library source \(is it defined, and not static\?\)"):
        G.ExternalLibrary([SCALE_ROWS], source=source).load()


def test_compile_flags_reach_the_compiler(rand):
    source = "void triple(const float *x, float *out, int64_t N) { for (int64_t i = 0; i < N; i++) out[i] = FACTOR * x[i]; }"
    triple = G.ExternalFunction("triple", inputs=[("N",)], output=("N",))
    library = G.ExternalLibrary([triple], source=source, compile_flags=["-DFACTOR=3"])
    kernel = ExternalKernel(library, triple, [TensorType((6,))], TensorType((6,)))
    x, out = rand((6,), low=-1), np.empty(6, "float32")
    kernel(x, out)
    np.testing.assert_allclose(out, 3 * x)


def test_source_calling_an_undefined_function_is_rejected():
    source = "void scale_rows(const double *x, const double *s, double *out, int64_t R, int64_t C) { helper(); }"
    with pytest.raises(G.ExternalFunctionError, match="the library source calls helper, which it does not define"):
        G.ExternalLibrary([SCALE_ROWS], source=source).load()


def test_source_that_does_not_compile_gives_the_compiler_messages():
    with pytest.raises(BuildError, match=r"does not compile:\n<library source>:2:.*error"):
        G.ExternalLibrary([SCALE_ROWS], source="\nvoid scale_rows( {").load()


@pytest.fixture(scope="module")
def shared_library(tmp_path_factory):
    """SCALE_SOURCE compiled into a shared library outside tesched, as a vendor would ship it."""
    directory = tmp_path_factory.mktemp("vendor")
    (directory / "scale.c").write_text("#include <stdint.h>\n" + SCALE_SOURCE)
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "scale.c", "-o", "libscale.so"], cwd=directory, check=True)
    return directory / "libscale.so"


def test_a_shared_library_with_declared_signatures(shared_library, rand):
    library = G.ExternalLibrary([SCALE_ROWS], path=shared_library)
    x, s = G.var("x", shape=(4, 5), dtype="float64"), G.var("s", shape=(4, 1), dtype="float64")
    f = G.partition(G.Function([x, s], G.multiply(x, s)), {"scale_rows": G.pattern("multiply")}, library)
    assert "external.scale_rows(%x, %s)" in str(f)
    x_np, s_np = rand((4, 5), "float64", low=-1), rand((4, 1), "float64", low=-1)
    np.testing.assert_allclose(G.build(f)(x_np, s_np), x_np * s_np)


def test_a_symbol_missing_from_a_shared_library_is_rejected(shared_library):
    missing = G.ExternalFunction("scale_cols", inputs=[("R", "C"), (1, "C")], output=("R", "C"), dtype="float64")
    library = G.ExternalLibrary([SCALE_ROWS, missing], path=shared_library)
    with pytest.raises(G.ExternalFunctionError, match=r"external function scale_cols: no symbol scale_cols in the "
                                                      r"shared library .*libscale.so \(is it spelled the same\?\)"):
        library.load()


def test_a_shared_library_that_does_not_exist_is_rejected(tmp_path):
    with pytest.raises(G.ExternalFunctionError, match="external library .*libnothing.so does not exist"):
        G.ExternalLibrary([SCALE_ROWS], path=tmp_path / "libnothing.so").load()
    (tmp_path / "libjunk.so").write_text("not a library")
    with pytest.raises(G.ExternalFunctionError, match="cannot load external library .*libjunk.so"):
        G.ExternalLibrary([SCALE_ROWS], path=tmp_path / "libjunk.so").load()


def test_undeclared_function_lookup(scale_library):
    with pytest.raises(G.ExternalFunctionError, match="external function scale_cols is not declared in "
                                                      r"ExternalLibrary\(scale_rows; the library source\)"):
        scale_library.function("scale_cols")
