"""Recurrent cells as graph builders (PyTorch's formulas and gate order, one bias ``b``): they expand into
``nn.dense``, ``add``, ``strided_slice``, ``sigmoid``, ``tanh`` and ``multiply`` calls, so fusion decides
how many kernels a cell takes. See :mod:`tesched.nn.rnn` for the formulas and shapes.
"""
from __future__ import annotations

from tesched.graph.ir import Expr, Tuple
from tesched.graph.ops_elemwise import add, multiply, sigmoid, tanh
from tesched.graph.ops_nn import dense
from tesched.graph.ops_transform import split


def _gates(x: Expr, h: Expr, w_ih: Expr, w_hh: Expr, b: Expr) -> Expr:
    return add(add(dense(x, w_ih), dense(h, w_hh)), b)


def rnn_cell(x: Expr, h: Expr, w_ih: Expr, w_hh: Expr, b: Expr) -> Expr:
    """``tanh(x @ w_ih.T + h @ w_hh.T + b)``: the new hidden state."""
    return tanh(_gates(x, h, w_ih, w_hh, b))


def lstm_cell(x: Expr, h: Expr, c: Expr, w_ih: Expr, w_hh: Expr, b: Expr) -> Tuple:
    """One LSTM step; returns the tuple ``(h', c')``."""
    if c.tensor_type != h.tensor_type:
        raise ValueError(f"lstm_cell: c has type {c.tensor_type}, expected {h.tensor_type} like h")
    i, f, g, o = split(_gates(x, h, w_ih, w_hh, b), 4, axis=1)
    c_next = add(multiply(sigmoid(f), c), multiply(sigmoid(i), tanh(g)))
    return Tuple([multiply(sigmoid(o), tanh(c_next)), c_next])
