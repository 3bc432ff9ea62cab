"""Fusing loops over symbolic sizes to parallelize them: what the fused loop costs and what it buys.

``y = 2 * a + 1`` over a float32 array of shape ``(m, n)`` with ``m`` and ``n`` symbolic (``ts.var``), timed
interleaved round-robin in one process (:func:`tesched.driver.timing.time_interleaved`) after each
variant's result is checked against NumPy. Printed per variant: the median and minimum microseconds per
call, the spread (interquartile range over the median) and the ratio of NumPy's median to the variant's.

Variants: ``rows`` parallelizes ``i`` and vectorizes ``j`` split by 16 (what one wrote before a symbolic
fuse was possible); ``fused`` parallelizes ``fuse(i, j)`` (one loop of ``m * n`` iterations, ``i`` and
``j`` recovered by ``//`` and ``%`` per element); ``fused, split 64`` splits the fused loop by 64,
parallel outer, vectorized inner (each block of 64 runs row by row over consecutive ``j``: explicit SIMD,
divisions once per row). Two shapes: few long rows (``m`` below the thread count: ``rows`` leaves threads idle)
and a square one.

Run:  OMP_WAIT_POLICY=passive python benchmarks/symbolic_fuse.py [--rounds 20] [--threads 2] [--quick]
"""
from __future__ import annotations

import argparse

import numpy as np

import tesched as ts
from tesched.tools.bench.threads import describe_thread_pools, set_all_threads, thread_pools
from tesched.driver.timing import Timing, time_interleaved


def kernels() -> dict[str, ts.Kernel]:
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    out: dict[str, ts.Kernel] = {}
    for label in ("rows", "fused", "fused, split 64"):
        Y = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="Y")
        s = ts.create_schedule(Y.op)
        i, j = Y.op.axis
        if label == "rows":
            s[Y].parallel(i)
            s[Y].vectorize(s[Y].split(j, factor=16)[1])
        elif label == "fused":
            s[Y].parallel(s[Y].fuse(i, j))
        else:
            outer, inner = s[Y].split(s[Y].fuse(i, j), factor=64)
            s[Y].parallel(outer)
            s[Y].vectorize(inner)
        out[label] = ts.build(s, [A, Y], name="scale_" + label.replace(", ", "_").replace(" ", "_"))
    return out


def report(title: str, timings: dict[str, Timing], reference: str) -> None:
    print(f"\n{title}  (ratio = {reference} median / variant median)")
    base = timings[reference].median
    for label, t in timings.items():
        print(f"  {label:24s} {t.median * 1e6:10.1f} us  (min {t.min * 1e6:9.1f}, spread "
              f"{t.spread / t.median * 100:5.1f}%)  ratio {base / t.median:6.2f}x")


def run(shape: tuple[int, int], fs: dict[str, ts.Kernel], rounds: int) -> None:
    a = np.random.default_rng(0).random(shape, dtype=np.float32)
    y = np.empty_like(a)
    want = a * 2 + 1
    variants = {"numpy": lambda: np.multiply(a, 2, out=y).__iadd__(1)}
    for label, f in fs.items():
        f(a, y)
        np.testing.assert_allclose(y, want, rtol=1e-6, err_msg=label)
        variants[f"tesched {label}"] = lambda f=f: f(a, y)
    report(f"y = 2a + 1, float32 {shape[0]}x{shape[1]} (m, n symbolic)", time_interleaved(variants, rounds),
           "numpy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds per shape (default 20)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tesched (default 2)")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = parser.parse_args()
    set_all_threads(args.threads, None)
    print(describe_thread_pools(thread_pools()))
    scale = 16 if args.quick else 1
    fs = kernels()
    run((1, (1 << 22) // scale), fs, args.rounds)
    run((2048 // scale, 2048), fs, args.rounds)


if __name__ == "__main__":
    main()
