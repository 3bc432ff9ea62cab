"""Recurrent-cell workloads at batch 1: an RNN cell and an LSTM cell (PyTorch's formulas and gate order,
one bias ``b``), hidden size 128.

- fused: the cell declared with :func:`tesched.nn.rnn_cell` / :func:`tesched.nn.lstm_cell` and its
  default schedule: one kernel per cell;
- unfused: the graph API with ``fuse_ops`` disabled (one kernel per op);
- ``graph fused`` (extra): the graph API with its default fusion rules, under which the cell's two
  matmuls, the slices of its gates and its elementwise ops share one kernel (``combine_anchors``,
  ``slice_anchors``, and the cell state kept as a second output);
- NumPy: the formulas with ``@``; PyTorch: ``torch.rnn_tanh_cell`` / ``torch.lstm_cell``, the functions
  behind ``nn.RNNCell`` and ``nn.LSTMCell``.
"""
from __future__ import annotations

from types import ModuleType
from typing import Sequence

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched import graph as G
from tesched.te.tensor import Tensor
from tesched.tools.bench.workloads import Case, Workload, random_arrays


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def numpy_cell(gates: int, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The RNN cell (``gates == 1``, ``arrays`` = ``x, h, w_ih, w_hh, b``: ``[h']``) or the LSTM cell
    (``gates == 4``, ``arrays`` = ``x, h, c, w_ih, w_hh, b``: ``[h', c']``), the kernels' argument order."""
    x, h = arrays[:2]
    w_ih, w_hh, b = arrays[-3:]
    pre = x @ w_ih.T + h @ w_hh.T + b
    if gates == 1:
        return [np.tanh(pre)]
    i, f, g, o = np.split(pre, 4, axis=1)
    c_next = _sigmoid(f) * arrays[2] + _sigmoid(i) * np.tanh(g)
    return [_sigmoid(o) * np.tanh(c_next), c_next]


def cell_outputs(gates: int, holders: Sequence[Tensor]) -> list[Tensor]:
    """:func:`tesched.nn.rnn_cell` (``gates == 1``: ``[h']``) or :func:`tesched.nn.lstm_cell` (``gates == 4``:
    ``[h', c']``) of ``holders`` in the order :func:`numpy_cell` takes its arrays."""
    if gates == 1:
        x, h, w_ih, w_hh, b = holders
        return [nn.rnn_cell(x, h, w_ih, w_hh, b)]
    x, h, c, w_ih, w_hh, b = holders
    return list(nn.lstm_cell(x, h, c, w_ih, w_hh, b))


def _cell(gates: int, hidden: int, torch: ModuleType | None) -> Case:
    x, h, c, w_ih, w_hh, b = random_arrays(5, (1, hidden), (1, hidden), (1, hidden), (gates * hidden, hidden),
                                           (gates * hidden, hidden), (gates * hidden,), scale=1.0)
    w_ih *= 1.0 / np.sqrt(hidden)
    w_hh *= 1.0 / np.sqrt(hidden)
    states = [x, h] if gates == 1 else [x, h, c]
    arrays = states + [w_ih, w_hh, b]

    placeholders = [ts.placeholder(a.shape, name=n) for a, n in zip(arrays, ("x", "h", "c")[:len(states)] +
                                                                      ("w_ih", "w_hh", "b"))]
    outs = cell_outputs(gates, placeholders)
    kernel = ts.build(nn.default_schedule(outs), placeholders + outs, name="rnn_cell" if gates == 1 else "lstm_cell")

    names = [p.name for p in placeholders]
    variables = [G.var(n, shape=a.shape) for n, a in zip(names, arrays)]
    graph_cell = G.nn.rnn_cell if gates == 1 else G.nn.lstm_cell
    f = G.Function(variables, graph_cell(*variables))
    params = dict(zip(names[-3:], arrays[-3:]))
    graph_fused = G.build(f, params=params)
    unfused = G.build(f, params=params, disabled_passes=["fuse_ops"])

    variants = {"fused": lambda: kernel(*arrays), "fused prepared": kernel.prepare(*arrays),
                "unfused": lambda: unfused(*states),
                "numpy": lambda: numpy_cell(gates, arrays),
                "graph fused": graph_fused.prepare(*states)}
    if torch is not None:
        t = [torch.from_numpy(a) for a in arrays]
        zero_bias = torch.zeros_like(t[-1])
        if gates == 1:
            variants["torch"] = lambda: torch.rnn_tanh_cell(t[0], t[1], t[2], t[3], t[4], zero_bias)
        else:
            variants["torch"] = lambda: torch.lstm_cell(t[0], (t[1], t[2]), t[3], t[4], t[5], zero_bias)
    wide = [a.astype(np.float64) for a in arrays]
    reference = numpy_cell(gates, wide)
    name = f"{'RNN' if gates == 1 else 'LSTM'} cell, hidden {hidden}"
    return Case(name, 2.0 * gates * hidden * 2 * hidden, reference, variants,
                kernels={"fused": 1, "unfused": len(unfused.kernels), "graph fused": len(graph_fused.kernels)},
                rtol=1e-4, atol=1e-5)


def rnn(quick: bool, torch: ModuleType | None) -> Case:
    return _cell(1, 16 if quick else 128, torch)


def lstm(quick: bool, torch: ModuleType | None) -> Case:
    return _cell(4, 16 if quick else 128, torch)


CELL_WORKLOADS = [Workload("rnn", rnn), Workload("lstm", lstm)]
