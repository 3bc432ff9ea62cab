"""rnn_cell and lstm_cell against a NumPy re-implementation of PyTorch's RNNCell/LSTMCell formulas."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import ATOL, RTOL, run


def torch_lstm_cell(x, h, c, w_ih, w_hh, b):
    """PyTorch's LSTMCell: gates in the order input, forget, cell, output."""
    gates = x @ w_ih.T + h @ w_hh.T + b
    i, f, g, o = np.split(gates, 4, axis=1)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c_next = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c_next), c_next


def test_rnn_cell(rand):
    x, h = ts.placeholder((2, 5), name="x"), ts.placeholder((2, 6), name="h")
    w_ih, w_hh, b = ts.placeholder((6, 5), name="w_ih"), ts.placeholder((6, 6), name="w_hh"), ts.placeholder((6,), name="b")
    arrays = [rand(t.shape, low=-1) for t in (x, h, w_ih, w_hh, b)]
    out, _ = run(nn.rnn_cell(x, h, w_ih, w_hh, b), [x, h, w_ih, w_hh, b], arrays)
    xa, ha, wia, wha, ba = (a.astype(np.float64) for a in arrays)
    np.testing.assert_allclose(out, np.tanh(xa @ wia.T + ha @ wha.T + ba), rtol=RTOL, atol=ATOL)


def test_lstm_cell(rand):
    hidden = 4
    x, h, c = ts.placeholder((2, 3), name="x"), ts.placeholder((2, hidden), name="h"), ts.placeholder((2, hidden), name="c")
    w_ih, w_hh = ts.placeholder((4 * hidden, 3), name="w_ih"), ts.placeholder((4 * hidden, hidden), name="w_hh")
    b = ts.placeholder((4 * hidden,), name="b")
    inputs = [x, h, c, w_ih, w_hh, b]
    arrays = [rand(t.shape, low=-1) for t in inputs]
    (h_next, c_next), _ = run(list(nn.lstm_cell(*inputs)), inputs, arrays)
    h_ref, c_ref = torch_lstm_cell(*(a.astype(np.float64) for a in arrays))
    np.testing.assert_allclose(h_next, h_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(c_next, c_ref, rtol=RTOL, atol=ATOL)


def test_cells_reject_mismatched_weights():
    x, h = ts.placeholder((1, 3), name="x"), ts.placeholder((1, 4), name="h")
    with pytest.raises(ValueError, match="w_ih has shape"):
        nn.rnn_cell(x, h, ts.placeholder((4, 2), name="w_ih"), ts.placeholder((4, 4), name="w_hh"),
                    ts.placeholder((4,), name="b"))
    with pytest.raises(ValueError, match="c has shape"):
        nn.lstm_cell(x, h, ts.placeholder((1, 5), name="c"), ts.placeholder((16, 3), name="w_ih"),
                     ts.placeholder((16, 4), name="w_hh"), ts.placeholder((16,), name="b"))
