"""A simple RNN declared with ``ts.scan``, ``h[t] = tanh(W h[t-1] + U x[t])`` from ``h[0] = h0``, and its NumPy
loop: shared by the scan, autoscheduler and gradient tests."""
import numpy as np

import tesched as ts


def rnn_scan(T, B, H, I):
    """``((X, W, U, h0), xu, hw, upd, h)``: the inputs, the input projection, the recurrent product, the
    update and the scan."""
    X = ts.placeholder((T, B, I), name="X")
    W = ts.placeholder((H, H), name="W")
    U = ts.placeholder((H, I), name="U")
    h0 = ts.placeholder((B, H), name="h0")
    state = ts.placeholder((T, B, H), name="h")
    k = ts.reduce_axis((0, I), name="k")
    xu = ts.compute((T, B, H), lambda t, b, j: ts.sum(X[t, b, k] * U[j, k], axis=k), name="xu")
    init = ts.compute((1, B, H), lambda _, b, j: h0[b, j], name="init")
    kh = ts.reduce_axis((0, H), name="kh")
    hw = ts.compute((T, B, H), lambda t, b, j: ts.sum(state[t - 1, b, kh] * W[j, kh], axis=kh), name="hw")
    upd = ts.compute((T, B, H), lambda t, b, j: ts.tanh(hw[t, b, j] + xu[t, b, j]), name="upd")
    return (X, W, U, h0), xu, hw, upd, ts.scan(init, upd, state, name="rnn")


def rnn_reference(x, w, u, h0):
    """The states ``rnn_scan`` computes, by a NumPy loop."""
    out = np.zeros((x.shape[0],) + h0.shape, "float32")
    out[0] = h0
    for t in range(1, x.shape[0]):
        out[t] = np.tanh(out[t - 1] @ w.T + x[t] @ u.T)
    return out
