"""Tutorial 5: tensorize a matrix product with a micro-kernel, and fuse bias + relu around it.
===========================================================================================

Run it:  python tutorials/05_tensorize.py          (512 x 512 x 512, well under 30 s)
         python tutorials/05_tensorize.py --quick  (64 x 64 x 64, a smoke test; or TESCHED_QUICK=1)

A *tensor intrinsic* is a small computation with a hand-written implementation: a 4 x 16 tile of a
matrix product in C, say, or a GEMM micro-kernel written with AVX-512 intrinsics. You declare it with a
``ts.compute`` (what it computes) and a ``ts.CIntrinsic`` (C functions that compute it), then ask
``s[T].tensorize(loop, intrin)``: the loops of T from ``loop`` inward must compute exactly the intrinsic's
computation on some region of the tensors, and are replaced by one call. tesched checks that structurally
(same expression, same extents, index maps that make each region a strided box); when something differs
it raises ``ts.TensorizeError`` saying what, never falls back silently.

The calling convention is fixed: for each input of the intrinsic (in the order its compute reads them),
then its output, a pointer to the region's first element followed by one ``int64_t`` stride (in elements)
per dimension, outermost first.

Steps:

1. declare a 4 x 16 GEMM tile intrinsic in plain C and tensorize a matrix product with it (the whole
   reduction in each call: the ``body`` function);
2. split the reduction outside the tile: the output tile is cleared once (``reset``) and each slice of
   the reduction accumulates (``update``): TVM's three-part intrinsics;
3. the intrinsic tesched ships for the host: ``tesched.intrin``'s micro-kernel (AVX-512, AVX2 or C) in a
   blocked, packed, parallel schedule, against the same schedule with tesched's own register tile;
4. a fused epilogue in one intrinsic: ``max(A @ B + bias, 0)`` per tile, product included;
5. the other layout: the intrinsic computes the product tile, the epilogue stays a (vectorized) loop;
6. the trap: an epilogue applied to every partial sum, and the TensorizeError that prevents it.

Every step prints the loop IR, checks the kernel against NumPy, and steps 3 to 5 time it.
"""

import numpy as np

import tesched as ts
from tesched.intrin import dense_schedule, gemm_bias_relu_microkernel, gemm_microkernel, select_isa
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "64 x 64 x 64, a smoke test")).quick
SIZE = 64 if QUICK else 512     # M = N = K
SLICE = 16                      # reduction slice of step 2
REPEAT = 3 if QUICK else 20

rng = np.random.default_rng(0)
a_np = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
b_np = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
bias_np = rng.standard_normal(SIZE, dtype=np.float32)
product_np = a_np @ b_np
relu_np = np.maximum(product_np + bias_np, 0.0)
speeds: list[tuple[str, float]] = []


def declare(epilogue: bool = False) -> list[ts.Tensor]:
    """C = A @ B, and with ``epilogue`` out = max(C + bias, 0). Returns the kernel arguments."""
    A = ts.placeholder((SIZE, SIZE), name="A")
    B = ts.placeholder((SIZE, SIZE), name="B")
    k = ts.reduce_axis((0, SIZE), name="k")
    C = ts.compute((SIZE, SIZE), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    if not epilogue:
        return [A, B, C]
    bias = ts.placeholder((SIZE,), name="bias")
    out = ts.compute(C.shape, lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="out")
    return [A, B, bias, out]


def epilogue_tiles():
    """out = max(A @ B + bias, 0) tiled by 8 x 32, with C computed at the tile loop j.outer of out (so
    each tile of out has its own tile of C). Returns the arguments, the schedule, C, out, and the loops
    i.inner and j.inner of out."""
    args = declare(epilogue=True)
    out = args[-1]
    C = out.op.input_tensors[0]
    s = ts.create_schedule(out.op)
    io, jo, ii, ji = s[out].tile(*out.op.axis, 8, 32)
    s[C].compute_at(s[out], jo)
    return args, s, C, out, ii, ji


def show(step: str, s: ts.Schedule, args: list[ts.Tensor], timed: bool = False) -> None:
    """Print the loop IR, build, check against NumPy (and time)."""
    print(f"\n=== {step} ===")
    lowered = ts.lower(s, args, name="gemm")
    print(lowered)
    kernel = ts.build(lowered)
    inputs = [a_np, b_np] + ([bias_np] if len(args) == 4 else [])
    out = kernel(*inputs)
    np.testing.assert_allclose(out, relu_np if len(args) == 4 else product_np, rtol=1e-4, atol=1e-3)
    message = "-> matches NumPy"
    if timed:
        timing = kernel.benchmark(*inputs, out, repeat=REPEAT)
        speeds.append((step, 2 * SIZE ** 3 / timing.median / 1e9))
        message += f"; {speeds[-1][1]:.1f} GFLOP/s ({timing})"
    print(message)


# %%
# Step 1: declare an intrinsic. The computation is a small matrix product c[4 x 16] = a[4 x kc] @ b[kc x 16]
# over placeholders of its own; its C functions get (a, sa0, sa1, b, sb0, sb1, c, sc0, sc1). The strides
# let one function serve any region: a tile of A has row stride SIZE, a tile of a packed copy another.
def tile_intrinsic(kc: int) -> ts.TensorIntrin:
    a = ts.placeholder((4, kc), name="a")
    b = ts.placeholder((kc, 16), name="b")
    k = ts.reduce_axis((0, kc), name="k")
    c = ts.compute((4, 16), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="c")
    name = f"mm4x16x{kc}"
    source = f"""
static void {name}_update(const float *a, int64_t sa0, int64_t sa1, const float *b, int64_t sb0, int64_t sb1,
                          float *c, int64_t sc0, int64_t sc1) {{
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < {kc}; k++)
      for (int j = 0; j < 16; j++) c[i * sc0 + j * sc1] += a[i * sa0 + k * sa1] * b[k * sb0 + j * sb1];
}}
static void {name}_reset(float *c, int64_t sc0, int64_t sc1) {{
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 16; j++) c[i * sc0 + j * sc1] = 0;
}}
static void {name}_body(const float *a, int64_t sa0, int64_t sa1, const float *b, int64_t sb0, int64_t sb1,
                        float *c, int64_t sc0, int64_t sc1) {{
  {name}_reset(c, sc0, sc1);
  {name}_update(a, sa0, sa1, b, sb0, sb1, c, sc0, sc1);
}}
"""
    impl = ts.CIntrinsic(source=source, body=f"{name}_body", reset=f"{name}_reset", update=f"{name}_update")
    return ts.decl_tensor_intrin(c.op, impl, name=name)


# Tile C by 4 x 16 and tensorize at i.inner: the loops i.inner, j.inner and k (the whole reduction) must
# be the intrinsic's i, j and k. They are, so each tile is one call of the body, with A's tile starting at
# row 4 * i.outer, B's at column 16 * j.outer, and the strides of the full matrices.
args = declare()
A, B, C = args
s = ts.create_schedule(C.op)
io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 16)
s[C].tensorize(ii, tile_intrinsic(SIZE))
show("1. tensorize each 4 x 16 tile with a hand-written intrinsic (body: the whole reduction)", s, args)

# %%
# Step 2: split the reduction and keep its outer loop outside the tile. Each call now sees SLICE terms of
# the sum, so one call cannot produce the result: tesched clears the tile once, before the reduction
# (reset), and accumulates each slice (update). An intrinsic without reset= and update= is refused here.
args = declare()
A, B, C = args
s = ts.create_schedule(C.op)
io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 16)
ko, ki = s[C].split(C.op.reduce_axis[0], factor=SLICE)
s[C].reorder(io, jo, ko, ii, ji, ki)
s[C].tensorize(ii, tile_intrinsic(SLICE))
show(f"2. reduction split by {SLICE} outside the tile: reset once, then update per slice", s, args)

# %%
# Step 3: the intrinsic tesched ships. tesched.intrin.gemm_microkernel(mr, nr, kc) is the same kind of
# declaration with C written with <immintrin.h>: mr x nr/16 AVX-512 accumulators (AVX2 + FMA, or plain C,
# when the host lacks AVX-512; TESCHED_INTRIN_ISA=c forces the plain one). dense_schedule uses it in a
# blocked schedule: nr output columns per iteration of a parallel loop, a packed copy of B's K x nr panel
# (cache_read at that loop), and per mr rows a tile (cache_write) computed by one call. With
# inner="codegen" the same schedule computes the tile with tesched's own code (reduction outside, rows
# unrolled, columns vectorized): the two differ only inside the tile. parallel=False keeps the column
# loop on one core here, as in the steps after, so that the times compare work, not thread start-up.
print(f"\n(the micro-kernel is written for {select_isa()}; its intrinsic is "
      f"{gemm_microkernel(8, 32, SIZE).name})")
args = declare()
show("3a. dense_schedule with tesched's register tile (inner='codegen')",
     dense_schedule(args[-1], inner="codegen", parallel=False), args, timed=True)
args = declare()
show("3b. dense_schedule with the micro-kernel intrinsic (inner='intrinsic')",
     dense_schedule(args[-1], inner="intrinsic", parallel=False), args, timed=True)

# %%
# Step 4: a fused epilogue inside one intrinsic. gemm_bias_relu_microkernel declares::
#
#     c[i, j] = sum(a[i, k] * b[k, j]);  o[i, j] = max(c[i, j] + bias[j], 0)
#
# a two-stage computation. tesched matches it when C is computed at the loop right around the tensorized
# loops of out (compute_at at j.outer): out's expression matches o's, its read of C matches c's stage, and
# the call computes both. No `produce C` is left: the product never leaves registers. (Steps 4 and 5 use
# the primitives directly and read B in place; dense_schedule(out, inner="fused") or inner="intrinsic"
# builds the same tiles with B packed and the column loop parallel.)
args, s, C, out, ii, ji = epilogue_tiles()
s[out].tensorize(ii, gemm_bias_relu_microkernel(8, 32, SIZE))
show("4. gemm + bias + relu as one intrinsic call per 8 x 32 tile", s, args, timed=True)

# %%
# Step 5: the other common layout. The intrinsic covers the product tile only; C is computed at out's
# j.outer into a small local buffer, and out's own loops (vectorized) apply bias and relu to it.
args, s, C, out, ii, ji = epilogue_tiles()
s[C].tensorize(C.op.axis[0], gemm_microkernel(8, 32, SIZE))
s[out].vectorize(ji)
show("5. gemm intrinsic for the product tile, bias + relu as a fused loop", s, args, timed=True)

# %%
# Step 6: the trap. Split C's reduction and tensorize out with a fused intrinsic over one slice: every call
# would see one slice of the sum and apply relu (and the bias) to that partial sum. But relu(x1) + relu(x2)
# is not relu(x1 + x2): the answer would be wrong, with no error. tesched refuses it: the intrinsic's
# product stage c can only absorb C's *whole* reduction (their reduction extents must be equal), so a
# fused epilogue is never matched against a partial sum. (Splitting C's reduction while the intrinsic
# covers all of it is harmless: the call computes the whole sum, the split has nothing left to do.)
args, s, C, out, ii, ji = epilogue_tiles()
s[C].split(C.op.reduce_axis[0], factor=SLICE)
s[out].tensorize(ii, gemm_bias_relu_microkernel(8, 32, SLICE))
print("\n=== 6. the trap: an epilogue on every partial sum (refused), and the right way to split ===")
try:
    ts.lower(s, args)
    raise AssertionError("a per-partial-sum epilogue was accepted")
except ts.TensorizeError as err:
    print(f"TensorizeError: {err}")
halves = np.split(np.arange(SIZE), 2)
per_partial_sum = sum(np.maximum(a_np[:, h] @ b_np[h, :] + bias_np / 2, 0) for h in halves)
print(f"(relu applied per slice, with two slices sharing the bias, would be off by up to "
      f"{np.abs(per_partial_sum - relu_np).max():.2f})")

# The right way to split the reduction: the intrinsic computes the product only (reset, then one update
# per slice), and the epilogue stays a loop that runs once the whole sum is there: step 5's layout.
args, s, C, out, ii, ji = epilogue_tiles()
ci, cj = C.op.axis
ko, ki = s[C].split(C.op.reduce_axis[0], factor=SLICE)
s[C].reorder(ko, ci, cj, ki)
s[C].tensorize(ci, gemm_microkernel(8, 32, SLICE))
s[out].vectorize(ji)
lowered = ts.lower(s, args, name="gemm")
print(lowered)
kernel = ts.build(lowered)
np.testing.assert_allclose(kernel(a_np, b_np, bias_np), relu_np, rtol=1e-4, atol=1e-3)
print("-> matches NumPy")

print(f"\n=== summary: {SIZE} x {SIZE} x {SIZE} float32, GFLOP/s at the median of {REPEAT} runs ===")
for step, gflops in speeds:
    print(f"{gflops:8.1f}  {step}")
