"""Tests of tesched.driver.kernel: calling a compiled kernel. Every bad argument raises TypeError or ValueError
naming the argument, before any pointer reaches C; omitted outputs are allocated and returned."""
import numpy as np
import pytest

import tesched as ts


@pytest.fixture(scope="module")
def add_kernel():
    """C = A + 2B on (4, 8) float32 arrays."""
    A = ts.placeholder((4, 8), name="A")
    B = ts.placeholder((4, 8), name="B")
    C = ts.compute((4, 8), lambda i, j: A[i, j] + B[i, j] * 2.0, name="C")
    return ts.build(ts.create_schedule(C.op), [A, B, C], name="add_scaled")


@pytest.fixture
def abc(rand):
    return rand((4, 8)), rand((4, 8)), np.zeros((4, 8), np.float32)


def test_call_in_place_and_with_allocated_output(add_kernel, abc):
    a, b, c = abc
    assert add_kernel(a, b, c) is None
    np.testing.assert_allclose(c, a + 2 * b, rtol=1e-6)
    out = add_kernel(a, b)
    assert out.shape == (4, 8) and out.dtype == np.float32
    np.testing.assert_allclose(out, a + 2 * b, rtol=1e-6)


def test_kernel_attributes(add_kernel):
    assert add_kernel.name == "add_scaled"
    assert "int add_scaled(" in add_kernel.c_source
    assert "produce C" in str(add_kernel.lowered)
    assert repr(add_kernel) == "Kernel('add_scaled', args=[A, B, C])"


def test_wrong_dtype(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(TypeError, match="argument A: expected dtype float32, got float64"):
        add_kernel(a.astype(np.float64), b, c)
    with pytest.raises(TypeError, match="argument C: expected dtype float32, got int32"):
        add_kernel(a, b, c.astype(np.int32))
    with pytest.raises(TypeError, match="argument B: expected dtype float32, got >f4"):
        add_kernel(a, b.astype(">f4"), c)


def test_wrong_shape_and_ndim(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(ValueError, match=r"argument B: expected shape \(4, 8\), got \(4, 9\)"):
        add_kernel(a, np.zeros((4, 9), np.float32), c)
    with pytest.raises(ValueError, match=r"argument A: expected 2 dimensions, got 1"):
        add_kernel(a.ravel(), b, c)
    with pytest.raises(ValueError, match=r"argument C: expected 2 dimensions, got 3"):
        add_kernel(a, b, c[None])


def test_non_contiguous(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(ValueError, match="argument A: array is not C-contiguous"):
        add_kernel(np.zeros((4, 16), np.float32)[:, ::2], b, c)
    with pytest.raises(ValueError, match="argument B: array is not C-contiguous"):
        add_kernel(a, np.asfortranarray(b), c)
    with pytest.raises(ValueError, match="argument C: array is not C-contiguous"):
        add_kernel(a, b, np.zeros((8, 4), np.float32).T)


def test_read_only_output_but_read_only_input_is_fine(add_kernel, abc):
    a, b, c = abc
    frozen = np.zeros((4, 8), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="argument C: output array is read-only"):
        add_kernel(a, b, frozen)
    a.flags.writeable = False
    add_kernel(a, b, c)
    np.testing.assert_allclose(c, a + 2 * b, rtol=1e-6)


def test_output_overlapping_an_input(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(ValueError, match="argument C: output overlaps argument A in memory"):
        add_kernel(a, b, a)
    shared = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="argument C: output overlaps argument B in memory"):
        add_kernel(a, shared.reshape(64)[4:36].reshape(4, 8), shared.reshape(64)[:32].reshape(4, 8))
    # adjacent but disjoint halves of one array are fine
    add_kernel(a, shared[:4], shared[4:])
    np.testing.assert_allclose(shared[4:], a, rtol=1e-6)


def test_not_a_numpy_array(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(TypeError, match="argument A: expected an array .*got list"):
        add_kernel(a.tolist(), b, c)
    with pytest.raises(TypeError, match="argument C: expected an array .*got int"):
        add_kernel(a, b, 3)


def test_wrong_number_of_arguments(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(TypeError, match=r"add_scaled takes 3 arrays \(A, B, C\) or its 2 inputs, got 1"):
        add_kernel(a)
    with pytest.raises(TypeError, match="got 4"):
        add_kernel(a, b, c, c)
    with pytest.raises(TypeError, match="got 0"):
        add_kernel()


def test_none_in_place_of_an_input(add_kernel, abc):
    a, b, c = abc
    with pytest.raises(TypeError, match="argument A"):
        add_kernel(None, b, c)


def test_several_outputs_are_returned_in_order(rand):
    A = ts.placeholder((5,), name="A")
    S = ts.compute((5,), lambda i: A[i] + 1.0, name="S")
    D = ts.compute((5,), lambda i: A[i] * 2.0, name="D")
    f = ts.build(ts.create_schedule([S.op, D.op]), [A, S, D], name="two_outputs")
    a = rand(5)
    s, d = f(a)
    np.testing.assert_allclose(s, a + 1)
    np.testing.assert_allclose(d, a * 2)
    with pytest.raises(ValueError, match="argument S: output overlaps argument D in memory"):
        f(a, s, s)


def test_outputs_can_be_omitted_only_after_the_inputs(rand):
    A = ts.placeholder((3,), name="A")
    B = ts.compute((3,), lambda i: A[i] - 1.0, name="B")
    f = ts.build(ts.create_schedule(B.op), [B, A], name="output_first")
    a, b = rand(3), np.empty(3, np.float32)
    f(b, a)
    np.testing.assert_allclose(b, a - 1)
    with pytest.raises(TypeError, match="outputs can be omitted only when inputs come first"):
        f(a)


def test_symbolic_sizes_are_checked(rand):
    n = ts.var("n")
    A = ts.placeholder((n, 3), name="A")
    B = ts.placeholder((n,), name="B")
    C = ts.compute((n, 3), lambda i, j: A[i, j] * B[i], name="C")
    f = ts.build(ts.create_schedule(C.op), [A, B, C], name="row_scale")
    a, b = rand((6, 3)), rand(6)
    np.testing.assert_allclose(f(a, b), a * b[:, None], rtol=1e-6)
    with pytest.raises(ValueError, match="argument B: dimension 0 is 5, but size n is 6 from an earlier argument"):
        f(a, rand(5))
    with pytest.raises(ValueError, match=r"argument C: expected shape \(6, 3\), got \(6, 4\)"):
        f(a, b, np.empty((6, 4), np.float32))
    with pytest.raises(ValueError, match="size n must be positive, got 0"):
        f(np.empty((0, 3), np.float32), np.empty(0, np.float32))


def test_benchmark_reports_median_and_min(add_kernel, abc):
    result = add_kernel.benchmark(*abc, repeat=5)
    assert result.repeat == 5
    assert 0 < result.min <= result.median
    assert "median" in str(result)


# runtime parameters (ts.param) --------------------------------------------------------------------
def _gauss(vectorize: bool = False):
    """B = gain * exp(-A^2 / sigma) over (n, 40): float32 gain, float64 sigma."""
    n = ts.var("n")
    A = ts.placeholder((n, 40), name="A")
    gain, sigma = ts.param("gain"), ts.param("sigma", "float64")
    B = ts.compute((n, 40), lambda i, j: gain * ts.exp(-A[i, j] * A[i, j] / sigma.astype("float32")), name="B")
    s = ts.create_schedule(B.op)
    if vectorize:
        _, ji = s[B].split(B.op.axis[1], 8)
        s[B].vectorize(ji)
        s[B].parallel(B.op.axis[0])
    return s, A, B


def _gauss_reference(a, gain, sigma):
    return np.float32(gain) * np.exp(-a * a / np.float32(sigma))


@pytest.mark.parametrize("vectorize", [False, True])
def test_params_change_between_calls_without_compiling_again(vectorize, rand, monkeypatch):
    from tesched.driver import build as build_module
    compiles = []
    real = build_module.compile_module
    monkeypatch.setattr(build_module, "compile_module", lambda *a, **k: compiles.append(a[0]) or real(*a, **k))
    s, A, B = _gauss(vectorize)
    f = ts.build(s, [A, B])
    built = len(compiles)
    assert built <= 1
    a = rand((5, 40), low=-2, high=2)
    for gain, sigma in [(1.0, 2.0), (3.5, 0.25), (-0.5, 7.0)]:
        np.testing.assert_allclose(f(a, gain=gain, sigma=sigma), _gauss_reference(a, gain, sigma), rtol=1e-5)
        out = np.full_like(a, np.nan)
        assert f(a, out, gain, sigma) is None        # positionally, after the arrays, in the order they were made
        np.testing.assert_allclose(out, _gauss_reference(a, gain, sigma), rtol=1e-5)
    assert len(compiles) == built


def test_prepared_call_keeps_its_param_values(rand):
    s, A, B = _gauss(vectorize=True)
    f = ts.build(s, [A, B])
    a, out = rand((3, 40)), np.zeros((3, 40), np.float32)
    run = f.prepare(a, out, sigma=0.5, gain=2.0)
    other = f.prepare(a, sigma=3.0, gain=-1.0)
    run()
    np.testing.assert_allclose(out, _gauss_reference(a, 2.0, 0.5), rtol=1e-5)
    np.testing.assert_allclose(other(), _gauss_reference(a, -1.0, 3.0), rtol=1e-5)
    np.testing.assert_allclose(out, _gauss_reference(a, 2.0, 0.5), rtol=1e-5)


def test_integer_and_bool_params_and_params_listed_in_the_arguments(rand):
    A = ts.placeholder((6, 9), dtype="int32", name="A")
    shift, flip, scale = ts.param("shift", "int32"), ts.param("flip", "bool"), ts.param("scale", "float64")
    B = ts.compute((6, 9), lambda i, j: ts.if_then_else(flip, A[i, (j + shift) % 9], A[i, j] * 2).astype("float64")
                   * scale, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B, scale, flip])    # listed: first, in this order
    assert [p.name for p in f.signature.scalars] == ["scale", "flip", "shift"]
    assert repr(f).endswith("args=[A, B], params=[scale: float64, flip: bool, shift: int32])")
    a = rand((6, 9), "int32", -50, 50)
    cols = np.arange(9)
    for sh, fl, sc in [(2, True, 0.5), (-4, True, 3.0), (5, False, -1.25)]:
        expected = (a[:, (cols + sh) % 9] if fl else a * 2).astype(np.float64) * sc
        np.testing.assert_allclose(f(a, sc, fl, sh), expected)
        np.testing.assert_allclose(f(a, np.float64(sc), shift=np.int32(sh), flip=np.bool_(fl)), expected)


@pytest.mark.parametrize("call, error, words", [
    (lambda f, a: f(a, sigma=1.0), TypeError, "missing param gain (float32)"),
    (lambda f, a: f(a, 1.0, 2.0, 3.0), TypeError, "3 values after the arrays"),
    (lambda f, a: f(a, gain=1.0, sigma=1.0, sgima=2.0), TypeError, "unexpected keyword argument 'sgima'"),
    (lambda f, a: f(a, gain="1", sigma=1.0), TypeError, "param gain (float32): expected a number, got str"),
    (lambda f, a: f(a, gain=True, sigma=1.0), TypeError, "param gain (float32): expected a number, got the bool"),
    (lambda f, a: f(a, gain=1e39, sigma=1.0), ValueError, "param gain (float32): 1e+39 overflows float32"),
    (lambda f, a: f(a, np.zeros((2, 40), np.float32), "x", 1.0), TypeError, "param gain (float32): expected a number"),
])
def test_bad_param_values_name_the_param(call, error, words, rand):
    s, A, B = _gauss()
    f = ts.build(s, [A, B])
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        call(f, rand((2, 40)))


def test_an_int_param_in_an_index_is_checked_when_the_kernel_runs(rand):
    A = ts.placeholder((6, 9), name="A")
    shift = ts.param("shift", "int32")
    B = ts.compute((6, 4), lambda i, j: A[i, j + shift], name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B])
    a = rand((6, 9))
    for s in (0, 3, 5):
        np.testing.assert_array_equal(f(a, s), a[:, s:s + 4])
    for s in (6, -1):
        with pytest.raises(ts.BoundsError, match=r"A\[i, j \+ shift\] reads dimension 1 at a data-dependent index"):
            f(a, shift=s)


# calls of the user's C functions (ts.call_pure_extern) ----------------------------------------------
SOFT_CLIP = "static inline float soft_clip(float x, float k) {\n  return x / (k + fabsf(x));\n}"


def test_extern_calls_vectorized_and_parallel_match_numpy(rand):
    A = ts.placeholder((8, 64), name="A")
    k = ts.param("k")
    B = ts.compute((8, 64), lambda i, j: ts.call_pure_extern("float32", "soft_clip", A[i, j] * 2.0, k,
                                                             source=SOFT_CLIP), name="B")
    C = ts.compute((8, 64), lambda i, j: ts.call_pure_extern("float32", "hypotf", B[i, j], A[i, j]), name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(s[C].split(C.op.axis[1], 16)[1])
    s[C].parallel(C.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    f = ts.build(s, [A, C])
    a = rand((8, 64), low=-3, high=3)
    for kk in (1.0, 0.25):
        b = (2 * a) / (np.float32(kk) + np.abs(2 * a))
        np.testing.assert_allclose(f(a, k=kk), np.hypot(b, a), rtol=1e-5)


@pytest.mark.parametrize("name, source, words", [
    ("broken", "static inline float broken(float x) {\n  return x +* 2;\n}", r"call_pure_extern broken:2:\d+: error"),
    ("no_such_function", None, r"call_pure_extern no_such_function:1:\d+: error: .no_such_function. undeclared"),
])
def test_an_extern_function_that_does_not_compile_is_named(name, source, words):
    A = ts.placeholder((8,), name="A")
    B = ts.compute((8,), lambda i: ts.call_pure_extern("float32", name, A[i], source=source), name="B")
    with pytest.raises(ts.BuildError, match=words):
        ts.build(ts.create_schedule(B.op), [A, B])
