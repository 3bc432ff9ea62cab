"""Tutorial 1: schedule a matrix multiplication step by step.
==========================================================

Run it:  python tutorials/01_schedule_basics.py          (512 x 512, well under 30 s)
         python tutorials/01_schedule_basics.py --quick  (64 x 64, a smoke test; or TESCHED_QUICK=1)

tesched separates *what* to compute (``ts.compute``) from *how* to run it (the schedule). The program below
never changes: C = A @ B. Only the schedule changes, one primitive per step, and after each step the
tutorial prints the loop nest that ``ts.lower`` produces, checks the built kernel against NumPy, and
prints its speed (GFLOP/s at the median of several runs). The machine this runs on decides the numbers;
read them as "what changed", not as a promise.
"""
import statistics
import timeit

import numpy as np

import tesched as ts
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "64 x 64, a smoke test")).quick
N = 64 if QUICK else 512      # matrix size
TILE = 32                     # tile edge (32 x 32 floats = 4 KiB, fits in the L1 cache)
K_SPLIT = 8                   # the reduction is walked in chunks of 8
REPEAT = 3 if QUICK else 10   # timed runs per step; the median is reported

rng = np.random.default_rng(0)
a_np = rng.standard_normal((N, N), dtype=np.float32)
b_np = rng.standard_normal((N, N), dtype=np.float32)
expected = a_np @ b_np
speeds: list[tuple[str, float, float]] = []   # (step, GFLOP/s at the median, at the fastest run)


def declare():
    """The algorithm: C[i, j] = sum over k of A[i, k] * B[k, j]. Nothing here says how to loop."""
    A = ts.placeholder((N, N), name="A")
    B = ts.placeholder((N, N), name="B")
    k = ts.reduce_axis((0, N), name="k")
    C = ts.compute((N, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def show(step: str, s: ts.Schedule, args: list) -> None:
    """Print the loop IR of the schedule as it is now, build it, check it against NumPy, time it."""
    print(f"\n=== {step} ===")
    print(ts.lower(s, args))
    kernel = ts.build(s, args, name="matmul")
    c_np = kernel(a_np, b_np)                     # outputs omitted: allocated and returned
    np.testing.assert_allclose(c_np, expected, rtol=1e-4, atol=1e-3)
    timing = kernel.benchmark(a_np, b_np, c_np, repeat=REPEAT)   # median and min seconds per call
    flops = 2 * N ** 3
    speeds.append((step, flops / timing.median / 1e9, flops / timing.min / 1e9))
    print(f"-> matches NumPy; {flops / timing.median / 1e9:.2f} GFLOP/s ({timing})")


# A schedule only records the primitives applied to it, so we can apply one, look at the result, apply
# the next, and look again. Steps 0 to 4 grow one schedule.

# %%
# Step 0: the default schedule. One loop per axis, in declaration order: i, j, then the reduction k.
# The reduction becomes two statements: C[i, j] = 0 (the init), then C[i, j] += ... over k. The inner
# loop k reads B[k, j] down a column: one cache line per multiply-add.
A, B, C = declare()
s = ts.create_schedule(C.op)
show("0. default schedule", s, [A, B, C])

# %%
# Step 1: tile. `tile(i, j, 32, 32)` splits i into i.outer (which tile) and i.inner (which row in the tile),
# the same for j, and orders them i.outer, j.outer, i.inner, j.inner. The work per tile is the same, but
# a 32 x 32 block of C stays in cache while it is computed. Loop names say where they came from.
i, j = s[C].op.axis                                # Tensor.op.axis: the data-parallel axes
(k,) = s[C].op.reduce_axis                         # Tensor.op.reduce_axis: the reduction axes
io, jo, ii, ji = s[C].tile(i, j, TILE, TILE)
show("1. tile i, j by 32 x 32", s, [A, B, C])

# %%
# Step 2: split the reduction and reorder. `split(k, factor=8)` gives k.outer and k.inner. `reorder` puts
# the reduction above the rows of the tile, so the innermost loop is now j.inner: it walks along a row of
# B and a row of C (contiguous memory), with A[i, k] fixed. Reordering is legal because a sum does not
# care in which order its terms are added (up to rounding), and tesched checks the dependences.
ko, ki = s[C].split(k, factor=K_SPLIT)
s[C].reorder(io, jo, ko, ii, ki, ji)
show("2. split k by 8; reorder to i.outer, j.outer, k.outer, i.inner, k.inner, j.inner", s, [A, B, C])

# %%
# Step 3: vectorize the innermost loop. The loop is marked `vectorized` in the IR and becomes
# `#pragma omp simd` in C: the compiler computes 16 floats per instruction with AVX-512 (8 with AVX2).
# Vectorize a loop whose accesses are contiguous and whose trip count is known, as j.inner here.
s[C].vectorize(ji)
show("3. vectorize j.inner", s, [A, B, C])

# %%
# Step 4: run the rows of tiles in parallel. `parallel(io)` becomes an OpenMP `parallel for`: each core
# takes some values of i.outer. Only a data-parallel loop can be parallel: `parallel(k.outer)` raises
# ScheduleError, since all its iterations add into the same C[i, j].
s[C].parallel(io)
show("4. parallel i.outer", s, [A, B, C])
try:
    s[C].parallel(ko)
except ts.ScheduleError as err:
    print(f"(as expected, parallel over the reduction is refused: {err})")

# %%
# Step 5: a write cache, placed with compute_at. `cache_write(C, "local")` moves the sum into a new stage
# C.local, and C becomes a copy of it; it must come before C's loops are split, so we start a new
# schedule. `compute_at(s[C], jo)` computes C.local inside loop j.outer of C: per iteration, exactly the
# part of C.local that this iteration of C reads (its *footprint*, computed by isl), into a buffer
# allocated inside that loop. Read the `allocate C.local[float32 * 32 * 32]` line in the IR: one tile,
# whose origin ("region of C.local starting at ...") moves with the tile. The accumulators now live in a
# small local array that does not alias the output, which helps the compiler keep them in registers.
A, B, C = declare()
s = ts.create_schedule(C.op)
CL = s.cache_write(C, "local")
i, j = s[C].op.axis
io, jo, ii, ji = s[C].tile(i, j, TILE, TILE)
s[C].vectorize(ji)
s[C].parallel(io)
s[CL].compute_at(s[C], jo)
ci, cj = s[CL].op.axis
(k,) = s[CL].op.reduce_axis
ko, ki = s[CL].split(k, factor=K_SPLIT)
s[CL].reorder(ko, ci, ki, cj)
s[CL].vectorize(cj)
show("5. write cache C.local computed at C's j.outer", s, [A, B, C])

# %%
# Step 6: a packed copy of B, placed with compute_at. `cache_read(B, "packed", [CL])` makes C.local read a
# copy B.packed instead of B. Computed at j.outer of C, the copy holds the footprint of one tile of
# C.local in B: every k, 32 columns. That panel is contiguous (rows of 32 floats instead of rows of N),
# so the inner loop streams through it. The note above the IR ("B.packed: computes ...x its points")
# says how often each element is copied: once per i.outer (N / 32 times), the price of packing inside
# the tile loops; with j.outer as the outer (parallel) loop, each panel would be packed once.
BP = s.cache_read(B, "packed", [CL])
s[BP].compute_at(s[C], jo)
s[BP].vectorize(s[BP].op.axis[1])
show("6. packed panel B.packed computed at C's j.outer", s, [A, B, C])

# The same product through NumPy (which calls an optimized BLAS library), for scale.
c_np = np.empty_like(expected)
numpy_times = timeit.repeat(lambda: np.matmul(a_np, b_np, out=c_np), number=1, repeat=REPEAT)
speeds.append(("NumPy a @ b", 2 * N ** 3 / statistics.median(numpy_times) / 1e9, 2 * N ** 3 / min(numpy_times) / 1e9))
# On a busy machine the median can be far from the fastest run: both are shown.
print(f"\n=== summary: {N} x {N} float32, GFLOP/s over {REPEAT} runs ===")
print(f"{'median':>8}  {'fastest':>8}  step")
for step, at_median, at_fastest in speeds:
    print(f"{at_median:8.2f}  {at_fastest:8.2f}  {step}")
