"""Tutorial 10: two convolutions fused in one GPU kernel, without a global sync.
=============================================================================

Run it:  python tutorials/10_gpu_fused_convs.py          (16 channels, 32 x 32)
         python tutorials/10_gpu_fused_convs.py --quick  (4 channels, 16 x 16; or TESCHED_QUICK=1)

"Fusing convolutions on a GPU needs a global sync at the shared-memory boundary, so there is no benefit"
is the usual answer. With redundant computation no sync is needed (Halide's overlapped tiles): each block
of threads computes the part of the first convolution its tile of the second needs, halo included, in its
own shared memory, and only waits for the threads of its own block. This tutorial builds both versions of
conv3x3 -> relu -> conv3x3 from schedules (``bind``, ``gpu_tile``, ``compute_at`` a block loop), runs them
on the OpenCL device pyopencl finds (``pip install tesched[gpu]`` brings pocl, an OpenCL device on any
CPU; without it the same schedules run on the CPU, where bound loops run in order), compiles the CUDA C of
the same schedule with NVRTC when it is installed, and compares the global-memory traffic of the two from
their exact footprints. Every kernel is checked against NumPy.
"""
import numpy as np

import tesched as ts
from tesched.codegen.gpu import generate_gpu
from tesched.errors import TeschedError
from tesched.lower.pipeline import lower_for_target
from tesched.recipes import conv_chain, conv_chain_gpu
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

QUICK = parse_tutorial_args(tutorial_parser(__doc__, "4 channels, 16 x 16")).quick
CHANNELS, SIZE, TILE = (4, 16, 6) if QUICK else (16, 32, 14)

try:
    from tesched.driver.gpu import opencl_queue
    DEVICE = f"OpenCL device {opencl_queue().device.name.strip()!r}"
    TARGET = "opencl"
except (ImportError, TeschedError) as err:
    DEVICE, TARGET = f"the CPU (no OpenCL device: {err})", "host"
print(f"kernels run on {DEVICE}")

chain = conv_chain.declare(CHANNELS, SIZE, batch=1)
rng = np.random.default_rng(0)
x = rng.standard_normal((1, CHANNELS, SIZE, SIZE), dtype=np.float32)
w1 = rng.standard_normal((CHANNELS, CHANNELS, 3, 3), dtype=np.float32) * 0.2
w2 = rng.standard_normal((CHANNELS, CHANNELS, 3, 3), dtype=np.float32) * 0.2
expected = conv_chain.reference(x, w1, w2)


def run_and_check(s: ts.Schedule, what: str):
    f = ts.build(s, chain.args, target=TARGET)
    out = np.full(expected.shape, np.nan, np.float32)
    f(x, w1, w2, out)
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
    kernels = len(f.gpu.kernels) if TARGET != "host" else "(CPU)"
    print(f"{what}: {kernels} kernel(s) -> matches NumPy")
    return f


print("\n=== Step 1: unfused, one kernel per convolution")
# gpu_tile splits the output rows and columns into TILE x TILE blocks with a thread per pixel; each thread
# loops over the output channels. conv1 is written to global memory and read back by conv2's kernel.
unfused = conv_chain_gpu.unfused(chain, TILE)
print(ts.lower(unfused, chain.args))
run_and_check(unfused, "unfused")

print("\n=== Step 2: fused, conv1 computed per block in shared memory")
# compute_at conv2's innermost block loop: per block, the (TILE + 2)^2 pixels of conv1 the tile reads, its
# halo recomputed by the neighbouring blocks (the redundancy lower() prints), one thread per pixel.
fused = conv_chain_gpu.fused(chain, TILE)
print(ts.lower(fused, chain.args))
run_and_check(fused, "fused")

print("\n=== Step 3: the generated code, OpenCL and CUDA from the same schedule")
for name in ("opencl", "cuda"):
    target = ts.Target(name)
    src = generate_gpu(lower_for_target(ts.lower(fused, chain.args), target), target)
    body = src.source[src.source.index("void "):]
    barrier = "barrier(CLK_LOCAL_MEM_FENCE)" if name == "opencl" else "__syncthreads()"
    print(f"{name}: {len(src.kernels)} kernel, {src.kernels[0].shared_bytes} bytes of shared memory, "
          f"{body.count(barrier)} barrier ({barrier}), threads per block "
          f"{src.kernels[0].geometry(lambda e: int(e.value))[1]}")
print("\n".join(body.splitlines()[:12]) + "\n  ...")
try:
    cuda = ts.build(fused, chain.args, target="cuda")
    print(f"NVRTC compiled it to PTX for {', '.join(cuda.ptx)}")
except (ImportError, TeschedError, OSError, RuntimeError) as err:
    print(f"(NVRTC is not available here: {err})")
run_and_check(fused, "fused, again")

print("\n=== Step 4: global-memory traffic, from the footprints")
# Per block, the region of each tensor in global memory it reads or writes (isl counts them exactly),
# summed over the blocks. Fusion removes conv1's round trip; the weights and the halo of x stay.
for middle in (CHANNELS, 8 * CHANNELS):
    wide = conv_chain.declare(CHANNELS, SIZE, batch=1, mid_channels=middle)
    t = conv_chain_gpu.traffic(wide, TILE)
    print(f"{CHANNELS} -> {middle} -> {CHANNELS} channels: fused {t.fused:,} elements, unfused {t.unfused:,}: "
          f"fused / unfused = {t.ratio:.2f}")
run_and_check(conv_chain_gpu.fused(chain, 8), "fused with 8 x 8 tiles")

print("\n=== Step 5: schedules a GPU refuses")
s = ts.create_schedule(chain.conv2.op)
for stage in (chain.pad1, chain.relu, chain.pad2):
    s[stage].compute_inline()
try:
    ts.build(s, chain.args, target="cuda")
except ts.ScheduleError as err:
    print(f"nothing bound: {err}")
run_and_check(conv_chain_gpu.fused(chain, 4), "fused with 4 x 4 tiles")

print("\n=== Step 6: auto_schedule finds the fused kernel itself")
# For a GPU target it computes conv1 per block of conv2 in shared memory (tesched/autoschedule/gpu_chain.py),
# with register tiles for conv2 and its tiles of output channels in a loop inside the block, sized to the
# device; G.build(f, target="opencl", schedule="auto") does the same for two convolutions of a graph.
auto = ts.auto_schedule(chain.conv2, target=TARGET if TARGET != "host" else "cuda")
print(ts.explain_schedule(auto))
if TARGET != "host":
    run_and_check(auto, "auto_schedule")

print("\n=== Step 7: summary")
print("conv1 -> relu -> conv2 ran as one kernel: each block recomputed its halo of conv1 in shared memory and "
      "synchronized only its own threads (one barrier); no global sync was needed.")
