"""Recurrent cells with PyTorch's formulas, built from :mod:`.dense`, :mod:`.elemwise` and
:mod:`.transform` ops (one bias ``b``, the sum of PyTorch's ``b_ih`` and ``b_hh``):

- ``rnn_cell``: ``h' = tanh(x @ w_ih.T + h @ w_hh.T + b)``;
- ``lstm_cell``: ``gates = x @ w_ih.T + h @ w_hh.T + b`` split into ``i, f, g, o`` (PyTorch's order),
  ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' = sigmoid(o) * tanh(c')``; returns ``(h', c')``.

Shapes: ``x (B, I)``, ``h`` and ``c (B, H)``, ``w_ih (G*H, I)``, ``w_hh (G*H, H)``, ``b (G*H,)`` with
``G = 1`` (RNN) or ``4`` (LSTM). :func:`tesched.nn.default_schedule` schedules them like any other ops.
"""
from __future__ import annotations

from tesched.nn.dense import dense
from tesched.nn.elemwise import add, multiply, sigmoid, tanh
from tesched.nn.transform import split
from tesched.te.tensor import Tensor


def _gates(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b: Tensor, gates: int, op: str) -> Tensor:
    batch, hidden = h.shape
    expected = {"x": (batch, x.shape[-1]), "w_ih": (gates * hidden, x.shape[-1]),
                "w_hh": (gates * hidden, hidden), "b": (gates * hidden,)}
    for name, t in (("x", x), ("w_ih", w_ih), ("w_hh", w_hh), ("b", b)):
        if t.shape != expected[name]:
            raise ValueError(f"{op}: {name} has shape {t.shape}, expected {expected[name]} for h of shape "
                             f"{h.shape} and x of shape {x.shape}")
    return add(add(dense(x, w_ih), dense(h, w_hh)), b)


def rnn_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b: Tensor) -> Tensor:
    """One step of an Elman RNN with tanh: the new hidden state."""
    return tanh(_gates(x, h, w_ih, w_hh, b, 1, "rnn_cell"))


def lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """One LSTM step: ``(h', c')``."""
    if c.shape != h.shape:
        raise ValueError(f"lstm_cell: c has shape {c.shape}, expected {h.shape} like h")
    i, f, g, o = split(_gates(x, h, w_ih, w_hh, b, 4, "lstm_cell"), 4, axis=1)
    c_next = add(multiply(sigmoid(f), c), multiply(sigmoid(i), tanh(g)))
    h_next = multiply(sigmoid(o), tanh(c_next))
    return h_next, c_next
