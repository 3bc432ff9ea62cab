"""Workloads of ``python -m tesched.bench --graph``: each built through ``tesched.graph`` from its natural
graph, with constant weights, and called plainly (``exe(*inputs)``: inputs checked, fresh results).

Each case times the graph beside the suite's hand kernel for the same math (the variant the main suite
reports as tesched fused: a prepared call) and, where they apply, NumPy and PyTorch eager. Cases:

- the suite's workloads: conv2d + batch_norm + relu (1x1 and depthwise; the hand kernel is the same
  graph's prepared call), the RNN and LSTM cells (hand: ``nn.rnn_cell``/``nn.lstm_cell`` with their
  default schedule), conv3x3 -> relu -> conv3x3 (hand: :mod:`tesched.recipes.conv_chain` fused), GEMM
  1024 through ``G.nn.dense`` (hand: ``nn.matmul`` with its default schedule on the transposed weight);
- a ResNet basic block (conv3x3 + batch_norm + relu, conv3x3 + batch_norm, residual add, relu; 64
  channels, 56x56) against PyTorch eager;
- call overhead: the plain call of the RNN and LSTM cells' executables and of a 4-argument kernel,
  against their prepared calls.

Each case also carries the anchor workloads' standing against the peers, on every target (the
AVX-512 figures an AVX2 build must match): GEMM at least 0.95x NumPy, conv1x1 + BN + ReLU at least 1.0x
PyTorch, the depthwise conv, the cells and conv -> relu -> conv ahead of both NumPy and PyTorch.

Every variant is checked against a float64 reference before it is timed. This module builds cases; the
timing and the report are :mod:`.graph_suite`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched import graph as G
from tesched.nn import winograd
from tesched.recipes import conv_chain
from tesched.tools.bench.cell_cases import cell_outputs, numpy_cell
from tesched.tools.bench.conv_cases import (
    CONV_CHAIN_TILE,
    EPSILON,
    graph_batch_norm,
    numpy_conv2d,
    numpy_conv_bn_relu,
)
from tesched.tools.bench.workloads import Case, random_arrays


@dataclass(frozen=True)
class Target:
    """The issue's goal for one case: ``graph`` at least ``ratio`` times as fast as variant ``versus``
    (``ratio`` 1/1.1: within 10% of it), and at most ``kernels`` kernels when given."""

    versus: str
    ratio: float
    kernels: int | None = None

    def describe(self) -> str:
        goal = "within 10% of" if abs(self.ratio - 1 / 1.1) < 1e-9 else f">= {self.ratio:.2f}x"
        return f"graph {goal} {self.versus}" + (f", {self.kernels} kernels" if self.kernels else "")


@dataclass
class GraphCase:
    """A :class:`~.workloads.Case` with its targets."""

    key: str
    case: Case
    targets: list[Target] = field(default_factory=list)


def _bn_params(channels: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    gamma, var = (rng.uniform(0.5, 1.5, channels).astype(np.float32) for _ in range(2))
    beta, mean = random_arrays(seed + 1, (channels,), (channels,), scale=0.5)
    return [gamma, beta, mean, var]


def _graph_bn(y: G.Expr, stats: list[np.ndarray]) -> G.Expr:
    return graph_batch_norm(y, [G.const(s) for s in stats])


def _numpy_bn(y: np.ndarray, stats: list[np.ndarray]) -> np.ndarray:
    gamma, beta, mean, var = (s.astype(np.float64)[:, None, None] for s in stats)
    return (y - mean) / np.sqrt(var + EPSILON) * gamma + beta


def _torch_bn(torch: ModuleType, y: Any, stats: list[np.ndarray]) -> Any:
    gamma, beta, mean, var = (torch.from_numpy(s) for s in stats)
    return torch.nn.functional.batch_norm(y, mean, var, gamma, beta, False, 0.0, EPSILON)


def conv_bn_relu(key: str, quick: bool, torch: ModuleType | None) -> GraphCase:
    depthwise = key == "depthwise"
    c, s, k, kernel = ((8, 6, 8, 3) if quick else (512, 14, 512, 3)) if depthwise else \
        ((8, 6, 16, 1) if quick else (128, 28, 256, 1))
    groups = c if depthwise else 1
    data, weight = random_arrays(1, (1, c, s, s), (k, c // groups, kernel, kernel))
    weight *= 1.0 / np.sqrt(weight[0].size)
    stats = _bn_params(k, 2)
    x = G.var("data", shape=data.shape)
    f = G.Function([x], G.nn.relu(_graph_bn(G.nn.conv2d(x, G.const(weight), padding=kernel // 2, groups=groups),
                                            stats)))
    exe = G.build(f)
    reference = np.maximum(_numpy_bn(numpy_conv2d(data[0].astype(np.float64), weight.astype(np.float64),
                                                  depthwise), stats), 0)[None]
    variants: dict[str, Callable[[], Any]] = {"graph": lambda: exe(data), "hand": exe.prepare(data),
                                              "numpy": numpy_conv_bn_relu(data, weight, depthwise, stats)}
    if torch is not None:
        F = torch.nn.functional
        td, tw = torch.from_numpy(data), torch.from_numpy(weight)
        variants["torch"] = lambda: F.relu(_torch_bn(torch, F.conv2d(td, tw, padding=kernel // 2, groups=groups),
                                                     stats))
    name = f"{'depthwise ' if depthwise else ''}conv2d+bn+relu {c}x{s}x{s} {kernel}x{kernel}" + \
        ("" if depthwise else f" {c}->{k}")
    flops = 2.0 * k * (c // groups) * kernel * kernel * s * s
    case = Case(name, flops, [reference], variants, kernels={"graph": len(exe.kernels)},
                note="hand: the same graph's prepared call (the suite's fused variant)")
    standing = [Target("torch", 1.0)] if not depthwise else [Target("numpy", 1.0), Target("torch", 1.0)]
    return GraphCase(key, case, [Target("hand", 1 / 1.1), *standing])


def cell(key: str, quick: bool, torch: ModuleType | None) -> GraphCase:
    gates = 1 if key == "rnn" else 4
    hidden = 16 if quick else 128
    x, h, c, w_ih, w_hh, b = random_arrays(5, (1, hidden), (1, hidden), (1, hidden), (gates * hidden, hidden),
                                           (gates * hidden, hidden), (gates * hidden,))
    w_ih *= 1.0 / np.sqrt(hidden)
    w_hh *= 1.0 / np.sqrt(hidden)
    states = [x, h] if gates == 1 else [x, h, c]
    names = ["x", "h", "c"][:len(states)]
    holders = [ts.placeholder(a.shape, name=n) for a, n in zip(states + [w_ih, w_hh, b], names + ["w_ih", "w_hh", "b"])]
    outs = cell_outputs(gates, holders)
    kernel = ts.build(nn.default_schedule(outs), holders + outs, name=key + "_cell")
    variables = [G.var(n, shape=a.shape) for n, a in zip(names, states)]
    weights = [G.const(w) for w in (w_ih, w_hh, b)]
    exe = G.build(G.Function(variables, (G.nn.rnn_cell if gates == 1 else G.nn.lstm_cell)(*variables, *weights)))
    variants: dict[str, Callable[[], Any]] = {"graph": lambda: exe(*states),
                                              "graph prepared": exe.prepare(*states),
                                              "hand": kernel.prepare(*states, w_ih, w_hh, b),
                                              "numpy": lambda: numpy_cell(gates, states + [w_ih, w_hh, b])}
    if torch is not None:
        t = [torch.from_numpy(a) for a in states + [w_ih, w_hh, b]]
        zero = torch.zeros_like(t[-1])
        variants["torch"] = (lambda: torch.rnn_tanh_cell(t[0], t[1], t[2], t[3], t[4], zero)) if gates == 1 else \
            (lambda: torch.lstm_cell(t[0], (t[1], t[2]), t[3], t[4], t[5], zero))
    wide = [a.astype(np.float64) for a in states + [w_ih, w_hh, b]]
    reference = numpy_cell(gates, wide)
    case = Case(f"{'RNN' if gates == 1 else 'LSTM'} cell, hidden {hidden}", 4.0 * gates * hidden * hidden,
                reference, variants, kernels={"graph": len(exe.kernels)},
                rtol=1e-4, atol=1e-5, note="hand: nn.rnn_cell / nn.lstm_cell, one kernel, prepared call")
    return GraphCase(key, case, [Target("hand", 1 / 1.1, kernels=1), Target("numpy", 1.0), Target("torch", 1.0)])


def _winograd_note(exe: G.Executable, x: np.ndarray, weight: np.ndarray) -> str:
    """Which convolution the graph's kernels run, and Winograd's error against direct convolution."""
    if not any("winograd" in k.name for k in exe.kernels):
        return "direct convolution"
    tile = winograd.choose_tile(x.shape[1], weight.shape[0], x.shape[2], x.shape[3])
    error = winograd.max_error(weight, x, tile) if tile else float("nan")
    return f"Winograd F({tile}x{tile},3x3), max error vs direct convolution {error:.1e} of the output's magnitude"


def conv_relu_conv(quick: bool, torch: ModuleType | None) -> GraphCase:
    c, s, rows = (8, 8, 4) if quick else (64, 56, 28)
    x, w1, w2 = random_arrays(4, (1, c, s, s), (c, c, 3, 3), (c, c, 3, 3))
    w1 *= 1.0 / np.sqrt(9 * c)
    w2 *= 1.0 / np.sqrt(9 * c)
    chain = conv_chain.declare(channels=c, size=s)
    hand = ts.build(conv_chain.fused(chain, rows=rows, **CONV_CHAIN_TILE), chain.args, name="conv_conv_fused")
    data = G.var("x", shape=x.shape)
    f = G.Function([data], G.nn.conv2d(G.nn.relu(G.nn.conv2d(data, G.const(w1), padding=1)), G.const(w2), padding=1))
    exe = G.build(f)
    def numpy_variant() -> np.ndarray:
        return numpy_conv2d(np.maximum(numpy_conv2d(x[0], w1, False), 0), w2, False)[None]

    variants: dict[str, Callable[[], Any]] = {"graph": lambda: exe(x), "graph prepared": exe.prepare(x),
                                              "hand": hand.prepare(x, w1, w2), "numpy": numpy_variant}
    if torch is not None:
        F = torch.nn.functional
        tx, tw1, tw2 = (torch.from_numpy(a) for a in (x, w1, w2))
        variants["torch"] = lambda: F.conv2d(F.relu(F.conv2d(tx, tw1, padding=1)), tw2, padding=1)
    case = Case(f"conv3x3->relu->conv3x3 {c}x{s}x{s}", float(chain.flops), [conv_chain.reference(x, w1, w2)],
                variants, kernels={"graph": len(exe.kernels)},
                note="hand: recipes.conv_chain fused (one kernel, bands of rows); " + _winograd_note(exe, x, w1))
    return GraphCase("conv_conv", case, [Target("hand", 1 / 1.1), Target("torch", 1.4), Target("numpy", 1.0)])


def gemm(quick: bool, torch: ModuleType | None) -> GraphCase:
    n = 64 if quick else 1024
    a, w = random_arrays(6, (n, n), (n, n))
    x = G.var("x", shape=(n, n))
    exe = G.build(G.Function([x], G.nn.dense(x, G.const(w))))
    a_t, b_t = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    c_t = nn.matmul(a_t, b_t)
    hand = ts.build(nn.default_schedule(c_t), [a_t, b_t, c_t], name="gemm")
    w_t = np.ascontiguousarray(w.T)
    out = np.empty((n, n), np.float32)
    variants: dict[str, Callable[[], Any]] = {"graph": lambda: exe(a), "graph prepared": exe.prepare(a),
                                              "hand": hand.prepare(a, w_t),
                                              "numpy": lambda: np.matmul(a, w_t, out=out)}
    if torch is not None:
        ta, tw, tc = torch.from_numpy(a), torch.from_numpy(w), torch.empty(n, n)
        variants["torch"] = lambda: torch.mm(ta, tw.T, out=tc)
    case = Case(f"GEMM {n}x{n}x{n} through G.nn.dense", 2.0 * n ** 3, [a.astype(np.float64) @ w.T.astype(np.float64)],
                variants, kernels={"graph": len(exe.kernels)}, rtol=1e-4, atol=1e-3 * np.sqrt(n),
                note="hand: nn.matmul default schedule on the transposed weight; NumPy: a @ w.T")
    return GraphCase("gemm", case, [Target("hand", 1 / 1.1), Target("numpy", 1.5), Target("numpy", 0.95)])


def resnet_block(quick: bool, torch: ModuleType | None) -> GraphCase:
    c, s = (8, 8) if quick else (64, 56)
    x, w1, w2 = random_arrays(8, (1, c, s, s), (c, c, 3, 3), (c, c, 3, 3))
    w1 *= 1.0 / np.sqrt(9 * c)
    w2 *= 1.0 / np.sqrt(9 * c)
    bn1, bn2 = _bn_params(c, 10), _bn_params(c, 20)
    data = G.var("x", shape=x.shape)
    y = G.nn.relu(_graph_bn(G.nn.conv2d(data, G.const(w1), padding=1), bn1))
    y = G.nn.relu(G.add(_graph_bn(G.nn.conv2d(y, G.const(w2), padding=1), bn2), data))
    exe = G.build(G.Function([data], y))
    variants: dict[str, Callable[[], Any]] = {"graph": lambda: exe(x), "hand": exe.prepare(x)}
    if torch is not None:
        F = torch.nn.functional
        tx, tw1, tw2 = (torch.from_numpy(a) for a in (x, w1, w2))
        variants["torch"] = lambda: F.relu(_torch_bn(torch, F.conv2d(F.relu(_torch_bn(
            torch, F.conv2d(tx, tw1, padding=1), bn1)), tw2, padding=1), bn2) + tx)
    wide = [a.astype(np.float64) for a in (x, w1, w2)]
    mid = np.maximum(_numpy_bn(numpy_conv2d(wide[0][0], wide[1], False), bn1), 0)
    reference = np.maximum(_numpy_bn(numpy_conv2d(mid, wide[2], False), bn2) + wide[0][0], 0)[None]
    flops = 2 * 2.0 * c * c * 9 * s * s
    case = Case(f"ResNet basic block {c}x{s}x{s}", flops, [reference], variants,
                kernels={"graph": len(exe.kernels)},
                note="hand: the same graph's prepared call; " + _winograd_note(exe, x, w1))
    return GraphCase("resnet", case, [Target("torch", 1.2, kernels=2)])


@dataclass(frozen=True)
class OverheadCase:
    """A plain call and the prepared call of the same work, and the overhead the issue allows."""

    name: str
    plain: Callable[[], Any]
    prepared: Callable[[], Any]
    allowed_us: float
    above_prepared: bool = True
    """Whether ``allowed_us`` bounds the plain call minus the prepared call (else the plain call)."""


def _plain_call(exe: G.Executable, inputs: list[np.ndarray]) -> Callable[[], Any]:
    """``exe(*inputs)`` as a call of no arguments (bound to this executable and these inputs)."""
    return lambda: exe(*inputs)


def call_overheads(quick: bool) -> list[OverheadCase]:
    """The RNN and LSTM cells' executables (allowed: 1.5 us + 0.3 us per kernel above the prepared call)
    and a 4-argument kernel's checked call (allowed: 1.5 us in all)."""
    hidden = 16 if quick else 128
    cases = []
    for gates, builder in ((1, G.nn.rnn_cell), (4, G.nn.lstm_cell)):
        states = random_arrays(11, *[(1, hidden)] * (2 if gates == 1 else 3))
        weights = [G.const(w) for w in random_arrays(12, (gates * hidden, hidden), (gates * hidden, hidden),
                                                       (gates * hidden,), scale=0.1)]
        variables = [G.var(n, shape=a.shape) for n, a in zip("xhc", states)]
        exe = G.build(G.Function(variables, builder(*variables, *weights)))
        cases.append(OverheadCase(f"{'RNN' if gates == 1 else 'LSTM'} cell executable ({len(exe.kernels)} kernel), "
                                  "exe(*inputs)", _plain_call(exe, states), exe.prepare(*states),
                                  1.5 + 0.3 * len(exe.kernels)))
    holders = [ts.placeholder((4,), name=n) for n in "ABC"]
    out = ts.compute((4,), lambda i: holders[0][i] * holders[1][i] + holders[2][i], name="D")
    kernel = ts.build(ts.create_schedule(out.op), holders + [out], name="fma4")
    arrays = random_arrays(13, (4,), (4,), (4,)) + [np.empty(4, np.float32)]
    cases.append(OverheadCase("4-argument kernel, kernel(a, b, c, d)", lambda: kernel(*arrays),
                              kernel.prepare(*arrays), 1.5, above_prepared=False))
    return cases


GRAPH_CASES: list[tuple[str, Callable[[bool, ModuleType | None], GraphCase]]] = [
    ("conv1x1", lambda quick, torch: conv_bn_relu("conv1x1", quick, torch)),
    ("depthwise", lambda quick, torch: conv_bn_relu("depthwise", quick, torch)),
    ("rnn", lambda quick, torch: cell("rnn", quick, torch)),
    ("lstm", lambda quick, torch: cell("lstm", quick, torch)),
    ("conv_conv", conv_relu_conv),
    ("gemm", gemm),
    ("resnet", resnet_block),
]
"""The cases in report order, by key."""
