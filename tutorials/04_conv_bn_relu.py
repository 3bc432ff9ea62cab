"""Tutorial 4: what becomes of conv2d + bias + batch_norm + relu, fused and not fused.
===================================================================================

Run it:  python tutorials/04_conv_bn_relu.py          (1 x 64 x 56 x 56, a VGG block; under a minute)
         python tutorials/04_conv_bn_relu.py --quick  (1 x 4 x 8 x 8, a smoke test; or TESCHED_QUICK=1)

The question inference-compiler users ask first: my network has conv -> bias_add -> batch_norm -> relu;
what does the compiler turn it into, what is fused, and what does fusion buy? This tutorial answers by
running the graph API (``tesched.graph``, Relay's names) step by step:

1. the graph as written, checked with the NumPy interpreter;
2. the graph after each pass: batch_norm becomes a multiply and an add (``simplify_inference``), the
   multiply folds into the conv weights (``fold_scale_axis``), the bias and the shift merge into one add
   (``combine_constant_adds``), and ``fuse_ops`` groups conv + add + relu into one primitive function;
3. the fused kernel: one loop nest where each row tile of the conv is produced inside the relu's loops;
4. the unfused kernels (``disabled_passes=["fuse_ops"]``): the same passes, one kernel per op;
5. why some edges are not fused: in conv -> relu -> batch_norm -> conv the batch norm stays (nothing folds
   across a relu), the second conv starts a new kernel, and the fusion report names the rule behind
   each unfused edge; rules changed by a user change the groups;
6. the time of fused vs unfused.

Every step checks its results against a NumPy computation of the block.
"""

import numpy as np

from tesched import graph as G
from tesched.tools.demo import conv2d_reference
from tesched.tools.tutorial import parse_tutorial_args, ratio_text, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "1 x 4 x 8 x 8, a smoke test")).quick
CHANNELS, SIZE = (4, 8) if QUICK else (64, 56)
REPEAT = 3 if QUICK else 20
EPSILON = 1e-5

rng = np.random.default_rng(0)
params = {
    "conv1_weight": (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / (3 * np.sqrt(CHANNELS))).astype(np.float32),
    "conv1_bias": rng.standard_normal(CHANNELS).astype(np.float32),
    "bn_gamma": rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
    "bn_beta": rng.standard_normal(CHANNELS).astype(np.float32),
    "bn_mean": rng.standard_normal(CHANNELS).astype(np.float32),
    "bn_var": rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
}
data_np = rng.standard_normal((1, CHANNELS, SIZE, SIZE)).astype(np.float32)


def per_channel(name: str) -> np.ndarray:
    return params[name][:, None, None]


def batch_norm_reference(y: np.ndarray) -> np.ndarray:
    return ((y - per_channel("bn_mean")) / np.sqrt(per_channel("bn_var") + EPSILON) * per_channel("bn_gamma")
            + per_channel("bn_beta"))


conv_np = conv2d_reference(data_np, params["conv1_weight"])
expected = np.maximum(batch_norm_reference(conv_np + per_channel("conv1_bias")), 0.0)


def check(what: str, got: np.ndarray, want: np.ndarray = expected) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    print(f"-> matches NumPy ({what})")


def declare_block() -> G.Function:
    """conv2d -> bias_add -> batch_norm -> relu, every parameter a variable."""
    x = G.var("data", shape=(1, CHANNELS, SIZE, SIZE))
    w = G.var("conv1_weight", shape=(CHANNELS, CHANNELS, 3, 3))
    b = G.var("conv1_bias", shape=(CHANNELS,))
    stats = [G.var(n, shape=(CHANNELS,)) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
    y = G.nn.conv2d(x, w, strides=1, padding=1)
    y = G.nn.bias_add(y, b)
    y = G.nn.batch_norm(y, *stats, epsilon=EPSILON)
    y = G.nn.relu(y)
    return G.Function([x, w, b, *stats], y)


print("\n=== 1. The block as written ===")
block = declare_block()
print(block)
bound = G.bind_params(block, params)   # the six parameters become constants (meta[Constant][k])
check("the NumPy interpreter on the graph", G.interpret(bound, data_np))

DIRECT = G.FusionRules(winograd=False)
# This tutorial looks at the direct convolution: by default, a 3x3 convolution of 64 channels on 56x56
# would run Winograd's algorithm instead (fewer multiplications; see tesched.nn.winograd and
# `python -m tesched.bench --graph`), with the same fusion of its epilogue.

print("\n=== 2. The graph after each pass ===")
print("(simplify_inference: batch_norm -> multiply + add; fold_scale_axis: the multiply goes into the conv\n"
      " weights and bias; fold_constant: nothing left to fold; combine_constant_adds: bias + shift -> one add;\n"
      " fuse_ops: conv + add + relu -> one primitive function)\n")
fused = G.build(bound, rules=DIRECT, trace=True)
check("the fused executable", fused(data_np))

print("\n=== 3. What is fused: one kernel ===")
print(fused.fusion_report)
kernel = fused.kernels[0]
print(f"\nkernel {kernel.name}: the conv is produced per row tile inside the relu's loops, and the add and\n"
      "the relu are applied to that tile right away, while it is in cache:\n")
print(kernel.lowered)
call = fused.function.body   # @fused_nn_conv2d_add_nn_relu(%data, meta[Constant][0], meta[Constant][1])
check(f"{kernel.name} called directly", kernel.kernel(data_np, *[c.data for c in call.args[1:]]))

print("\n=== 4. Not fused: one kernel per op ===")
unfused = G.build(bound, rules=DIRECT, disabled_passes=["fuse_ops"])
print(unfused.function)
print(f"\n{len(unfused.kernels)} kernels: {', '.join(k.name for k in unfused.kernels)}; the conv result is written "
      "to memory, read back by the add, written again, and read by the relu:\n")
print(unfused.kernels[1].lowered)
check("the unfused executable", unfused(data_np))

print("\n=== 5. Why some edges are not fused ===")
x = G.var("data", shape=(1, CHANNELS, SIZE, SIZE))
stats = [G.const(params[n], name=n) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
weight = G.const(params["conv1_weight"], name="conv1_weight")
y = G.nn.batch_norm(G.nn.relu(G.nn.conv2d(x, weight, padding=1)), *stats, epsilon=EPSILON)
two_convs = G.Function([x], G.nn.relu(G.nn.conv2d(y, weight, padding=1)))
optimized = G.optimize(two_convs, rules=DIRECT, disabled_passes=["fuse_ops"])
print("conv -> relu -> batch_norm -> conv -> relu: the batch norm becomes multiply + add, but cannot fold\n"
      "into the first conv's weights across the relu; it stays an epilogue of the first conv:\n")
print(optimized)
print()
print(G.explain_fusion(optimized, DIRECT))
first_np = batch_norm_reference(np.maximum(conv_np, 0.0))
check("conv -> relu -> batch_norm -> conv -> relu", G.build(two_convs, rules=DIRECT)(data_np),
      np.maximum(conv2d_reference(first_np.astype(np.float32), params["conv1_weight"]), 0.0))
rules = G.FusionRules(winograd=False).disallow("out_elemwise_fusable", "broadcast")
allowed = ", ".join(map(str, sorted(rules.may_follow[G.Pattern.OUT_ELEMWISE_FUSABLE])))
print(f"\nWith rules a user changed for a target (only {allowed} may follow a conv):")
print(G.explain_fusion(G.optimize(bound, rules=rules, disabled_passes=["fuse_ops"]), rules))
check("the block under the changed rules", G.build(bound, rules=rules)(data_np))

print("\n=== 6. Time: fused vs unfused (median of the whole graph per call) ===")
fused_timing, unfused_timing = fused.benchmark(data_np, repeat=REPEAT), unfused.benchmark(data_np, repeat=REPEAT)
t_fused, t_unfused = fused_timing.median, unfused_timing.median
print(f"fused   ({len(fused.kernels)} kernel):  {t_fused * 1e3:8.3f} ms")
print(f"unfused ({len(unfused.kernels)} kernels): {t_unfused * 1e3:8.3f} ms")
print(f"fusion speedup: {ratio_text(t_unfused, t_fused, t_unfused - unfused_timing.min, t_fused - fused_timing.min)} (the conv dominates; fusion saves the two extra passes over "
      "its output)")
