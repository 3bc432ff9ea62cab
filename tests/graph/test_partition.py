"""partition: matched subgraphs run in external C functions written here, the rest is compiled and fused
by tesched; results against NumPy; what matches; the text form; errors found before anything runs."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.visit import post_order

from .helpers import ATOL, RTOL

LIBRARY_SOURCE = r"""
/* A naive 3x3 convolution (stride 1, padding 1) + per-channel add + relu, NCHW / OIHW. */
void conv3x3_add_relu(const float *x, const float *w, const float *b, float *out,
                      int64_t N, int64_t C, int64_t H, int64_t W, int64_t K) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < H; i++)
                for (int64_t j = 0; j < W; j++) {
                    float acc = b[k];
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t di = 0; di < 3; di++)
                            for (int64_t dj = 0; dj < 3; dj++) {
                                int64_t y = i + di - 1, z = j + dj - 1;
                                if (y >= 0 && y < H && z >= 0 && z < W)
                                    acc += x[((n * C + c) * H + y) * W + z] * w[((k * C + c) * 3 + di) * 3 + dj];
                            }
                    out[((n * K + k) * H + i) * W + j] = acc > 0 ? acc : 0;
                }
}

/* out = a + b + c, elementwise over N*C*H*W values. */
void add3(const float *a, const float *b, const float *c, float *out, int64_t N, int64_t C, int64_t H, int64_t W) {
    for (int64_t i = 0; i < N * C * H * W; i++)
        out[i] = a[i] + b[i] + c[i];
}

/* out = a + b, elementwise over N*C*H*W values. */
void add2(const float *a, const float *b, float *out, int64_t N, int64_t C, int64_t H, int64_t W) {
    for (int64_t i = 0; i < N * C * H * W; i++)
        out[i] = a[i] + b[i];
}

/* out = a[0] * x + b[0]: two scalars. */
void axpb(const float *x, const float *a, const float *b, float *out, int64_t N) {
    for (int64_t i = 0; i < N; i++)
        out[i] = a[0] * x[i] + b[0];
}

/* out = a * b - c: the order of the inputs matters. */
void mul_sub(const float *a, const float *b, const float *c, float *out, int64_t N) {
    for (int64_t i = 0; i < N; i++)
        out[i] = a[i] * b[i] - c[i];
}
"""

NCHW, KCHW = ("N", "C", "H", "W"), ("N", "K", "H", "W")
CONV = G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3), ("K", 1, 1)], output=KCHW)
ADD3 = G.ExternalFunction("add3", inputs=[KCHW, KCHW, KCHW], output=KCHW)
ADD2 = G.ExternalFunction("add2", inputs=[KCHW, KCHW], output=KCHW)
MUL_SUB = G.ExternalFunction("mul_sub", inputs=[("N",), ("N",), ("N",)], output=("N",))
AXPB = G.ExternalFunction("axpb", inputs=[("N",), (), ()], output=("N",))
CONV_PATTERN = G.pattern(G.is_op("nn.conv2d", strides=1, padding=1), G.is_op("add", G.is_constant()), "nn.relu")
PATTERNS = {"conv3x3_add_relu": CONV_PATTERN, "add3": G.pattern("add", "add")}


@pytest.fixture(scope="module")
def library():
    return G.ExternalLibrary([CONV, ADD3, ADD2, MUL_SUB, AXPB], source=LIBRARY_SOURCE)


@pytest.fixture(scope="module")
def params():
    rng = np.random.default_rng(3)
    return {"w1": rng.standard_normal((6, 4, 3, 3)).astype("float32"),
            "b1": rng.standard_normal((6, 1, 1)).astype("float32"),
            "w2": rng.standard_normal((6, 4, 1, 1)).astype("float32")}


def model(params):
    """relu(conv3x3(x) + b1) + r1 + r2, multiplied by relu(conv1x1(x)), then tanh."""
    x = G.var("data", shape=(1, 4, 6, 6))
    r1, r2 = G.var("r1", shape=(1, 6, 6, 6)), G.var("r2", shape=(1, 6, 6, 6))
    h = G.nn.relu(G.add(G.nn.conv2d(x, G.const(params["w1"]), padding=1), G.const(params["b1"])))
    s = G.add(r1, G.add(h, r2))          # the chained value enters the outer add on the right
    g = G.nn.relu(G.nn.conv2d(x, G.const(params["w2"])))
    return G.Function([x, r1, r2], G.tanh(G.multiply(s, g)))


def conv_reference(x, w, padding):
    """A direct NumPy convolution (stride 1), in float64."""
    k, _, kh, kw = w.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    h, width = padded.shape[2] - kh + 1, padded.shape[3] - kw + 1
    out = np.zeros((x.shape[0], k, h, width))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,kc->nkhw", padded[:, :, i:i + h, j:j + width], w[:, :, i, j])
    return out


def model_reference(params, x, r1, r2):
    h = np.maximum(conv_reference(x, params["w1"], 1) + params["b1"], 0)
    g = np.maximum(conv_reference(x, params["w2"], 0), 0)
    return np.tanh((h + r1 + r2) * g)


@pytest.fixture(scope="module")
def partitioned(library, params):
    return G.partition(model(params), PATTERNS, library)


@pytest.fixture(scope="module")
def executable(partitioned):
    return G.build(partitioned)


@pytest.fixture
def inputs(rand):
    return rand((1, 4, 6, 6), low=-1), rand((1, 6, 6, 6), low=-1), rand((1, 6, 6, 6), low=-1)


def op_names(f):
    return [n.op_name for n in post_order(f.body) if isinstance(n, G.Call)]


def test_external_calls_give_the_numpy_result(executable, params, inputs):
    np.testing.assert_allclose(executable(*inputs), model_reference(params, *inputs), rtol=RTOL, atol=ATOL)
    assert [c.name for c in executable.external_calls] == ["external.conv3x3_add_relu", "external.add3"]


def test_a_prepared_executable_runs_the_external_calls(executable, params, inputs):
    run = executable.prepare(*inputs)
    np.testing.assert_allclose(run(), model_reference(params, *inputs), rtol=RTOL, atol=ATOL)


def test_the_unmatched_remainder_is_compiled_and_fused_by_tesched(executable, partitioned, params, inputs):
    # conv1x1 -> relu -> multiply (by the external result) -> tanh: one kernel, the conv inside the epilogue
    assert [k.name for k in executable.kernels] == ["fused_nn_conv2d_nn_relu_multiply_tanh"]
    ir = str(executable.kernels[0].lowered)
    assert ir.index("produce tanh") < ir.index("produce conv2d")
    unfused = G.build(partitioned, disabled_passes=["fuse_ops"])
    assert [k.name for k in unfused.kernels] == ["fused_nn_conv2d", "fused_nn_relu", "fused_multiply", "fused_tanh"]
    assert len(unfused.external_calls) == 2
    np.testing.assert_allclose(unfused(*inputs), model_reference(params, *inputs), rtol=RTOL, atol=ATOL)


def test_the_partitioned_graph_marks_external_calls(partitioned):
    text = str(partitioned)
    assert ("%0 = external.conv3x3_add_relu(%data, meta[Constant][0], meta[Constant][1]) "
            "/* ty=Tensor[(1, 6, 6, 6), float32] */;") in text
    assert "%1 = external.add3(%0, %r2, %r1) /* ty=Tensor[(1, 6, 6, 6), float32] */;" in text
    assert op_names(partitioned) == ["external.conv3x3_add_relu", "external.add3", "nn.conv2d", "nn.relu",
                                     "multiply", "tanh"]
    assert "external.conv3x3_add_relu" in repr(G.build(partitioned))


def test_interpret_runs_the_replaced_ops_with_numpy(partitioned, params, inputs):
    np.testing.assert_allclose(G.interpret(partitioned, *inputs), model_reference(params, *inputs), rtol=RTOL,
                               atol=ATOL)


def test_free_inputs_are_passed_in_pattern_order(library, rand):
    a, b, c = (G.var(n, shape=(5,)) for n in "abc")
    f = G.Function([a, b, c], G.Tuple([G.subtract(G.multiply(a, b), c), G.subtract(c, G.multiply(b, a))]))
    part = G.partition(f, {"mul_sub": G.pattern("multiply", "subtract")}, library)
    assert op_names(part) == ["external.mul_sub", "multiply", "subtract"]   # c - b*a is not b*a - c
    arrays = [rand((5,), low=-1) for _ in range(3)]
    first, second = G.build(part)(*arrays)
    np.testing.assert_allclose(first, arrays[0] * arrays[1] - arrays[2], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(second, arrays[2] - arrays[1] * arrays[0], rtol=RTOL, atol=ATOL)


def test_scalar_constants_are_passed_as_one_element_arrays(library, rand):
    x = G.var("x", shape=(7,))
    f = G.Function([x], G.add(G.multiply(x, 2.0), 3.0))
    part = G.partition(f, {"axpb": G.pattern(G.is_op("multiply", G.wildcard(), G.is_constant()), "add")}, library)
    assert "external.axpb(%x, 2f, 3f)" in str(part)
    x_np = rand((7,), low=-1)
    np.testing.assert_allclose(G.build(part)(x_np), 2 * x_np + 3, rtol=RTOL, atol=ATOL)


def test_partition_is_reachable_from_the_package():
    import tesched as ts
    assert ts.graph.partition is G.partition


# what matches ---------------------------------------------------------------------------------------

def add_chain(length):
    xs = [G.var(f"x{k}", shape=(1, 6, 6, 6)) for k in range(length + 1)]
    value = xs[0]
    for x in xs[1:]:
        value = G.add(value, x)
    return G.Function(xs, value)


def test_a_chain_of_adds_is_covered_from_its_producers(library, rand):
    part = G.partition(add_chain(5), {"add3": G.pattern("add", "add")}, library)
    assert op_names(part) == ["external.add3", "external.add3", "add"]
    arrays = [rand((1, 6, 6, 6), low=-1) for _ in range(6)]
    np.testing.assert_allclose(G.build(part)(*arrays), sum(a.astype(np.float64) for a in arrays), rtol=RTOL, atol=ATOL)


def test_attribute_and_argument_constraints_select_matches(library, params):
    x = G.var("data", shape=(1, 4, 6, 6))
    b = G.var("b", shape=(6, 1, 1))
    w = G.const(params["w1"])
    unpadded = G.nn.relu(G.add(G.nn.conv2d(x, w, padding=0), G.const(params["b1"])))    # padding differs
    variable_bias = G.nn.relu(G.add(G.nn.conv2d(x, w, padding=1), b))                  # bias not constant
    matched = G.nn.relu(G.add(G.const(params["b1"]), G.nn.conv2d(x, w, padding=1)))   # add's operands swapped
    f = G.Function([x, b], G.Tuple([unpadded, variable_bias, matched]))
    part = G.partition(f, {"conv3x3_add_relu": CONV_PATTERN}, library)
    assert op_names(part).count("external.conv3x3_add_relu") == 1
    assert op_names(part).count("nn.conv2d") == 2


def test_a_value_with_several_consumers_ends_a_chain(library):
    x, y = G.var("x", shape=(1, 6, 6, 6)), G.var("y", shape=(1, 6, 6, 6))
    inner = G.add(x, y)
    shared = G.Function([x, y], G.Tuple([G.add(G.add(inner, y), x), inner]))   # inner is also a result
    part = G.partition(shared, {"add3": G.pattern("add", "add")}, library)
    assert op_names(part) == ["add", "external.add3"]


def test_earlier_patterns_take_priority(library, rand):
    f = add_chain(3)
    add3_first = G.partition(f, [("add3", G.pattern("add", "add")), ("add2", G.pattern("add"))], library)
    assert op_names(add3_first) == ["external.add3", "external.add2"]
    add2_first = G.partition(f, [("add2", G.pattern("add")), ("add3", G.pattern("add", "add"))], library)
    assert op_names(add2_first) == ["external.add2"] * 3
    arrays = [rand((1, 6, 6, 6), low=-1) for _ in range(4)]
    np.testing.assert_allclose(G.build(add3_first)(*arrays), sum(a.astype(np.float64) for a in arrays),
                               rtol=RTOL, atol=ATOL)


def test_external_calls_on_constants_fold_like_other_ops(library):
    c = G.const(np.full((1, 6, 6, 6), 2.0, "float32"))
    part = G.partition(G.Function([], G.add(G.add(c, c), c)), {"add3": G.pattern("add", "add")}, library)
    assert op_names(part) == ["external.add3"]
    np.testing.assert_allclose(G.interpret(part), np.full((1, 6, 6, 6), 6.0))
    folded = G.build(part)
    assert folded.external_calls == [] and folded.kernels == []
    np.testing.assert_allclose(folded(), np.full((1, 6, 6, 6), 6.0))


# errors ---------------------------------------------------------------------------------------------

def test_a_pattern_naming_an_undeclared_function_is_rejected(library, params):
    with pytest.raises(G.ExternalFunctionError, match="external function relu6 is not declared"):
        G.partition(model(params), {"relu6": G.pattern("nn.relu")}, library)


@pytest.mark.parametrize("declared, message", [
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3)], output=KCHW),
     r"declares 2 inputs \(\(N, C, H, W\), \(K, C, 3, 3\) -> \(N, K, H, W\) float32\), but is given 3"),
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3), ("K", 1, 1)], output=KCHW,
                        dtype="float64"),
     "input 0 has dtype float32, but the function declares float64"),
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 5, 5), ("K", 1, 1)], output=KCHW),
     r"input 1 is Tensor\[\(6, 4, 3, 3\), float32\], but the function declares \(K, C, 5, 5\): dimension 2 must "
     "be 5, not 3"),
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3), ("K",)], output=KCHW),
     r"input 2 is Tensor\[\(6, 1, 1\), float32\], but the function declares \(K,\) \(rank 3 instead of 1\)"),
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3), ("C", 1, 1)], output=KCHW),
     r"input 2 .* dimension 0 \(C\) is 6, but C is 4 in input 0"),
    (G.ExternalFunction("conv3x3_add_relu", inputs=[NCHW, ("K", "C", 3, 3), ("K", 1, 1)],
                        output=("N", "K", "H", 4)),
     r"the output is Tensor\[\(1, 6, 6, 6\), float32\], but the function declares \(N, K, H, 4\): dimension 3 "
     "must be 4, not 6"),
])
def test_a_declaration_that_disagrees_with_the_matches_is_rejected(declared, message, params):
    library = G.ExternalLibrary([declared], source=LIBRARY_SOURCE)
    with pytest.raises(G.ExternalFunctionError, match=message) as caught:
        G.partition(model(params), {"conv3x3_add_relu": CONV_PATTERN}, library)
    assert "external function conv3x3_add_relu" in str(caught.value)
    assert "the match of nn.conv2d(strides=1, padding=1) -> add(is_constant()) -> nn.relu ending at %2" in \
        str(caught.value)


def test_external_calls_cannot_be_fused_with_other_ops(library):
    x = G.var("x", shape=(1, 6, 6, 6))
    part = G.partition(G.Function([x], G.nn.relu(G.add(G.add(x, x), x))), {"add3": G.pattern("add", "add")},
                       library)
    rules = G.FusionRules().allow("opaque", "elemwise")
    with pytest.raises(G.ExternalFunctionError, match="put external.add3 in one group with other ops"):
        G.build(part, rules=rules)


def test_bad_arguments_to_partition(library, params):
    f = model(params)
    with pytest.raises(TypeError, match="expected a graph Function"):
        G.partition(f.body, PATTERNS, library)
    with pytest.raises(TypeError, match="library must be an ExternalLibrary"):
        G.partition(f, PATTERNS, LIBRARY_SOURCE)
    with pytest.raises(TypeError, match="patterns map function names to pattern"):
        G.partition(f, {"add3": ("add", "add")}, library)
