"""Fused vs unfused: the four workloads of the TVM paper's operator-fusion figure, through the graph API.

Batch 1, float32: conv2d + batch_norm + relu (128x28x28 input, 1x1 kernel to 256 channels), depthwise
conv2d + batch_norm + relu (512x14x14, 3x3), an RNN cell (hidden 128) and an LSTM cell (hidden 128). Each
graph is built twice with ``tesched.graph.build``: with every default pass, and with ``fuse_ops``
disabled (batch norm is folded in both, so only fusion differs). Prints the number of kernels, the
median time per call of the whole graph, and the unfused/fused ratio; checks both give the same output.

Run:  python benchmarks/fusion_workloads.py [--repeat N] [--threads T]
(``--threads`` sets OMP_NUM_THREADS for the kernels; the machine is noisy, so medians are reported.)
"""
import argparse
import os
import sys


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per graph (default 200)")
    parser.add_argument("--threads", type=int, default=None, help="OpenMP threads (default: all cores)")
    return parser.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.threads:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)  # before the OpenMP runtime is loaded

import numpy as np  # noqa: E402

from tesched import graph as G

RNG = np.random.default_rng(0)


def array(*shape: int, positive: bool = False) -> np.ndarray:
    values = RNG.random(shape) + 0.5 if positive else RNG.standard_normal(shape) * 0.1
    return values.astype("float32")


def bn_params(channels: int) -> dict[str, np.ndarray]:
    return {"gamma": array(channels, positive=True), "beta": array(channels),
            "mean": array(channels), "var": array(channels, positive=True)}


def conv_bn_relu(channels: int, size: int, out_channels: int, kernel: int, groups: int):
    """``relu(batch_norm(conv2d(data, weight)))`` with its parameters."""
    data = G.var("data", shape=(1, channels, size, size))
    weight = G.var("weight", shape=(out_channels, channels // groups, kernel, kernel))
    stats = [G.var(n, shape=(out_channels,)) for n in ("gamma", "beta", "mean", "var")]
    y = G.nn.conv2d(data, weight, padding=kernel // 2, groups=groups)
    y = G.nn.relu(G.nn.batch_norm(y, *stats))
    params = {"weight": array(out_channels, channels // groups, kernel, kernel), **bn_params(out_channels)}
    return G.Function([data, weight, *stats], y), params, {"data": array(1, channels, size, size)}


def rnn(hidden: int):
    x, h = G.var("x", shape=(1, hidden)), G.var("h", shape=(1, hidden))
    w_ih, w_hh = G.var("w_ih", shape=(hidden, hidden)), G.var("w_hh", shape=(hidden, hidden))
    b = G.var("b", shape=(hidden,))
    params = {"w_ih": array(hidden, hidden), "w_hh": array(hidden, hidden), "b": array(hidden)}
    f = G.Function([x, h, w_ih, w_hh, b], G.nn.rnn_cell(x, h, w_ih, w_hh, b))
    return f, params, {"x": array(1, hidden), "h": array(1, hidden)}


def lstm(hidden: int):
    x, h, c = (G.var(n, shape=(1, hidden)) for n in ("x", "h", "c"))
    w_ih, w_hh = G.var("w_ih", shape=(4 * hidden, hidden)), G.var("w_hh", shape=(4 * hidden, hidden))
    b = G.var("b", shape=(4 * hidden,))
    params = {"w_ih": array(4 * hidden, hidden), "w_hh": array(4 * hidden, hidden), "b": array(4 * hidden)}
    f = G.Function([x, h, c, w_ih, w_hh, b], G.nn.lstm_cell(x, h, c, w_ih, w_hh, b))
    return f, params, {"x": array(1, hidden), "h": array(1, hidden), "c": array(1, hidden)}


WORKLOADS = {
    "conv2d+bn+relu 128x28x28, 1x1x128x256": lambda: conv_bn_relu(128, 28, 256, 1, 1),
    "depthwise conv2d+bn+relu 512x14x14, 3x3x512": lambda: conv_bn_relu(512, 14, 512, 3, 512),
    "RNN cell, hidden 128": lambda: rnn(128),
    "LSTM cell, hidden 128": lambda: lstm(128),
}


def main() -> None:
    repeat = ARGS.repeat if ARGS is not None else 200
    print(f"threads: {os.environ.get('OMP_NUM_THREADS', 'all')}, {repeat} calls per graph, median time per call")
    print(f"{'workload':46s} {'kernels':>9s} {'fused':>10s} {'unfused':>10s} {'speedup':>8s}")
    for name, make in WORKLOADS.items():
        f, params, inputs = make()
        fused = G.build(f, params=params)
        unfused = G.build(f, params=params, disabled_passes=["fuse_ops"])
        for a, b in zip(np.atleast_1d(fused(**inputs)), np.atleast_1d(unfused(**inputs))):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        t_fused = fused.benchmark(repeat=repeat, **inputs).median
        t_unfused = unfused.benchmark(repeat=repeat, **inputs).median
        kernels = f"{len(fused.kernels)}/{len(unfused.kernels)}"
        print(f"{name:46s} {kernels:>9s} {t_fused * 1e6:8.1f}us {t_unfused * 1e6:8.1f}us "
              f"{t_unfused / t_fused:7.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
