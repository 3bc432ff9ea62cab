"""GPU kernels: GEMM against torch.matmul (cuBLAS) and conv3x3 -> relu -> conv3x3 fused in one kernel
against PyTorch's two convolutions (cuDNN), on a CUDA GPU; or, with ``--opencl``, the same kernels on the
OpenCL device pyopencl finds (pocl on a CPU: a correctness and relative check, not GPU speed).

Every kernel is checked against NumPy (or PyTorch) first. Calls are interleaved round-robin (every variant
once per round); medians and spreads (min-max) of the wall-clock time are printed, with the ratios the
issue asks for: tesched GEMM / cuBLAS throughput (target >= 0.5) and PyTorch's two convolutions / the fused
kernel (target >= 1.0). Device arrays are passed to the kernels (no copies are timed). Without a device the
script says so and exits 0.

    python benchmarks/gpu.py [--repeat 20] [--gemm 4096] [--channels 64 --size 56 --tile 14]
    python benchmarks/gpu.py --opencl [--gemm 256 --channels 8 --size 28 --blur 256]

With ``--opencl`` it also compares, on GEMM, relu(conv3x3) and a two-pass blur, three schedules of the same
computation: one thread per element (``nn.gpu_default_schedule(.., shared=False)``), the default GPU
schedule (shared-memory tiles), and ``ts.auto_schedule(.., target="opencl")`` (and, for GEMM, the
``tesched.recipes.gemm_gpu`` schedules), with each one's global-memory traffic from its footprints
(elements read and written, summed over blocks).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from typing import Callable

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched.driver.timing import round_robin
from tesched.errors import TeschedError
from tesched.recipes import conv_chain, conv_chain_gpu, gemm_gpu


def timed(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Round-robin wall-clock seconds of every call, per variant (each call ends synchronized)."""
    samples = round_robin(runs, repeat, warmup=1)     # warm-up: compile, load, first touch
    return {name: s.wall for name, s in samples.items()}


def report(times: dict[str, list[float]], work: dict[str, float]) -> dict[str, float]:
    """Print median, spread and GFLOP/s per variant; return the medians."""
    medians = {}
    for name, ts_ in times.items():
        med = statistics.median(ts_)
        medians[name] = med
        print(f"  {name:<28} median {med * 1e3:9.3f} ms  (min {min(ts_) * 1e3:.3f}, max {max(ts_) * 1e3:.3f})"
              f"  {work[name] / med / 1e9:8.1f} GFLOP/s")
    return medians


def run_cuda(args: argparse.Namespace) -> int:
    try:
        import torch
    except ImportError:
        print("benchmarks/gpu.py: torch is not installed; the CUDA baselines need it (skipped)")
        return 0
    if not torch.cuda.is_available():
        print("benchmarks/gpu.py: no CUDA device (torch.cuda.is_available() is False); skipped. "
              "--opencl runs the kernels on an OpenCL device instead")
        return 0
    dev = torch.device("cuda")
    n = args.gemm
    gemms = {name: ts.build(g.schedule, g.args, target="cuda") for name, g in gemm_schedules(n).items()}
    a, b = torch.rand(n, n, device=dev), torch.rand(n, n, device=dev)
    c = torch.empty(n, n, device=dev)
    for f in gemms.values():
        f(a, b, c)
        torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-2)
    print(f"GEMM {n}x{n}x{n} float32 on {torch.cuda.get_device_name()}")
    flops = 2.0 * n ** 3
    calls = {name: (lambda f=f: f(a, b, c)) for name, f in gemms.items()}
    calls["torch.matmul (cuBLAS)"] = lambda: (torch.matmul(a, b, out=c), torch.cuda.synchronize())
    medians = report(timed(calls, args.repeat), dict.fromkeys(calls, flops))
    for name in gemms:
        print(f"  {name} / cuBLAS throughput: {medians['torch.matmul (cuBLAS)'] / medians[name]:.2f} (target >= 0.5)")

    chain = conv_chain.declare(args.channels, args.size, 1)
    fused, unfused, auto = (ts.build(s, chain.args, target="cuda")
                            for s in chain_schedules(chain, args.tile, "cuda").values())
    c_, h = args.channels, args.size
    x = torch.randn(1, c_, h, h, device=dev)
    w1, w2 = torch.randn(c_, c_, 3, 3, device=dev) * 0.1, torch.randn(c_, c_, 3, 3, device=dev) * 0.1
    out = torch.empty(1, c_, h, h, device=dev)
    conv = torch.nn.functional.conv2d

    def torch_chain() -> None:
        conv(torch.relu(conv(x, w1, padding=1)), w2, padding=1)
        torch.cuda.synchronize()

    for f in (fused, auto):
        f(x, w1, w2, out)
        torch.testing.assert_close(out, conv(torch.relu(conv(x, w1, padding=1)), w2, padding=1), rtol=1e-3,
                                   atol=1e-3)
    print(f"conv3x3 -> relu -> conv3x3, {c_} channels, {h}x{h}, tiles {args.tile}x{args.tile}")
    work = 2.0 * 9 * h * h * c_ * c_ * 2
    calls = {"tesched fused (1 kernel)": lambda: fused(x, w1, w2, out),
             "tesched auto_schedule (1 kernel)": lambda: auto(x, w1, w2, out),
             "tesched unfused (2 kernels)": lambda: unfused(x, w1, w2, out),
             "PyTorch (2 cuDNN convs)": torch_chain}
    conv_times = report(timed(calls, args.repeat), dict.fromkeys(calls, work))
    for name in ("tesched fused (1 kernel)", "tesched auto_schedule (1 kernel)"):
        ratio = conv_times["PyTorch (2 cuDNN convs)"] / conv_times[name]
        print(f"  PyTorch / {name} time: {ratio:.2f} (target >= 1.0)")
    return 0


def chain_schedules(chain: conv_chain.ConvChain, tile: int, target: str) -> dict[str, ts.Schedule]:
    """The conv -> relu -> conv schedules compared: the recipe's fused and unfused ones (``tile x tile``
    blocks), and ``auto_schedule``'s (the first convolution per block of the second, register tiles)."""
    return {"tesched fused (1 kernel)": conv_chain_gpu.fused(chain, tile),
            "tesched unfused (2 kernels)": conv_chain_gpu.unfused(chain, tile),
            "tesched auto_schedule (1 kernel)": ts.auto_schedule(chain.conv2, target=target)}


def gemm_schedules(n: int) -> dict:
    """The GEMM schedules compared: shared panels only, and shared panels with a 4 x 4 register tile per
    thread (16 x 16 threads, 64 x 64 blocks)."""
    return {"tesched (shared tiles)": gemm_gpu.shared_tiles(n, n, n),
            "tesched (register tiles)": gemm_gpu.register_tiles(n, n, n, threads=16, regs=4, ktile=8)}


def run_opencl(args: argparse.Namespace) -> int:
    from tesched.driver.gpu import gpu_module, opencl_queue
    try:
        queue = opencl_queue()
    except (ImportError, TeschedError) as err:
        print(f"benchmarks/gpu.py --opencl: {err}; skipped")
        return 0
    cla = gpu_module("pyopencl.array", "opencl")
    n = args.gemm
    gemms = {name: ts.build(g.schedule, g.args, target="opencl") for name, g in gemm_schedules(n).items()}
    a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
    da, db, dc = cla.to_device(queue, a), cla.to_device(queue, b), cla.empty(queue, (n, n), np.float32)
    for f in gemms.values():
        f(da, db, dc)
        np.testing.assert_allclose(dc.get(), a @ b, rtol=1e-4)
    print(f"GEMM {n}x{n}x{n} float32 on OpenCL device {queue.device.name!r}")
    flops = 2.0 * n ** 3
    calls = {name: (lambda f=f: f(da, db, dc)) for name, f in gemms.items()}
    calls["NumPy (host BLAS)"] = lambda: a @ b
    medians = report(timed(calls, args.repeat), dict.fromkeys(calls, flops))
    print(f"  shared tiles / register tiles time: "
          f"{medians['tesched (shared tiles)'] / medians['tesched (register tiles)']:.2f}")

    c_, h = args.channels, args.size
    chain = conv_chain.declare(c_, h, 1)
    x = np.random.randn(1, c_, h, h).astype(np.float32)
    w1 = (np.random.randn(c_, c_, 3, 3) * 0.1).astype(np.float32)
    w2 = (np.random.randn(c_, c_, 3, 3) * 0.1).astype(np.float32)
    dx, dw1, dw2 = (cla.to_device(queue, v) for v in (x, w1, w2))
    dout = cla.empty(queue, (1, c_, h, h), np.float32)
    schedules = chain_schedules(chain, args.tile, "opencl")
    kernels = {name: ts.build(s, chain.args, target="opencl") for name, s in schedules.items()}
    for kernel in kernels.values():
        kernel(dx, dw1, dw2, dout)
        np.testing.assert_allclose(dout.get(), conv_chain.reference(x, w1, w2), rtol=1e-3, atol=1e-3)
    print(f"conv3x3 -> relu -> conv3x3, {c_} channels, {h}x{h}, tiles {args.tile}x{args.tile}")
    work = 2.0 * 9 * h * h * c_ * c_ * 2
    times = report(timed({name: (lambda k=k: k(dx, dw1, dw2, dout)) for name, k in kernels.items()}, args.repeat),
                   dict.fromkeys(kernels, work))
    traffic = conv_chain_gpu.traffic(chain, args.tile)
    print(f"  unfused / fused time: {times['tesched unfused (2 kernels)'] / times['tesched fused (1 kernel)']:.2f}; "
          f"global traffic fused / unfused: {traffic.fused} / {traffic.unfused} elements = {traffic.ratio:.2f}")
    auto = ts.lower(schedules["tesched auto_schedule (1 kernel)"], chain.args).global_traffic.total
    ratio = times["tesched unfused (2 kernels)"] / times["tesched auto_schedule (1 kernel)"]
    print(f"  unfused / auto_schedule time: {ratio:.2f}; global traffic auto_schedule / unfused: {auto} / "
          f"{traffic.unfused} elements = {auto / traffic.unfused:.2f}")
    for workload in (gemm_workload(n), conv_workload(c_, h), blur_workload(args.blur)):
        compare_schedules(workload, queue, cla, args.repeat)
    return 0


def gemm_workload(n: int) -> tuple:
    """``(title, inputs, outputs, reference, flops, recipes)``: C = A @ B, with the gemm_gpu recipes."""
    A, B = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    r = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    return (f"GEMM {n}x{n}x{n}", [A, B], [C], lambda a, b: a.astype(np.float64) @ b, 2.0 * n ** 3,
            gemm_schedules(n))


def conv_workload(channels: int, size: int) -> tuple:
    """relu(conv3x3(x, w)), ``channels`` in and out."""
    x = ts.placeholder((1, channels, size, size), name="x")
    w = ts.placeholder((channels, channels, 3, 3), name="w")
    out = nn.relu(nn.conv2d(x, w, strides=1, padding=1))

    def reference(xv: np.ndarray, wv: np.ndarray) -> np.ndarray:
        cols = np.lib.stride_tricks.sliding_window_view(np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), (2, 3))
        return np.maximum(np.einsum("ncyxij,fcij->nfyx", cols.astype(np.float64), wv), 0)
    return (f"relu(conv3x3), {channels} channels, {size}x{size}", [x, w], [out], reference,
            2.0 * 9 * size * size * channels * channels, {})


def blur_workload(size: int) -> tuple:
    """The two-pass 3x3 box blur."""
    A = ts.placeholder((size + 2, size + 2), name="A")
    bx = ts.compute((size + 2, size), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0, name="bx")
    by = ts.compute((size, size), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3.0, name="by")

    def reference(a: np.ndarray) -> np.ndarray:
        rows = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        return (rows[:-2] + rows[1:-1] + rows[2:]) / 3
    return f"blur 3x3, {size}x{size}", [A], [by], reference, 4.0 * size * size, {}


def compare_schedules(workload: tuple, queue: object, cla: object, repeat: int) -> None:
    """One thread per element (``gpu_default_schedule(shared=False)``), the default GPU schedule, and
    ``auto_schedule``, (and the workload's recipes): times, and global traffic from the footprints."""
    title, inputs, outputs, reference, work, recipes = workload
    target = ts.Target("opencl")
    variants = {"one thread per element": (nn.gpu_default_schedule(outputs, target, shared=False), inputs + outputs),
                "nn default (shared tiles)": (nn.gpu_default_schedule(outputs, target), inputs + outputs),
                "auto_schedule": (ts.auto_schedule(outputs, target="opencl"), inputs + outputs)}
    variants.update({name: (g.schedule, g.args) for name, g in recipes.items()})
    arrays = [np.random.default_rng(k).uniform(-1, 1, [int(d) for d in t.shape]).astype(np.float32)
              for k, t in enumerate(inputs)]
    on_device = [cla.to_device(queue, a) for a in arrays]
    out = cla.empty(queue, tuple(int(d) for d in outputs[0].shape), np.float32)
    want = reference(*arrays)
    calls, traffic = {}, {}
    for name, (s, args) in variants.items():
        kernel = ts.build(s, args, target="opencl")
        kernel(*on_device, out)
        np.testing.assert_allclose(out.get(), want, rtol=1e-4, atol=1e-4)
        calls[name] = lambda k=kernel: k(*on_device, out)
        traffic[name] = ts.lower(s, args).global_traffic.total
    print(f"{title}: one thread per element vs shared tiles vs auto_schedule")
    medians = report(timed(calls, repeat), dict.fromkeys(calls, work))
    base = "one thread per element"
    for name in calls:
        print(f"  {name:<28} {medians[base] / medians[name]:5.2f}x the one-thread-per-element speed, global "
              f"traffic {traffic[name]} elements ({traffic[name] / traffic[base]:.2f} of it)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opencl", action="store_true", help="run on the OpenCL device (pocl on a CPU)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--gemm", type=int, default=None, help="GEMM size (default 4096; 256 with --opencl)")
    parser.add_argument("--channels", type=int, default=None, help="conv channels (default 64; 8 with --opencl)")
    parser.add_argument("--size", type=int, default=None, help="image size (default 56; 28 with --opencl)")
    parser.add_argument("--tile", type=int, default=14)
    parser.add_argument("--blur", type=int, default=256, help="blur image size (with --opencl)")
    args = parser.parse_args()
    small = args.opencl
    args.gemm = args.gemm or (256 if small else 4096)
    args.channels = args.channels or (8 if small else 64)
    args.size = args.size or (28 if small else 56)
    return run_opencl(args) if args.opencl else run_cuda(args)


if __name__ == "__main__":
    sys.exit(main())
