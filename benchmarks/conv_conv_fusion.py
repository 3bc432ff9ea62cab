"""conv -> relu -> conv (64x56x56, 3x3, 64->64->64): fused by overlapped tiling vs unfused, the same
chain built through ``tesched.graph`` (Winograd F(4x4, 3x3), one kernel per convolution, weights
transformed at build time), and PyTorch eager when torch is installed.

The two recipe versions use the same register-tiled convolution kernel (tesched.recipes.conv_chain); the
fused one recomputes a one-row halo of conv1 per band of conv2 rows. Every kernel is checked against
NumPy first. Calls are interleaved round-robin (every variant once per round) so that machine noise hits
all alike; medians and minimums of the wall-clock time are printed, with the processor time per call
(all threads: on a loaded machine it shows the work done where the wall clock also counts the waits),
the ratio unfused/fused (> 1 means fusion is faster) and the ratios of PyTorch over the graph and the
best fused recipe (issue 13's target: the fused chain at least 1.4x PyTorch eager).

    OMP_WAIT_POLICY=passive python benchmarks/conv_conv_fusion.py [--threads 2] [--repeat 40] [--channels 64]
                                                                  [--size 56] [--no-torch]
"""
from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("OMP_WAIT_POLICY", "passive")   # before any OpenMP runtime loads: no spinning workers

import numpy as np

import tesched as ts
from tesched import graph as G
from tesched.driver.timing import round_robin
from tesched.recipes import conv_chain


def timed(runs: dict, repeat: int) -> tuple[dict, dict]:
    """Round-robin timing: each round calls every variant once, so noise hits them alike. Returns the
    wall-clock and the processor seconds of every call, per variant."""
    samples = round_robin(runs, repeat)
    return {name: s.wall for name, s in samples.items()}, {name: s.cpu for name, s in samples.items()}


def graph_chain(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> G.Executable:
    """The chain as a graph with constant weights, built with the default passes."""
    data = G.var("x", shape=x.shape)
    conv1 = G.nn.conv2d(data, G.const(w1), padding=1)
    return G.build(G.Function([data], G.nn.conv2d(G.nn.relu(conv1), G.const(w2), padding=1)))


def torch_chain(threads: int, x: np.ndarray, w1: np.ndarray, w2: np.ndarray):
    """PyTorch eager's call of the chain, or None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    functional = torch.nn.functional
    tx, tw1, tw2 = (torch.from_numpy(a) for a in (x, w1, w2))

    def run():
        with torch.inference_mode():
            return functional.conv2d(functional.relu(functional.conv2d(tx, tw1, padding=1)), tw2, padding=1)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--size", type=int, default=56)
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when installed")
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
    exe = graph_chain(x, w1, w2)
    graph_out = exe(x)
    np.testing.assert_allclose(graph_out, ref, rtol=1e-3, atol=1e-2)
    runs["graph (Winograd)"] = exe.prepare(x)
    torch_run = None if args.no_torch else torch_chain(args.threads, x, w1, w2)
    if torch_run is not None:
        np.testing.assert_allclose(torch_run().numpy(), ref, rtol=1e-3, atol=1e-2)
        runs["torch eager"] = torch_run
    for run in runs.values():   # warm up
        run()
    results, cpu = timed(runs, args.repeat)
    names = list(runs)
    print(f"conv->relu->conv {c}x{n}x{n}, 3x3, {args.threads} threads, {args.repeat} runs each, "
          f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"{'variant':<28}{'median us':>12}{'min us':>10}{'cpu us':>10}{'GFLOP/s':>10}  redundancy")
    for name in names:
        t = results[name]
        red = ", ".join(f"{k} {v:.2f}x" for k, v in lowered[name].redundancy.items()
                        if not k.endswith(".local")) if name in lowered else ""
        print(f"{name:<28}{statistics.median(t) * 1e6:>12.0f}{min(t) * 1e6:>10.0f}"
              f"{statistics.median(cpu[name]) * 1e6:>10.0f}"
              f"{chain.flops / statistics.median(t) / 1e9:>10.1f}  {red or '-'}")
    fused = [k for k in names if k.startswith("fused")]
    best = min(fused, key=lambda k: statistics.median(results[k]))
    ratio = statistics.median(results["unfused"]) / statistics.median(results[best])
    print(f"best fused: {best}; unfused/fused median ratio {ratio:.2f}x "
          f"(min ratio {min(results['unfused']) / min(results[best]):.2f}x)")
    if "torch eager" in results:
        for name in ("graph (Winograd)", best):
            wall = statistics.median(results["torch eager"]) / statistics.median(results[name])
            work = statistics.median(cpu["torch eager"]) / statistics.median(cpu[name])
            state = "met" if wall >= 1.4 else "NOT met"
            print(f"torch eager / {name}: {wall:.2f}x by wall-clock medians, {work:.2f}x by processor time "
                  f"(target 1.4x: {state})")


if __name__ == "__main__":
    main()
