"""Dense 1024 x 1024 x 1024 (float32) with and without the GEMM micro-kernel intrinsic of tesched.intrin.

Both kernels come from ``tesched.intrin.dense_schedule`` and share one blocking: nr columns of the output
per iteration of a parallel loop, a packed K x nr panel of B per such iteration (``cache_read``), and an
mr x nr tile per iteration of the row loop, computed at that loop (``cache_write``). They differ in how the
tile is computed: ``inner="codegen"``, tesched's code generation (reduction outermost, rows unrolled,
columns unrolled by vectors and vectorized: the register tile), or ``inner="intrinsic"``, one call of the
micro-kernel (C intrinsics for the host's instruction set). NumPy's ``matmul`` is shown for reference.
The computations are tesched.nn's ``matmul`` (and ``bias_add``, ``relu``).
``--epilogue`` adds ``max(A @ B + bias, 0)`` three ways (one fused intrinsic; the gemm intrinsic with the
epilogue as a loop; codegen); ``--sweep`` tries other micro-tiles and reduction slices (kc).

The kernels run in interleaved rounds (each round calls every kernel once), so a busy machine slows all of
them alike. Printed per kernel: GFLOP/s at the median and at the fastest call (wall clock), and at the
median CPU time per call (``time.process_time``: all threads of the process, not counting time spent
waiting for a core, so it is the steadiest figure on a shared machine; with several threads it measures
work per core-second).

Run:  python benchmarks/dense_intrin.py [--size 1024] [--repeat 40] [--threads 1] [--epilogue] [--sweep]
(one thread by default, for stable numbers on a shared machine; ``--threads 2`` runs the parallel loop,
and NumPy's BLAS, on two.)
"""
import argparse
import os
import statistics


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = N = K (default 1024)")
    parser.add_argument("--repeat", type=int, default=40, help="timed rounds (default 40)")
    parser.add_argument("--threads", type=int, default=1, help="threads for tesched and NumPy (default 1)")
    parser.add_argument("--epilogue", action="store_true", help="also time gemm + bias + relu")
    parser.add_argument("--sweep", action="store_true", help="also try other micro-tiles and kc")
    return parser.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # before NumPy's BLAS and the OpenMP runtime start their threads
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TESCHED_NUM_THREADS"):
        os.environ[variable] = str(ARGS.threads)

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
from tesched import nn
from tesched.driver.timing import round_robin
from tesched.intrin import default_tile, dense_schedule, select_isa

SWEEP_TILES = [(8, 32), (4, 64), (16, 16), (8, 16), (4, 32)]
SWEEP_KC = [128, 256, 512]


def declare(size: int, epilogue: bool) -> list[ts.Tensor]:
    """``matmul(A, B)``, and with ``epilogue`` ``relu(bias_add(matmul(A, B), bias))``, from tesched.nn."""
    a = ts.placeholder((size, size), name="A")
    b = ts.placeholder((size, size), name="B")
    product = nn.matmul(a, b)
    if not epilogue:
        return [a, b, product]
    bias = ts.placeholder((size,), name="bias")
    return [a, b, bias, nn.relu(nn.bias_add(product, bias, axis=1))]


def kernel_call(size: int, inputs: list[np.ndarray], expected: np.ndarray, epilogue: bool, **schedule):
    """Build one dense_schedule variant, check it against NumPy, and return a call without checks."""
    tensors = declare(size, epilogue)
    kernel = ts.build(dense_schedule(tensors[-1], **schedule), tensors, name="dense")
    out = np.empty_like(expected)
    kernel(*inputs, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)
    return kernel.prepare(*inputs, out)


def interleaved(calls: dict, repeat: int) -> dict:
    """Per call: (wall seconds, CPU seconds) of each round."""
    samples = round_robin(calls, repeat, warmup=1)
    return {label: list(zip(s.wall, s.cpu)) for label, s in samples.items()}


def report(title: str, timings: dict, flops: float) -> None:
    print(f"\n{title}")
    print(f"{'median':>8} {'fastest':>8} {'CPU med':>8}  GFLOP/s")
    for label, runs in timings.items():
        wall = [w for w, _ in runs]
        cpu = statistics.median(c for _, c in runs)
        print(f"{flops / statistics.median(wall) / 1e9:8.1f} {flops / min(wall) / 1e9:8.1f} "
              f"{flops / max(cpu, 1e-9) / 1e9:8.1f}  {label}")


def main(args: argparse.Namespace) -> None:
    size = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    bias = rng.standard_normal(size, dtype=np.float32)
    product = a @ b
    mr, nr = default_tile()
    flops = 2.0 * size ** 3
    print(f"dense {size} x {size} x {size} float32, micro-kernel for {select_isa()}, tile {mr} x {nr}, "
          f"{args.threads} thread(s), {args.repeat} interleaved rounds")

    numpy_out = np.empty_like(product)
    calls = {
        f"tesched codegen: register tile {mr}x{nr} (cache_write, unroll + vectorize)":
            kernel_call(size, [a, b], product, False, inner="codegen"),
        f"tesched + micro-kernel intrinsic {mr}x{nr}, whole reduction per call (body)":
            kernel_call(size, [a, b], product, False, inner="intrinsic"),
        f"tesched + micro-kernel intrinsic {mr}x{nr}, kc={size // 4} (reset + 4 updates)":
            kernel_call(size, [a, b], product, False, inner="intrinsic", kc=size // 4),
        "NumPy a @ b": lambda: np.matmul(a, b, out=numpy_out),
    }
    report("A @ B", interleaved(calls, args.repeat), flops)

    if args.epilogue:
        expected = np.maximum(product + bias, 0)
        calls = {label: kernel_call(size, [a, b, bias], expected, True, inner=inner)
                 for label, inner in (("fused gemm+bias+relu intrinsic (one call per tile)", "fused"),
                                      ("gemm intrinsic, bias+relu as a fused loop", "intrinsic"),
                                      ("tesched codegen register tile, bias+relu loop", "codegen"))}
        calls["NumPy max(a @ b + bias, 0)"] = lambda: np.maximum(np.matmul(a, b, out=numpy_out) + bias, 0)
        report("max(A @ B + bias, 0)", interleaved(calls, args.repeat), flops)

    if args.sweep:
        calls = {}
        for tile in SWEEP_TILES:
            if size % tile[0] or size % tile[1]:
                continue
            label = f"{tile[0]}x{tile[1]}"
            calls[f"codegen {label}"] = kernel_call(size, [a, b], product, False, inner="codegen", tile=tile)
            for kc in [size] + [kc for kc in SWEEP_KC if size % kc == 0 and kc < size]:
                calls[f"intrinsic {label} kc={kc}"] = kernel_call(size, [a, b], product, False, tile=tile, kc=kc)
        report("micro-tiles and reduction slices", interleaved(calls, max(args.repeat // 4, 5)), flops)


if __name__ == "__main__":
    main(ARGS)
