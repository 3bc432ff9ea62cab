"""Tutorial 2: fuse a convolution with what follows it, with compute_at and compute_inline.
========================================================================================

Run it:  python tutorials/02_fuse_conv_relu.py          (1 x 32 x 56 x 56, well under 30 s)
         python tutorials/02_fuse_conv_relu.py --quick  (1 x 4 x 8 x 8, a smoke test; or TESCHED_QUICK=1)

The pipeline is a small piece of a convolutional network:

    pad    = zero-pad data by 1 pixel           (elementwise on the padded grid: an if_then_else)
    conv   = 3x3 convolution of pad             (a reduction over input channels rc and offsets ry, rx)
    affine = conv * scale[f] + shift[f]         (elementwise: a folded batch-norm, or a bias)
    relu   = max(affine, 0)                     (elementwise)

By default every stage is computed in full, one after another: four `produce` blocks, three full-size
temporary tensors that are written once and read once from main memory. Fusion removes that traffic.
tesched has two ways to fuse, and this tutorial shows both:

- ``s[P].compute_inline()`` substitutes P's *expression* into its readers. P gets no loops and no buffer.
  Only a stage without a reduction can be inlined (an expression per element); inlining a reduction
  would have to repeat the whole sum at every use, so tesched refuses with a ScheduleError.
- ``s[P].compute_at(s[C], loop)`` keeps P a stage with its own loops, but computes it inside ``loop`` of
  its consumer C: at each iteration of that loop, exactly the region of P that this iteration of C reads.
  That region is the *footprint*, computed by isl from C's loops and index expressions; P gets a local
  buffer of the footprint's size, allocated inside the loop. Works for reductions (conv) and for
  consumers that read a neighbourhood (a 3x3 window needs 3 rows of its input per output row: a halo).

Every step prints the loop IR (look at where each `produce` block sits and at the `allocate` lines),
checks the kernel against NumPy and prints its time (median of several runs).
"""

import numpy as np

import tesched as ts
from tesched.tools.demo import conv2d_reference
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "1 x 4 x 8 x 8, a smoke test")).quick
CHANNELS, SIZE = (4, 8) if QUICK else (32, 56)   # channels in = filters out; image height = width
ROWS = 4                                         # output rows per tile in steps 4 and 5
REPEAT = 3 if QUICK else 10

rng = np.random.default_rng(0)
data_np = rng.standard_normal((1, CHANNELS, SIZE, SIZE), dtype=np.float32)
weight_np = rng.standard_normal((CHANNELS, CHANNELS, 3, 3), dtype=np.float32)
scale_np = rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32)
shift_np = rng.standard_normal(CHANNELS, dtype=np.float32)
expected = np.maximum(conv2d_reference(data_np, weight_np) * scale_np[:, None, None]
                      + shift_np[:, None, None], 0.0)


def declare():
    """The pipeline (what to compute). Returns its tensors by name."""
    data = ts.placeholder((1, CHANNELS, SIZE, SIZE), name="data")
    weight = ts.placeholder((CHANNELS, CHANNELS, 3, 3), name="weight")
    scale = ts.placeholder((CHANNELS,), name="scale")
    shift = ts.placeholder((CHANNELS,), name="shift")
    inside = lambda y, x: ts.all(y >= 1, y <= SIZE, x >= 1, x <= SIZE)  # noqa: E731
    pad = ts.compute((1, CHANNELS, SIZE + 2, SIZE + 2),
                     lambda n, c, y, x: ts.if_then_else(inside(y, x), data[n, c, y - 1, x - 1], 0.0),
                     name="pad")
    rc = ts.reduce_axis((0, CHANNELS), name="rc")
    ry = ts.reduce_axis((0, 3), name="ry")
    rx = ts.reduce_axis((0, 3), name="rx")
    conv = ts.compute((1, CHANNELS, SIZE, SIZE),
                      lambda n, f, y, x: ts.sum(pad[n, rc, y + ry, x + rx] * weight[f, rc, ry, rx],
                                                axis=[rc, ry, rx]),
                      name="conv")
    affine = ts.compute(conv.shape, lambda n, f, y, x: conv[n, f, y, x] * scale[f] + shift[f], name="affine")
    relu = ts.compute(conv.shape, lambda n, f, y, x: ts.maximum(affine[n, f, y, x], 0.0), name="relu")
    return dict(data=data, weight=weight, scale=scale, shift=shift, pad=pad, conv=conv, affine=affine,
                relu=relu)


T = declare()
ARGS = [T["data"], T["weight"], T["scale"], T["shift"], T["relu"]]


def show(step: str, s: ts.Schedule) -> None:
    """Print the loop IR, build, check against NumPy, time."""
    print(f"\n=== {step} ===")
    lowered = ts.lower(s, ARGS, name="conv_relu")
    print(lowered)
    kernel = ts.build(lowered)                    # build() also accepts what lower() returned
    out = kernel(data_np, weight_np, scale_np, shift_np)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    timing = kernel.benchmark(data_np, weight_np, scale_np, shift_np, out, repeat=REPEAT)
    produce_lines = [line for line in str(lowered).splitlines() if line.lstrip().startswith("produce ")]
    at_root = [line.split()[1] for line in produce_lines if line.startswith("  produce ")]  # body indent: 2
    nested = [line.split()[1] for line in produce_lines if not line.startswith("  produce ")]
    print(f"-> matches NumPy; loop nests at the root: {', '.join(at_root)}; computed inside them: "
          f"{', '.join(nested) or 'none'}; {timing}")


# A schedule only records what is asked of it, so one schedule can grow step by step, and each step
# lowers and builds the schedule as it is at that point.
s = ts.create_schedule(T["relu"].op)

# First the loop orders, kept by every step (this is not fusion yet, only how each stage loops):
# conv runs its reduction outside a row, so that its innermost loop walks along the row (x, vectorized);
# relu runs over tiles of ROWS rows (in parallel), then filters f, then the rows of the tile.
n, f, y, x = s[T["conv"]].op.axis
rc, ry, rx = s[T["conv"]].op.reduce_axis
s[T["conv"]].reorder(n, f, y, rc, ry, rx, x)
s[T["conv"]].vectorize(x)
r_n, r_f, r_y, r_x = s[T["relu"]].op.axis
tile, row = s[T["relu"]].split(r_y, factor=ROWS)
s[T["relu"]].reorder(r_n, tile, r_f, row, r_x)
s[T["relu"]].parallel(tile)
s[T["relu"]].vectorize(r_x)

# %%
# Step 1: no fusion. Four produce blocks at the root, three temporary tensors (pad, conv, affine) allocated
# in full ("allocate conv[float32 * 1 * 32 * 56 * 56]").
show("1. every stage at the root", s)

# %%
# Step 2: compute_inline of an elementwise stage. `affine` is conv * scale + shift, one expression per
# element, so it can be substituted into relu: its produce block and its buffer disappear, and relu
# reads `max(conv[...] * scale[f] + shift[f], 0)`. The conv block stays: it is a reduction, and
# s[conv].compute_inline() is refused (shown below); to fuse it, use compute_at (step 3).
s[T["affine"]].compute_inline()
show("2. compute_inline the elementwise affine stage", s)
try:
    s[T["conv"]].compute_inline()
except ts.ScheduleError as err:
    print(f"(as expected, a reduction cannot be inlined: {err})")

# %%
# Step 3: compute_at. conv is computed inside relu's filter loop f: the `produce conv` block moves into
# relu's loop nest, so conv and relu are one loop nest. Per iteration of f (inside a tile of ROWS rows),
# relu reads conv at one filter and ROWS rows: that footprint is the size of conv's buffer, allocated
# inside the loop ("allocate conv[float32 * 1 * 1 * 4 * 56]"), small enough to stay in cache. The
# "region ... starting at" comment gives the buffer's origin for the current iteration.
s[T["conv"]].compute_at(s[T["relu"]], r_f)
show("3. compute_at conv inside relu's filter loop", s)

# %%
# Step 4: compute_at with a halo. pad is computed inside relu's tile loop. The tile's conv rows read pad
# rows y + ry for ry in 0..2: ROWS + 2 rows of every input channel, so the buffer is
# `pad[float32 * 1 * C * (ROWS + 2) * (SIZE + 2)]`. Neighbouring tiles both compute the 2 shared rows:
# the note "pad: computes ...x its points" above the IR counts that recomputation (isl counts it too).
s[T["pad"]].compute_at(s[T["relu"]], tile)
show("4. also compute_at pad inside relu's tile loop (footprint with halo)", s)

# %%
# Step 5: compute_inline of pad instead (the last placement asked for a stage is the one that counts).
# pad is elementwise, so it can be inlined too: no pad buffer at all, and conv reads
# `select(inside, data[...], 0)`. But the select now sits in conv's innermost loop, executed 9 * C times
# per output element, and the compiler cannot vectorize a conditional load as well as a plain one:
# compare the times of steps 4 and 5. Inlining saves memory; computing at a loop can save work. The IR
# tells which one you wrote.
s[T["pad"]].compute_inline()
show("5. compute_inline pad instead (no buffer, a select in the inner loop)", s)
