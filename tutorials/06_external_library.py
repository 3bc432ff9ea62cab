"""Tutorial 6: hand parts of a model to your in-house C library, let tesched compile the rest.
===========================================================================================

Run it:  python tutorials/06_external_library.py          (1 x 32 x 28 x 28, a few seconds)
         python tutorials/06_external_library.py --quick  (1 x 4 x 8 x 8, a smoke test; or TESCHED_QUICK=1)

The situation: your team owns a C library with hand-written routines (here a 3x3 conv + bias + relu and
a three-way add), maybe tuned for your hardware, maybe just code you trust. You want a model to call them
wherever they apply, and a compiler for everything else. In TVM this is "bring your own codegen"; in
tesched it is three objects and one call:

- ``G.ExternalFunction(name, inputs=[shapes], output=shape, dtype=...)`` declares a C function: the shapes
  of its tensors, with names such as ``"N"`` for sizes that may vary;
- ``G.ExternalLibrary([functions], source=C_TEXT)`` (or ``path="libinhouse.so"``) holds their code;
- ``G.pattern("nn.conv2d", "add", "nn.relu")`` says which chain of ops a function replaces;
- ``G.partition(graph, {name: pattern}, library)`` replaces every match by a call ``external.<name>``.

The calling convention is fixed, so the C side needs no glue code: one pointer per input (the match's
*free inputs*, in the order the pattern meets them), then the output, then one ``int64_t`` per size name
(in order of first appearance), all arrays C-contiguous and row-major::

    void inhouse_conv3x3_bias_relu(const float *data, const float *weight, const float *bias, float *out,
                                   int64_t N, int64_t C, int64_t H, int64_t W, int64_t K);

Steps: 1. the model and the graph passes; 2. the library on its own; 3. partition; 4. build: tesched
compiles and fuses what is left; 5. the same library as a shared object; 6. time; 7. mistakes, caught
before anything runs. Every step checks its results against NumPy.
"""
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tesched import graph as G
from tesched.tools.demo import conv2d_reference
from tesched.tools.tutorial import parse_tutorial_args, ratio_text, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "1 x 4 x 8 x 8, a smoke test")).quick
CHANNELS, SIZE = (4, 8) if QUICK else (32, 28)
REPEAT = 3 if QUICK else 20
EPSILON = 1e-5

# The in-house library: plain C, written without any knowledge of tesched. --------------------------------
INHOUSE_SOURCE = r"""
/* out = relu(conv3x3(data, weight) + bias): stride 1, zero padding 1, NCHW data, KCHW weight. */
void inhouse_conv3x3_bias_relu(const float *data, const float *weight, const float *bias, float *out,
                               int64_t N, int64_t C, int64_t H, int64_t W, int64_t K) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            float *o = out + (n * K + k) * H * W;
            for (int64_t p = 0; p < H * W; p++)
                o[p] = bias[k];
            for (int64_t c = 0; c < C; c++) {
                const float *x = data + (n * C + c) * H * W;
                const float *w = weight + (k * C + c) * 9;
                for (int64_t dy = -1; dy <= 1; dy++)
                    for (int64_t dx = -1; dx <= 1; dx++) {
                        float wv = w[(dy + 1) * 3 + (dx + 1)];
                        for (int64_t i = (dy < 0 ? 1 : 0); i < H - (dy > 0 ? 1 : 0); i++)
                            for (int64_t j = (dx < 0 ? 1 : 0); j < W - (dx > 0 ? 1 : 0); j++)
                                o[i * W + j] += wv * x[(i + dy) * W + j + dx];
                    }
            }
            for (int64_t p = 0; p < H * W; p++)
                o[p] = o[p] > 0 ? o[p] : 0;
        }
}

/* out = a + b + c, elementwise. */
void inhouse_add3(const float *a, const float *b, const float *c, float *out,
                  int64_t N, int64_t C, int64_t H, int64_t W) {
    for (int64_t i = 0; i < N * C * H * W; i++)
        out[i] = a[i] + b[i] + c[i];
}
"""

# What tesched needs to know about it: each function's tensors. "N", "C", ... are size names: each takes
# one value across the tensors of a call, and is passed to C as an int64_t after the output pointer.
CONV_BIAS_RELU = G.ExternalFunction("inhouse_conv3x3_bias_relu",
                                    inputs=[("N", "C", "H", "W"), ("K", "C", 3, 3), ("K", 1, 1)],
                                    output=("N", "K", "H", "W"))
ADD3 = G.ExternalFunction("inhouse_add3", inputs=[("N", "C", "H", "W")] * 3, output=("N", "C", "H", "W"))
library = G.ExternalLibrary([CONV_BIAS_RELU, ADD3], source=INHOUSE_SOURCE)

# Which subgraphs each function replaces. The conv routine only does 3x3, stride 1, padding 1, with
# constant weights, so the pattern says so: other convolutions stay with tesched.
PATTERNS = {
    "inhouse_conv3x3_bias_relu": G.pattern(G.is_op("nn.conv2d", G.wildcard(), G.is_constant(), strides=1, padding=1),
                                           G.is_op("add", G.is_constant()), "nn.relu"),
    "inhouse_add3": G.pattern("add", "add"),
}

# The model: a residual block. -------------------------------------------------------------------------
rng = np.random.default_rng(0)


def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def around_one(*shape: int) -> np.ndarray:
    return rng.uniform(0.5, 1.5, shape).astype(np.float32)


params = {"conv1_weight": normal(CHANNELS, CHANNELS, 3, 3, scale=1 / (3 * np.sqrt(CHANNELS))),
          "conv1_bias": normal(CHANNELS), "bn_gamma": around_one(CHANNELS), "bn_beta": normal(CHANNELS),
          "bn_mean": normal(CHANNELS), "bn_var": around_one(CHANNELS),
          "conv2_weight": normal(CHANNELS, CHANNELS, 1, 1, scale=1 / np.sqrt(CHANNELS))}
data_np = normal(1, CHANNELS, SIZE, SIZE)


def declare_model() -> G.Function:
    """h = relu(bn(conv3x3(x) + b)); g = relu(conv1x1(h)); out = relu(g + x + h)."""
    x = G.var("data", shape=(1, CHANNELS, SIZE, SIZE))
    w1 = G.var("conv1_weight", shape=(CHANNELS, CHANNELS, 3, 3))
    b1 = G.var("conv1_bias", shape=(CHANNELS,))
    stats = [G.var(n, shape=(CHANNELS,)) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
    w2 = G.var("conv2_weight", shape=(CHANNELS, CHANNELS, 1, 1))
    h = G.nn.relu(G.nn.batch_norm(G.nn.bias_add(G.nn.conv2d(x, w1, padding=1), b1), *stats, epsilon=EPSILON))
    g = G.nn.relu(G.nn.conv2d(h, w2))
    return G.Function([x, w1, b1, *stats, w2], G.nn.relu(G.add(G.add(g, x), h)))


def reference(x: np.ndarray) -> np.ndarray:
    """The model in NumPy."""
    c = (slice(None), None, None)
    y = conv2d_reference(x, params["conv1_weight"]) + params["conv1_bias"][c]
    y = (y - params["bn_mean"][c]) / np.sqrt(params["bn_var"][c] + EPSILON) * params["bn_gamma"][c] + params["bn_beta"][c]
    h = np.maximum(y, 0)
    g = np.maximum(np.einsum("nchw,kc->nkhw", h, params["conv2_weight"][:, :, 0, 0]), 0)
    return np.maximum(g + x + h, 0)


expected = reference(data_np)


def check(what: str, got: np.ndarray, want: np.ndarray = expected) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    print(f"-> matches NumPy ({what})")


print("\n=== 1. The model, after the usual graph passes ===")
print("Partition after the passes that change ops: batch_norm folds into the conv, and bias + shift become\n"
      "one add, so the block reads conv2d -> add -> relu, which is what the library implements.\n")
optimized = G.optimize(declare_model(), params, disabled_passes=["fuse_ops"])
print(optimized)
check("the NumPy interpreter on the optimized graph", G.interpret(optimized, data_np))

print("\n=== 2. The library on its own ===")
print("tesched calls each function through this prototype (the calling convention):")
for fn in (CONV_BIAS_RELU, ADD3):
    print(f"    {fn.prototype()};")
print("\nBefore wiring it into the model, try one function on a tiny graph of its own:")
a, b, c = (G.var(n, shape=(2, 3, 4, 5)) for n in "abc")
tiny = G.partition(G.Function([a, b, c], G.add(G.add(a, b), c)), {"inhouse_add3": PATTERNS["inhouse_add3"]}, library)
print(tiny)
arrays = [normal(2, 3, 4, 5) for _ in range(3)]
check("inhouse_add3", G.build(tiny)(*arrays), arrays[0] + arrays[1] + arrays[2])

print("\n=== 3. Partition: every match becomes an external call ===")
partitioned = G.partition(optimized, PATTERNS, library)
print(partitioned)
print("\nThe 1x1 conv is not 3x3 with padding 1, so it stays a tesched op; relu(g + x + h) lost its adds to\n"
      "inhouse_add3 (free inputs in the order the pattern meets them: g, x, then h).")
check("the NumPy interpreter on the partitioned graph (external calls run the ops they replace)",
      G.interpret(partitioned, data_np))

print("\n=== 4. Build: the external calls run the library, tesched compiles and fuses the rest ===")
exe = G.build(partitioned)
print(exe)
print("\nexternal calls:", ", ".join(call.name for call in exe.external_calls))
print("tesched kernels:", ", ".join(kernel.name for kernel in exe.kernels))
print(f"\n{exe.kernels[0].name}: the 1x1 conv is produced inside the relu's loops, as without partitioning:\n")
print(exe.kernels[0].lowered)
check("the partitioned executable", exe(data_np))

print("\n=== 5. The same library, shipped as a shared object ===")
print("A vendor ships libinhouse.so rather than source. C keeps no types in a shared object, so tesched can\n"
      "check that each declared symbol exists, but not its parameters: the declarations must be right.")
with tempfile.TemporaryDirectory() as vendor:
    (Path(vendor) / "inhouse.c").write_text("#include <stdint.h>\n" + INHOUSE_SOURCE)
    subprocess.run(["cc", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "inhouse.c", "-o", "libinhouse.so"],
                   cwd=vendor, check=True)
    shared = G.ExternalLibrary([CONV_BIAS_RELU, ADD3], path=Path(vendor) / "libinhouse.so")
    exe_shared = G.build(G.partition(optimized, PATTERNS, shared))
    check("the executable calling libinhouse.so", exe_shared(data_np))

print("\n=== 6. Time: in-house library vs tesched alone (median of the whole model per call) ===")
tesched_only = G.build(optimized)
check("tesched alone", tesched_only(data_np))
library_timing, tesched_timing = exe.benchmark(data_np, repeat=REPEAT), tesched_only.benchmark(data_np, repeat=REPEAT)
t_library, t_tesched = library_timing.median, tesched_timing.median
print(f"with the in-house library ({len(exe.external_calls)} external calls, {len(exe.kernels)} kernels): "
      f"{t_library * 1e3:8.3f} ms")
print(f"tesched alone ({len(tesched_only.kernels)} kernels):{'':25s}{t_tesched * 1e3:8.3f} ms")
print(f"ratio: {ratio_text(t_library, t_tesched, t_library - library_timing.min, t_tesched - tesched_timing.min)}. Offloading is about using code you own; whether it is faster is a\n"
      "measurement, made like this one, on your sizes and your machine.")

print("\n=== 7. Mistakes are caught before anything runs ===")
mistakes = {
    "a declared shape that disagrees with the graph (weights declared 5x5)":
        lambda: G.partition(optimized, PATTERNS, G.ExternalLibrary(
            [G.ExternalFunction("inhouse_conv3x3_bias_relu", inputs=[("N", "C", "H", "W"), ("K", "C", 5, 5),
                                                                     ("K", 1, 1)],
                                output=("N", "K", "H", "W")), ADD3], source=INHOUSE_SOURCE)),
    "a C definition that disagrees with its declaration (inputs declared float64)":
        lambda: G.ExternalLibrary([G.ExternalFunction("inhouse_add3", inputs=[("N",)] * 3, output=("N",),
                                                      dtype="float64")], source=INHOUSE_SOURCE).load(),
    "a declared function the library does not define":
        lambda: G.ExternalLibrary([ADD3, G.ExternalFunction("inhouse_softmax", inputs=[("N", "C")], output=("N", "C"))],
                                  source=INHOUSE_SOURCE).load(),
    "a name that is not a C identifier":
        lambda: G.ExternalFunction("inhouse-gelu", inputs=[("N",)], output=("N",)),
}
for what, mistake in mistakes.items():
    try:
        mistake()
    except G.ExternalFunctionError as err:
        print(f"\n{what}:\n  ExternalFunctionError: {err}")
    else:
        raise AssertionError(f"no error for {what}")
