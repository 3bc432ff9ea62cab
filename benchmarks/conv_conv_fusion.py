"""conv -> relu -> conv (64x56x56, 3x3, 64->64->64): fused by overlapped tiling vs unfused.

Both versions use the same register-tiled convolution kernel (tesched.recipes.conv_chain); the fused one
recomputes a one-row halo of conv1 per band of conv2 rows. Every kernel is checked against NumPy first.
Calls are interleaved round-robin (every variant once per round) so that machine noise hits all alike;
medians and minimums are printed, with the ratio unfused/fused (> 1 means fusion is faster).

    python benchmarks/conv_conv_fusion.py [--threads 2] [--repeat 40] [--channels 64] [--size 56]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tesched as ts
from tesched.recipes import conv_chain


def timed(runs: dict, repeat: int) -> dict:
    """Round-robin timing: each round calls every variant once, so noise hits them alike."""
    times: dict = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--size", type=int, default=56)
    args = ap.parse_args()
    ts.set_num_threads(args.threads)
    chain = conv_chain.declare(args.channels, args.size)
    rng = np.random.default_rng(0)
    c, n = args.channels, args.size
    x = rng.random((1, c, n, n), dtype=np.float32)
    w1 = rng.random((c, c, 3, 3), dtype=np.float32) - np.float32(0.5)
    w2 = rng.random((c, c, 3, 3), dtype=np.float32) - np.float32(0.5)
    ref = conv_chain.reference(x, w1, w2)
    candidates = {"unfused": conv_chain.unfused(chain)}
    for rows in (n // 4, n // 2, n // 8):
        if rows:
            candidates[f"fused, bands of {rows} rows"] = conv_chain.fused(chain, rows=rows)
    runs, lowered = {}, {}
    for name, sched in candidates.items():
        kernel = ts.build(sched, chain.args, name="conv_conv")
        out = np.empty_like(ref, dtype=np.float32)
        kernel(x, w1, w2, out)
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-2)
        runs[name] = kernel.prepare(x, w1, w2, out)
        lowered[name] = kernel.lowered
    for run in runs.values():   # warm up
        run()
    results = timed(runs, args.repeat)
    names = list(runs)
    print(f"conv->relu->conv {c}x{n}x{n}, 3x3, {args.threads} threads, {args.repeat} runs each")
    print(f"{'schedule':<28}{'median us':>12}{'min us':>10}{'GFLOP/s':>10}  redundancy")
    for name in names:
        t = results[name]
        red = ", ".join(f"{k} {v:.2f}x" for k, v in lowered[name].redundancy.items() if not k.endswith(".local"))
        print(f"{name:<28}{statistics.median(t) * 1e6:>12.0f}{min(t) * 1e6:>10.0f}"
              f"{chain.flops / statistics.median(t) / 1e9:>10.1f}  {red or '-'}")
    fused = [k for k in names if k.startswith("fused")]
    best = min(fused, key=lambda k: statistics.median(results[k]))
    ratio = statistics.median(results["unfused"]) / statistics.median(results[best])
    print(f"best fused: {best}; unfused/fused median ratio {ratio:.2f}x "
          f"(min ratio {min(results['unfused']) / min(results[best]):.2f}x)")


if __name__ == "__main__":
    main()
