"""Convolution workloads: conv2d + batch_norm + relu (1x1, 128x28x28 -> 256), depthwise conv2d +
batch_norm + relu (512x14x14, 3x3), both through the graph API (fused: default passes; unfused:
``fuse_ops`` disabled, batch norm folded in both), and conv -> relu -> conv (64x56x56, 3x3) from
:mod:`tesched.recipes.conv_chain` (fused: the first conv computed per band of 28 rows of the second;
unfused: every stage computed in full; both with the same register tile, :data:`CONV_CHAIN_TILE`).

The NumPy variants are what a NumPy user would write: a 1x1 conv is one matrix product, a 3x3 conv a sum
of nine shifted matrix products (or, depthwise, of nine shifted per-channel products), batch norm a
per-channel scale and shift computed once. The references are the same formulas in float64.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Sequence

import numpy as np

import tesched as ts
from tesched import graph as G
from tesched.driver.kernel import Kernel
from tesched.recipes import conv_chain
from tesched.tools.bench.workloads import Case, Workload, random_arrays

EPSILON = 1e-5
CONV_CHAIN_TILE = {"f_block": 8, "x_block": 56}
"""Register tile of both convolutions of conv -> relu -> conv: 8 output channels x a whole 56-wide row
(four vectors, one of them half full, where 28 columns take three vectors of 16, 8 and 4 lanes)."""


def graph_batch_norm(y: G.Expr, stats: Sequence[G.Expr]) -> G.Expr:
    """``G.nn.batch_norm`` of ``y`` with ``stats`` = gamma, beta, mean, var, and :data:`EPSILON`."""
    gamma, beta, mean, var = stats
    return G.nn.batch_norm(y, gamma, beta, mean, var, epsilon=EPSILON)


def numpy_conv2d(x: np.ndarray, w: np.ndarray, depthwise: bool) -> np.ndarray:
    """Stride 1, 'same' zero padding, batch 1 (``x`` is CHW): shifted matrix products."""
    channels, height, width = x.shape
    kh, kw = w.shape[2:]
    if (kh, kw) == (1, 1) and not depthwise:
        return (w[:, :, 0, 0] @ x.reshape(channels, -1)).reshape(-1, height, width)
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    out = np.zeros((w.shape[0], height, width), dtype=x.dtype)
    for dy in range(kh):
        for dx in range(kw):
            window = padded[:, dy:dy + height, dx:dx + width]
            if depthwise:
                out += w[:, 0, dy, dx, None, None] * window
            else:
                out += (w[:, :, dy, dx] @ window.reshape(channels, -1)).reshape(out.shape)
    return out


def numpy_conv_bn_relu(data: np.ndarray, weight: np.ndarray, depthwise: bool,
                       stats: Sequence[np.ndarray]) -> Callable[[], np.ndarray]:
    """conv2d + batch_norm + relu of ``data`` (NCHW, batch 1) as a NumPy user writes it: the convolution by
    :func:`numpy_conv2d`, batch norm (``stats`` = gamma, beta, mean, var) as a per-channel scale and shift
    computed once, both applied in place."""
    gamma, beta, mean, var = stats
    scale = gamma / np.sqrt(var + EPSILON)
    shift = (beta - mean * scale)[:, None, None]
    scale = scale[:, None, None]

    def variant() -> np.ndarray:
        out = numpy_conv2d(data[0], weight, depthwise)
        out *= scale
        out += shift
        return np.maximum(out, 0.0, out=out)[None]
    return variant


def _conv_bn_relu(name: str, channels: int, size: int, out_channels: int, kernel: int, depthwise: bool,
                  torch: ModuleType | None) -> Case:
    groups = channels if depthwise else 1
    data, weight = random_arrays(1, (1, channels, size, size),
                                 (out_channels, channels // groups, kernel, kernel), scale=1.0)
    weight *= 1.0 / np.sqrt(weight[0].size)
    rng = np.random.default_rng(2)
    gamma, var = (rng.uniform(0.5, 1.5, out_channels).astype(np.float32) for _ in range(2))
    beta, mean = random_arrays(3, (out_channels,), (out_channels,), scale=0.5)
    params = {"weight": weight, "gamma": gamma, "beta": beta, "mean": mean, "var": var}

    x = G.var("data", shape=data.shape)
    stats = [G.var(n, shape=(out_channels,)) for n in ("gamma", "beta", "mean", "var")]
    w_var = G.var("weight", shape=weight.shape)
    y = G.nn.relu(graph_batch_norm(G.nn.conv2d(x, w_var, padding=kernel // 2, groups=groups), stats))
    f = G.Function([x, w_var, *stats], y)
    fused = G.build(f, params=params)
    unfused = G.build(f, params=params, disabled_passes=["fuse_ops"])

    numpy_variant = numpy_conv_bn_relu(data, weight, depthwise, [gamma, beta, mean, var])
    conv64 = numpy_conv2d(data[0].astype(np.float64), weight.astype(np.float64), depthwise)
    bn64 = (conv64 - mean[:, None, None]) / np.sqrt(var[:, None, None] + np.float64(EPSILON)) * gamma[:, None, None] \
        + beta[:, None, None]
    variants = {"fused": lambda: fused(data), "fused prepared": fused.prepare(data), "unfused": lambda: unfused(data),
                "numpy": numpy_variant}
    if torch is not None:
        F = torch.nn.functional
        t = {k: torch.from_numpy(v) for k, v in {"data": data, **params}.items()}

        def torch_variant():
            conv = F.conv2d(t["data"], t["weight"], padding=kernel // 2, groups=groups)
            return F.relu(F.batch_norm(conv, t["mean"], t["var"], t["gamma"], t["beta"], False, 0.0, EPSILON))
        variants["torch"] = torch_variant
    flops = 2.0 * out_channels * (channels // groups) * kernel * kernel * size * size
    return Case(name, flops, [np.maximum(bn64, 0.0)[None]], variants,
                kernels={"fused": len(fused.kernels), "unfused": len(unfused.kernels)})


def conv1x1_bn_relu(quick: bool, torch: ModuleType | None) -> Case:
    c, s, k = (8, 6, 16) if quick else (128, 28, 256)
    return _conv_bn_relu(f"conv2d+bn+relu {c}x{s}x{s} 1x1 {c}->{k}", c, s, k, 1, False, torch)


def depthwise_bn_relu(quick: bool, torch: ModuleType | None) -> Case:
    c, s = (8, 6) if quick else (512, 14)
    return _conv_bn_relu(f"depthwise conv2d+bn+relu {c}x{s}x{s} 3x3", c, s, c, 3, True, torch)


def conv_relu_conv(quick: bool, torch: ModuleType | None) -> Case:
    c, s, rows = (8, 8, 4) if quick else (64, 56, 28)
    chain = conv_chain.declare(channels=c, size=s)
    fused = _build(conv_chain.fused(chain, rows=rows, **CONV_CHAIN_TILE), chain, "conv_conv_fused")
    unfused = _build(conv_chain.unfused(chain, **CONV_CHAIN_TILE), chain, "conv_conv_unfused")
    x, w1, w2 = random_arrays(4, (1, c, s, s), (c, c, 3, 3), (c, c, 3, 3), scale=1.0)
    w1 *= 1.0 / np.sqrt(9 * c)
    w2 *= 1.0 / np.sqrt(9 * c)

    def numpy_variant() -> np.ndarray:
        return numpy_conv2d(np.maximum(numpy_conv2d(x[0], w1, False), 0.0), w2, False)[None]

    variants = {"fused": lambda: fused(x, w1, w2), "fused prepared": fused.prepare(x, w1, w2),
                "unfused": lambda: unfused(x, w1, w2), "numpy": numpy_variant}
    if torch is not None:
        F = torch.nn.functional
        tx, tw1, tw2 = (torch.from_numpy(a) for a in (x, w1, w2))
        variants["torch"] = lambda: F.conv2d(F.relu(F.conv2d(tx, tw1, padding=1)), tw2, padding=1)
    return Case(f"conv3x3->relu->conv3x3 {c}x{s}x{s} {c}->{c}->{c}", float(chain.flops),
                [conv_chain.reference(x, w1, w2)], variants, kernels={"fused": 1, "unfused": 1},
                note="unfused: one kernel, every stage computed in full before the next")


def _build(schedule: ts.Schedule, chain: conv_chain.ConvChain, name: str) -> Kernel:
    return ts.build(schedule, chain.args, name=name)


CONV_BN_RELU_WORKLOADS = [Workload("conv1x1", conv1x1_bn_relu), Workload("depthwise", depthwise_bn_relu)]
CONV_CHAIN_WORKLOAD = Workload("conv_conv", conv_relu_conv)
