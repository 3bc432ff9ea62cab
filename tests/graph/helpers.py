"""Graphs shared by the graph tests, with NumPy references written independently of tesched.

``vgg_block`` is conv2d -> bias_add -> batch_norm -> relu (parameters bound as constants by the caller),
``lstm`` an LSTM cell; ``vgg_reference`` and ``lstm_reference`` compute them with NumPy loops and
PyTorch's formulas.
"""
from __future__ import annotations

import numpy as np

from tesched import graph as G

RTOL, ATOL = 1e-4, 1e-4


def vgg_block(channels: int = 4, out_channels: int = 6, size: int = 6):
    """``(function, params)`` of relu(batch_norm(bias_add(conv2d(data, w, padding=1), b)))."""
    rng = np.random.default_rng(7)
    x = G.var("data", shape=(1, channels, size, size))
    w = G.var("conv1_weight", shape=(out_channels, channels, 3, 3))
    b = G.var("conv1_bias", shape=(out_channels,))
    stats = [G.var(n, shape=(out_channels,)) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
    y = G.nn.conv2d(x, w, strides=1, padding=1)
    y = G.nn.bias_add(y, b)
    y = G.nn.batch_norm(y, *stats, epsilon=1e-5)
    y = G.nn.relu(y)
    f = G.Function([x, w, b, *stats], y)
    params = {"conv1_weight": rng.standard_normal((out_channels, channels, 3, 3)).astype("float32"),
              "conv1_bias": rng.standard_normal(out_channels).astype("float32"),
              "bn_gamma": rng.uniform(0.5, 2, out_channels).astype("float32"),
              "bn_beta": rng.standard_normal(out_channels).astype("float32"),
              "bn_mean": rng.standard_normal(out_channels).astype("float32"),
              "bn_var": rng.uniform(0.5, 2, out_channels).astype("float32")}
    return f, params


def vgg_reference(x: np.ndarray, params: dict) -> np.ndarray:
    w = params["conv1_weight"].astype(np.float64)
    k, _, kh, kw = w.shape
    n, _, h, width = x.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, k, h, width))
    for i in range(kh):
        for j in range(kw):
            conv += np.einsum("nchw,kc->nkhw", padded[:, :, i:i + h, j:j + width], w[:, :, i, j])
    c = (slice(None), None, None)
    y = conv + params["conv1_bias"][c]
    y = (y - params["bn_mean"][c]) / np.sqrt(params["bn_var"][c] + 1e-5) * params["bn_gamma"][c] + params["bn_beta"][c]
    return np.maximum(y, 0)


def lstm(hidden: int = 4, inputs: int = 3, batch: int = 2):
    """``(function, params)`` of an LSTM cell with inputs x, h, c."""
    rng = np.random.default_rng(11)
    x, h, c = G.var("x", shape=(batch, inputs)), G.var("h", shape=(batch, hidden)), G.var("c", shape=(batch, hidden))
    w_ih, w_hh = G.var("w_ih", shape=(4 * hidden, inputs)), G.var("w_hh", shape=(4 * hidden, hidden))
    b = G.var("b", shape=(4 * hidden,))
    f = G.Function([x, h, c, w_ih, w_hh, b], G.nn.lstm_cell(x, h, c, w_ih, w_hh, b))
    params = {"w_ih": rng.standard_normal((4 * hidden, inputs)).astype("float32"),
              "w_hh": rng.standard_normal((4 * hidden, hidden)).astype("float32"),
              "b": rng.standard_normal(4 * hidden).astype("float32")}
    return f, params


def lstm_reference(x, h, c, params):
    """PyTorch's LSTMCell (gate order i, f, g, o) in float64."""
    gates = x @ params["w_ih"].T.astype(np.float64) + h @ params["w_hh"].T.astype(np.float64) + params["b"]
    hidden = h.shape[1]
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c_next = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c_next), c_next


def op_names(f: G.Function) -> list[str]:
    """The names of the ops called in ``f``'s body, producers first."""
    from tesched.graph.visit import post_order
    return [n.op_name for n in post_order(f.body) if isinstance(n, G.Call)]


def wee_net(channels: int = 4, size: int = 8, classes: int = 5):
    """``(function, params)`` of a small classifier: two conv3x3 -> batch_norm -> relu blocks, global
    average pooling and a dense layer with bias."""
    rng = np.random.default_rng(13)
    x = G.var("data", shape=(1, 3, size, size))
    params, h = {}, x
    for k, c_in in enumerate((3, channels)):
        w, stats = G.var(f"conv{k}_weight", shape=(channels, c_in, 3, 3)), \
            [G.var(f"bn{k}_{n}", shape=(channels,)) for n in ("gamma", "beta", "mean", "var")]
        h = G.nn.relu(G.nn.batch_norm(G.nn.conv2d(h, w, padding=1), *stats, epsilon=1e-5))
        params[w.name] = (rng.standard_normal((channels, c_in, 3, 3)) / np.sqrt(9 * c_in)).astype("float32")
        params.update({f"bn{k}_gamma": rng.uniform(0.5, 2, channels).astype("float32"),
                       f"bn{k}_beta": rng.standard_normal(channels).astype("float32"),
                       f"bn{k}_mean": rng.standard_normal(channels).astype("float32"),
                       f"bn{k}_var": rng.uniform(0.5, 2, channels).astype("float32")})
    fc_w, fc_b = G.var("fc_weight", shape=(classes, channels)), G.var("fc_bias", shape=(classes,))
    params.update(fc_weight=rng.standard_normal((classes, channels)).astype("float32"),
                  fc_bias=rng.standard_normal(classes).astype("float32"))
    logits = G.nn.bias_add(G.nn.dense(G.reshape(G.nn.global_avg_pool2d(h), (1, channels)), fc_w), fc_b)
    from tesched.graph.visit import post_order
    variables = [n for n in post_order(logits) if isinstance(n, G.Var) and n is not x]
    return G.Function([x, *dict.fromkeys(variables)], logits), params


def wee_net_reference(x: np.ndarray, params: dict) -> np.ndarray:
    """The WeeNet in float64 NumPy."""
    h = x.astype(np.float64)
    c = (slice(None), None, None)
    for k in range(2):
        w = params[f"conv{k}_weight"].astype(np.float64)
        padded = np.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)))
        conv = sum(np.einsum("nchw,kc->nkhw", padded[:, :, i:i + h.shape[2], j:j + h.shape[3]], w[:, :, i, j])
                   for i in range(3) for j in range(3))
        g, b, m, v = (params[f"bn{k}_{n}"] for n in ("gamma", "beta", "mean", "var"))
        h = np.maximum((conv - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c], 0)
    return h.mean(axis=(2, 3)) @ params["fc_weight"].T.astype(np.float64) + params["fc_bias"]
