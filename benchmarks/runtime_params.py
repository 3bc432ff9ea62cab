"""What a runtime parameter (``ts.param``) costs and saves, against baking the value into the kernel.

A Gaussian weight ``B = gain * exp(-A*A / sigma)`` on a (256, 256) float32 image, vectorized, for a sweep
of ``--values`` (sigma, gain) pairs:

- baked: each pair written as constants, so each is another kernel: lowering, C and a compile per value
  (a fresh, empty ``TESCHED_CACHE_DIR``: what a user pays the first time each value is seen);
- param: one kernel built once, called with each pair (the sweep's total, build included);
- per call, interleaved rounds of the same arrays: the baked kernel, the param kernel with its values after
  the arrays, by keyword, and prepared (``prepare(..., sigma=...)``), as medians with the spread
  between quartiles and ratios to the baked call.

Run:  python benchmarks/runtime_params.py [--values N] [--rounds N]
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import tesched as ts
from tesched.driver.timing import round_robin

SHAPE = (256, 256)


def gauss(gain, sigma):
    """The stage with ``gain`` and ``sigma`` (numbers: baked; params: passed at call time)."""
    A = ts.placeholder(SHAPE, name="A")
    B = ts.compute(SHAPE, lambda i, j: gain * ts.exp(-A[i, j] * A[i, j] / sigma), name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(s[B].split(B.op.axis[1], 16)[1])
    return s, A, B


def build(gain, sigma, extra=()):
    s, A, B = gauss(gain, sigma)
    return ts.build(s, [A, B, *extra])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    os.environ["TESCHED_CACHE_DIR"] = tempfile.mkdtemp(prefix="tesched-params-")
    pairs = [(1.5 + k, 0.7 + 0.3 * k) for k in range(args.values)]     # no value gcc could fold away (1.0, 0.5)
    a = np.random.default_rng(0).uniform(-2, 2, SHAPE).astype(np.float32)
    out = np.empty_like(a)

    start = time.perf_counter()
    baked = [build(g, s) for g, s in pairs]
    baked_seconds = time.perf_counter() - start
    for kernel, (g, s) in zip(baked, pairs):
        kernel(a, out)
        np.testing.assert_allclose(out, np.float32(g) * np.exp(-a * a / np.float32(s)), rtol=1e-5)

    start = time.perf_counter()
    gain, sigma = ts.param("gain"), ts.param("sigma")
    kernel = build(gain, sigma, (gain, sigma))
    for g, s in pairs:
        kernel(a, out, g, s)
        np.testing.assert_allclose(out, np.float32(g) * np.exp(-a * a / np.float32(s)), rtol=1e-5)
    param_seconds = time.perf_counter() - start
    print(f"sweep of {len(pairs)} values: baked {baked_seconds:.2f} s ({len(pairs)} compiles), "
          f"param {param_seconds:.2f} s (1 compile): {baked_seconds / param_seconds:.1f}x")

    g, s = pairs[0]
    variants = {"baked": lambda: baked[0](a, out), "param after arrays": lambda: kernel(a, out, g, s),
                "param by keyword": lambda: kernel(a, out, gain=g, sigma=s),
                "param prepared": kernel.prepare(a, out, gain=g, sigma=s)}
    times = {name: s.wall for name, s in round_robin(variants, args.rounds, 200).items()}   # 200 calls a block
    base = statistics.median(times["baked"])
    print(f"per call on {SHAPE[0]}x{SHAPE[1]} (median, quartiles, ratio to baked; {args.rounds} interleaved rounds):")
    for name, values in times.items():
        q1, _, q3 = statistics.quantiles(values)
        median = statistics.median(values)
        print(f"  {name:<20} {median * 1e6:8.1f} us  [{q1 * 1e6:.1f}, {q3 * 1e6:.1f}]  {median / base:.2f}x")


if __name__ == "__main__":
    main()
