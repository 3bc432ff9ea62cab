"""Recurrent cells as graph builders (PyTorch's formulas and gate order): they expand into ``nn.dense``,
``add``, ``strided_slice``, ``sigmoid``, ``tanh``, ``subtract`` and ``multiply`` calls, so fusion decides
how many kernels a cell takes. ``rnn_cell`` and ``lstm_cell`` take one bias ``b`` (see
:mod:`tesched.nn.rnn` for their formulas and shapes); ``gru_cell`` takes PyTorch's two, since its
candidate gate scales the hidden part, bias included, by the reset gate.
"""
from __future__ import annotations

from tesched.graph.ir import Expr, Tuple
from tesched.graph.ops_elemwise import add, multiply, sigmoid, subtract, tanh
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


def gru_cell(x: Expr, h: Expr, w_ih: Expr, w_hh: Expr, b_ih: Expr, b_hh: Expr) -> Expr:
    """One GRU step (PyTorch's ``GRUCell``, gates ``r, z, n``): ``n = tanh(x W_in + b_in + r * (h W_hn +
    b_hn))`` and ``h' = n + z * (h - n)``; the weights are ``(3H, I)`` and ``(3H, H)``, the biases ``(3H,)``."""
    if w_hh.tensor_type.ndim != 2 or w_hh.tensor_type.shape[0] != 3 * h.tensor_type.shape[-1]:
        raise ValueError(f"gru_cell: w_hh has type {w_hh.tensor_type}, expected (3 * {h.tensor_type.shape[-1]}, "
                         f"{h.tensor_type.shape[-1]}) for h of type {h.tensor_type}")
    x_r, x_z, x_n = split(dense(x, w_ih, b_ih), 3, axis=1)
    h_r, h_z, h_n = split(dense(h, w_hh, b_hh), 3, axis=1)
    reset, update = sigmoid(add(x_r, h_r)), sigmoid(add(x_z, h_z))
    candidate = tanh(add(x_n, multiply(reset, h_n)))
    return add(candidate, multiply(update, subtract(h, candidate)))
