"""The register-tiling model (``tesched.tiling``) against measurement: GEMM 1024 through packed panels
(``nn.dense_panels``, the graph's dense) with every register tile of 2 to 8 rows x 1, 2 or 4 SIMD vectors
of columns, each built for ``--target`` and timed in one process, interleaved, beside NumPy.

Printed per tile: the registers it needs and the multiply-adds per cycle the model predicts
(:func:`tesched.tiling.useful_fmas_per_cycle` over the 1024 rows), the median wall and CPU time per call
and the fastest call, in GFLOP/s; ``<- model`` marks the tile :func:`tesched.tiling.accumulator_tile`
picks for these options. A tile that does not fit the register file is timed too (it spills).

Run:  python benchmarks/register_tiles.py [--target x86-64-avx2] [--threads 1] [--rounds 15] [--size 1024]
(one thread by default: the steadiest figures on a shared machine).
"""
import argparse
import os


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="host", help="tesched target (default: the host)")
    parser.add_argument("--threads", type=int, default=1, help="threads for tesched and NumPy (default 1)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved timing rounds (default 15)")
    parser.add_argument("--size", type=int, default=1024, help="M = N = K (default 1024)")
    return parser.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # before NumPy's BLAS and the OpenMP runtime start their threads
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
import tesched.nn as nn  # noqa: E402
from tesched.nn.dense import register_tiles  # noqa: E402
from tesched.tiling import RegisterFile, accumulator_tile, registers_needed, useful_fmas_per_cycle  # noqa: E402
from tesched.driver.timing import time_interleaved  # noqa: E402

ROWS = range(2, 9)
VECTORS = (1, 2, 4)


def tile_kernel(n: int, rows: int, block: int):
    """GEMM ``n`` x ``n`` x ``n`` by panels of ``block`` columns in register tiles of ``rows`` rows."""
    x, p = ts.placeholder((n, n), name="x"), ts.placeholder((n // block, n, block), name="p")
    out = nn.dense_panels(x, p)
    s = ts.create_schedule(out.op)
    register_tiles(s, s.cache_write(out, "local"), out, rows, block)
    return ts.build(s, [x, p, out], name=f"gemm_tile_{rows}x{block}")


def main() -> None:
    n = ARGS.size
    rng = np.random.default_rng(0)
    a, w = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    reference = a.astype(np.float64) @ w.T.astype(np.float64)
    target = ts.Target(ARGS.target)
    rf = RegisterFile.of(target)
    blocks = [v * rf.lanes for v in VECTORS if n % (v * rf.lanes) == 0]
    chosen = accumulator_tile(ROWS, blocks, rf, extent=n)
    variants, model = {}, {}
    for block in blocks:
        packed = nn.pack_dense_panels(w, block)
        for rows in ROWS:
            with target:
                kernel = tile_kernel(n, rows, block)
            out = np.empty((n, n), np.float32)
            call = kernel.prepare(a, packed, out)
            call()
            np.testing.assert_allclose(out, reference, rtol=1e-3, atol=1e-3 * np.sqrt(n))
            label = f"{rows} x {block}"
            variants[label] = call
            model[label] = (registers_needed(rows, rf.vectors(block), rf),
                            useful_fmas_per_cycle(rows, block, rf, extent=n), (rows, block) == chosen)
    wt, out = np.ascontiguousarray(w.T), np.empty((n, n), np.float32)
    variants["numpy"] = lambda: np.matmul(a, wt, out=out)
    timings = time_interleaved(variants, ARGS.rounds)
    gflop = 2.0 * n ** 3 / 1e9
    print(f"GEMM {n}, target {target.name}, {ARGS.threads} thread(s), {ARGS.rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}; {rf.registers} registers of {rf.lanes} floats")
    print(f"{'tile':>10} {'regs':>5} {'model FMA/cycle':>16} {'GFLOP/s median':>15} {'fastest':>8} {'cpu':>8}")
    for label, t in timings.items():
        regs, rate, picked = model.get(label, ("", "", False))
        rate_text = f"{rate:16.2f}" if rate != "" else " " * 16
        print(f"{label:>10} {regs!s:>5} {rate_text} {gflop / t.median:15.1f} {gflop / t.min:8.1f} "
              f"{gflop / t.cpu_median:8.1f}" + ("  <- model" if picked else ""))


if __name__ == "__main__":
    main()
