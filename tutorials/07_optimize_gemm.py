"""Tutorial 7: how to optimize GEMM on CPU, step by step (the steps of TVM's tutorial of that name).
=================================================================================================

Run it:  python tutorials/07_optimize_gemm.py          (1024 x 1024 x 1024; about a minute)
         python tutorials/07_optimize_gemm.py --quick  (64 x 64 x 64, a smoke test; or TESCHED_QUICK=1)

C = A @ B in float32 never changes; each step adds scheduling primitives to the previous one, checks the
kernel against NumPy, and prints GFLOP/s at the median (and the best) of several timed calls:

1. default: one loop per axis, i, j, k: B is read down a column, one cache line per multiply-add;
2. blocking: 32 x 32 tiles of C and the reduction split by 4, so a tile's data stays in cache;
3. vectorize: the innermost loop over a tile row becomes SIMD code (explicit vector types);
4. loop permutation: the tile rows go outside the reduction step, so the innermost loop walks a row of
   B and of C, contiguous;
5. array packing: each 32-column panel of B is copied into a contiguous local buffer (``cache_read``)
   before the tiles that read it, and the tiles are visited panel by panel;
6. write cache: a tile of 8 x 32 accumulates in a local buffer (``cache_write``) whose rows are unrolled
   and columns vectorized: sixteen vector registers updated by FMAs, written to C once per tile;
7. parallel: the panels are spread over the cores (OpenMP).

The figures depend on the machine and on whatever else runs on it; compare the steps of one run. Step 7
is, up to the unrolled reduction step, what ``tesched.nn.matmul``'s default schedule does; it and NumPy's
``@`` (OpenBLAS) are timed at the end for scale.
"""
import statistics
import time

import numpy as np

import tesched as ts
from tesched.tools.demo import declare_matmul
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "64 x 64 x 64, a smoke test")).quick
N = 64 if QUICK else 1024
TILE = 32               # blocking: 32 x 32 tiles of C
K_SPLIT = 4             # the reduction walked in chunks of 4
REGISTER_ROWS = 8       # write cache: 8 rows x 32 columns of C in registers (2 AVX-512 vectors a row)
FLOPS = 2.0 * N ** 3

rng = np.random.default_rng(0)
a_np = rng.standard_normal((N, N), dtype=np.float32)
b_np = rng.standard_normal((N, N), dtype=np.float32)
expected = a_np.astype(np.float64) @ b_np.astype(np.float64)


def declare():
    """The algorithm, C[i, j] = sum over k of A[i, k] * B[k, j] (the same declaration as the demo's)."""
    return declare_matmul(N)


def run(step: str, s: ts.Schedule, args: list, show_ir: bool = False) -> None:
    """Build, check against NumPy, time (median and best), print."""
    print(f"\n=== {step} ===")
    kernel = ts.build(s, args, name="gemm")
    if show_ir:
        print(kernel.lowered)
    c_np = kernel(a_np, b_np)
    np.testing.assert_allclose(c_np, expected, rtol=1e-4, atol=1e-3 * np.sqrt(N))
    slow = step.startswith("1.")
    timing = kernel.benchmark(a_np, b_np, c_np, repeat=3 if QUICK or slow else 15, warmup=0 if slow else 1)
    print(f"-> matches NumPy; {FLOPS / timing.median / 1e9:7.2f} GFLOP/s at the median "
          f"({FLOPS / timing.min / 1e9:.2f} best; {timing})")


def blocked():
    """Steps 2-4: the tiles and the split reduction; returns the schedule and its loops."""
    A, B, C = declare()
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, jo, ii, ji = s[C].tile(i, j, TILE, TILE)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], K_SPLIT)
    return s, (A, B, C), (io, jo, ko, ki, ii, ji)


A, B, C = declare()
run("1. default: i, j, k loops", ts.create_schedule(C.op), [A, B, C])

s, args, (io, jo, ko, ki, ii, ji) = blocked()
s[args[2]].reorder(io, jo, ko, ki, ii, ji)
run("2. blocking: 32 x 32 tiles, reduction split by 4", s, list(args))

s, args, (io, jo, ko, ki, ii, ji) = blocked()
s[args[2]].reorder(io, jo, ko, ki, ii, ji)
s[args[2]].vectorize(ji)
run("3. vectorize the tile row", s, list(args))

s, args, (io, jo, ko, ki, ii, ji) = blocked()
s[args[2]].reorder(io, jo, ko, ii, ki, ji)
s[args[2]].vectorize(ji)
run("4. loop permutation: tile rows outside the reduction step", s, list(args))


def packed(write_cache: bool, parallel: bool):
    """Steps 5-7: panels of B packed by cache_read; optionally the register tile and the threads."""
    A, B, C = declare()
    s = ts.create_schedule(C.op)
    CC = s.cache_write(C, "local") if write_cache else None   # before C's loops change
    tile_rows = REGISTER_ROWS if write_cache else TILE
    i, j = s[C].op.axis
    io, ii = s[C].split(i, tile_rows)
    jo, ji = s[C].split(j, TILE)
    s[C].reorder(jo, io, ii, ji)                      # panel by panel: one packed panel serves all rows
    s[C].vectorize(ji)
    if CC is not None:                                # the tile accumulates here (promoted to registers)
        s[CC].compute_at(s[C], io)
        ci, cj = s[CC].op.axis
        ko, ki = s[CC].split(s[CC].op.reduce_axis[0], K_SPLIT)
        s[CC].reorder(ko, ki, ci, cj)
        s[CC].unroll(ki)
        s[CC].unroll(ci)
        s[CC].vectorize(cj)
        reader = s[CC]
    else:
        ko, ki = s[C].split(s[C].op.reduce_axis[0], K_SPLIT)
        s[C].reorder(jo, io, ko, ii, ki, ji)
        reader = s[C]
    BB = s.cache_read(B, "local", [reader])            # the panel B[:, 32 jo : 32 jo + 32], contiguous
    s[BB].compute_at(s[C], jo)
    s[BB].vectorize(s[BB].op.axis[1])
    if parallel:
        s[C].parallel(jo)
    return s, [A, B, C]


run("5. array packing: panels of B copied by cache_read", *packed(write_cache=False, parallel=False),
    show_ir=True)
run("6. write cache: an 8 x 32 register tile (cache_write)", *packed(write_cache=True, parallel=False),
    show_ir=True)
run(f"7. parallel: panels over {ts.get_num_threads()} threads", *packed(write_cache=True, parallel=True))

print("\n=== For scale: tesched.nn.matmul's default schedule and NumPy ===")
A, B, C = declare()
product = ts.nn.matmul(A, B)
library = ts.build(ts.nn.default_schedule(product), [A, B, product], name="nn_matmul")
np.testing.assert_allclose(library(a_np, b_np), expected, rtol=1e-4, atol=1e-3 * np.sqrt(N))
timing = library.benchmark(a_np, b_np, repeat=3 if QUICK else 15)
print(f"-> matches NumPy; nn.matmul: {FLOPS / timing.median / 1e9:7.2f} GFLOP/s at the median "
      f"({FLOPS / timing.min / 1e9:.2f} best)")
c_np = np.empty_like(a_np)
times = []
for _ in range(3 if QUICK else 15):
    start = time.perf_counter()
    np.matmul(a_np, b_np, out=c_np)
    times.append(time.perf_counter() - start)
print(f"NumPy @ (OpenBLAS):    {FLOPS / statistics.median(times) / 1e9:7.2f} GFLOP/s at the median "
      f"({FLOPS / min(times) / 1e9:.2f} best)")
