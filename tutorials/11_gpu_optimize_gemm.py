"""Tutorial 11: how to optimize GEMM on a GPU, step by step (the structure of TVM's GPU GEMM schedules).
=====================================================================================================

Run it:  python tutorials/11_gpu_optimize_gemm.py          (512 x 512 x 512)
         python tutorials/11_gpu_optimize_gemm.py --quick  (70 x 66 x 33, a smoke test; or TESCHED_QUICK=1)

C = A @ B in float32 never changes; each step changes where its data lives on the GPU:

1. a thread per element of C (``gpu_tile``): every multiply-add reads A and B from global memory;
2. shared memory: the reduction is walked ``KTILE`` at a time outside the thread loops, and per step the
   block copies the panels of A and B it needs into shared memory (``cache_read(..., "shared")`` computed
   at that loop); the barriers between the copies and their readers are placed by the printer;
3. register tiles: each thread computes a ``REGS x REGS`` tile of C, accumulated in registers
   (``cache_write(C, "local")`` computed at the block loop, its loops bound like C's: each thread gets
   the private array of its own elements) and written to C once; per element of a shared panel it
   reads, a thread now does ``REGS`` multiply-adds instead of one.

The kernels run on the OpenCL device pyopencl finds (``pip install tesched[gpu]`` brings pocl, a CPU
OpenCL device: its timings say little about a GPU), or on the CPU, where bound loops run in order. The
CUDA C of the same schedules is compiled by NVRTC when it is installed. Every kernel is checked against
NumPy, and the global- and shared-memory traffic of each step is counted from its tiles.
"""
import statistics
import time

import numpy as np

import tesched as ts
from tesched.codegen.gpu import generate_gpu
from tesched.errors import TeschedError
from tesched.lower.pipeline import lower_for_target
from tesched.recipes import gemm_gpu
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "70 x 66 x 33, a smoke test")).quick
M, N, K = (70, 66, 33) if QUICK else (512, 512, 512)
THREADS = 8          # a block is THREADS x THREADS threads
REGS = 4             # step 3: each thread's tile of C is REGS x REGS
KTILE = 8            # the reduction walked KTILE at a time (steps 2 and 3)

try:
    from tesched.driver.gpu import opencl_queue
    DEVICE = f"OpenCL device {opencl_queue().device.name.strip()!r}"
    TARGET = "opencl"
except (ImportError, TeschedError) as err:
    DEVICE, TARGET = f"the CPU (no OpenCL device: {err})", "host"
print(f"kernels run on {DEVICE}")

rng = np.random.default_rng(0)
a = rng.random((M, K), dtype=np.float32)
b = rng.random((K, N), dtype=np.float32)
expected = a @ b


def run_and_check(s: ts.Schedule, args: list, what: str) -> float:
    """Build for the device, check against NumPy, and return the median time of a few calls (seconds)."""
    f = ts.build(s, args, target=TARGET)
    c = np.full((M, N), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    times = []
    for _ in range(3 if QUICK else 7):
        start = time.perf_counter()
        f(a, b, c)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"{what}: {2.0 * M * N * K / median / 1e9:.2f} GFLOP/s (median of {len(times)} calls, copies "
          "included) -> matches NumPy")
    return median


def naive() -> tuple[ts.Schedule, list]:
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].gpu_tile(C.op.axis[0], C.op.axis[1], THREADS, THREADS)
    return s, [A, B, C]


print("\n=== Step 1: a thread per element of C")
# blocks of THREADS x THREADS threads; each thread walks the whole reduction, reading a row of A and a
# column of B from global memory and accumulating into its element of C
s, args = naive()
print(ts.lower(s, args))
times = {"naive": run_and_check(s, args, "naive")}

print("\n=== Step 2: A and B staged in shared memory")
# k.outer (serial) runs outside the thread loops: per step the block's threads copy a THREADS x KTILE
# panel of A and a KTILE x THREADS panel of B into shared memory, wait (a barrier), multiply, and wait
# again before the next step overwrites the panels
shared = gemm_gpu.shared_tiles(M, N, K, THREADS, KTILE)
print(ts.lower(shared.schedule, shared.args))
times["shared"] = run_and_check(shared.schedule, shared.args, "shared memory")

print("\n=== Step 3: a register tile per thread")
# the block's tile of C grows to THREADS * REGS square; C.local, its accumulators, is computed at the
# block loop with its loops split by REGS and the outer parts bound to the same thread indices as C's:
# each element is one thread's, so each thread keeps its REGS x REGS elements in a private array
tiled = gemm_gpu.register_tiles(M, N, K, THREADS, REGS, KTILE)
print(ts.lower(tiled.schedule, tiled.args))
times["registers"] = run_and_check(tiled.schedule, tiled.args, "register tiles")

print("\n=== Step 4: the generated code, OpenCL and CUDA from the same schedule")
for name in ("opencl", "cuda"):
    target = ts.Target(name)
    src = generate_gpu(lower_for_target(ts.lower(tiled.schedule, tiled.args), target), target)
    body = src.source[src.source.index(src.kernels[0].name):]
    barrier = "barrier(CLK_LOCAL_MEM_FENCE)" if name == "opencl" else "__syncthreads()"
    blocks, threads = src.kernels[0].geometry(lambda e: int(e.value))
    print(f"{name}: {src.kernels[0].shared_bytes} bytes of shared memory, {body.count(barrier)} barriers, "
          f"blocks {blocks}, threads per block {threads}; accumulators: "
          f"{next(line.strip() for line in body.splitlines() if 'C_local[' in line)}")
inner = next(line for line in body.splitlines() if "C_local[" in line and "+" in line and "B_shared" in line)
print(f"the multiply-add of a thread: {inner.strip()}")
try:
    cuda = ts.build(tiled.schedule, tiled.args, target="cuda")
    print(f"NVRTC compiled it to PTX for {', '.join(cuda.ptx)}")
except (ImportError, TeschedError, OSError, RuntimeError) as err:
    print(f"(NVRTC is not available here: {err})")
run_and_check(tiled.schedule, tiled.args, "register tiles, again")

print("\n=== Step 5: memory traffic per step, from the tiles")
# global reads: every element of C reads 2K values (step 1); a block of side t reads a t x K panel of A
# and a K x t panel of B once, shared by its t x t elements (2MNK / t in all). Shared-memory reads per
# multiply-add: 2 in step 2, 2 / REGS in step 3 (a thread reuses a value of A for REGS columns and one of B
# for REGS rows, from registers)
side = THREADS * REGS
for what, global_reads, shared_per_fma in (("naive", 2 * M * N * K, 0.0),
                                           ("shared", 2 * M * N * K / THREADS, 2.0),
                                           ("registers", 2 * M * N * K / side, 2.0 / REGS)):
    print(f"{what:>9}: {global_reads:14,.0f} global reads (x{2 * M * N * K / global_reads:4.0f} fewer than "
          f"naive), {shared_per_fma:.2f} shared reads per multiply-add, {times[what] * 1e3:8.2f} ms")
small = gemm_gpu.register_tiles(M, N, K, 4, 2, KTILE)
run_and_check(small.schedule, small.args, "register tiles of 2 x 2, 4 x 4 threads")

print("\n=== Step 6: summary")
print(f"{M} x {N} x {K}: naive {times['naive'] * 1e3:.2f} ms, shared memory {times['shared'] * 1e3:.2f} ms, "
      f"register tiles {times['registers'] * 1e3:.2f} ms on {DEVICE} (copies to and from the device "
      "included; on pocl the device is this CPU, so only the code's structure carries over to a GPU).")
