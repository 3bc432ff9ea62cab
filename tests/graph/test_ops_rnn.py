"""The recurrent cell builders against NumPy re-implementations of PyTorch's cells, compiled and interpreted."""
import re

import numpy as np
import pytest

from tesched import graph as G

from .helpers import ATOL, RTOL, lstm, lstm_reference


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def torch_gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    """PyTorch's GRUCell: gates reset, update, new; the reset gate scales the hidden part with its bias."""
    x_r, x_z, x_n = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def test_gru_cell_compiled_and_interpreted(rand):
    batch, inputs, hidden = 2, 3, 5
    x, h = G.var("x", shape=(batch, inputs)), G.var("h", shape=(batch, hidden))
    w_ih, w_hh = G.var("w_ih", shape=(3 * hidden, inputs)), G.var("w_hh", shape=(3 * hidden, hidden))
    b_ih, b_hh = G.var("b_ih", shape=(3 * hidden,)), G.var("b_hh", shape=(3 * hidden,))
    f = G.Function([x, h, w_ih, w_hh, b_ih, b_hh], G.nn.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh))
    arrays = [rand(p.tensor_type.shape, low=-1) for p in f.params]
    want = torch_gru_cell(*(a.astype(np.float64) for a in arrays))
    np.testing.assert_allclose(G.interpret(f, *arrays), want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(G.build(f)(*arrays), want, rtol=RTOL, atol=ATOL)


def test_gru_cell_checks_the_hidden_weight():
    x, h = G.var("x", shape=(1, 3)), G.var("h", shape=(1, 4))
    with pytest.raises(ValueError, match=r"gru_cell: w_hh has type .*expected \(3 \* 4, 4\)"):
        G.nn.gru_cell(x, h, G.var("a", shape=(12, 3)), G.var("b", shape=(8, 4)), G.var("c", shape=(12,)),
                      G.var("d", shape=(12,)))


def test_lstm_cell_interpreted(rand):
    f, params = lstm()
    x, h, c = (rand(p.tensor_type.shape, low=-1) for p in f.params[:3])
    got = G.interpret(G.bind_params(f, params), x, h, c)
    for value, want in zip(got, lstm_reference(x, h, c, params)):
        np.testing.assert_allclose(value, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("constant", [True, False])
def test_gru_cell_products_are_stored_whole_and_tiled(constant, rand):
    """The hidden product of a GRU cell is read only through slices by the new hidden state (another
    shape): it is stored whole and computed in tiles (vector loops), never element by element inside the
    output's loop; with constant weights both products read packed panels. One kernel either way."""
    hidden = 32
    arrays = [rand(s, low=-1) for s in [(1, hidden), (1, hidden), (3 * hidden, hidden), (3 * hidden, hidden),
                                          (3 * hidden,), (3 * hidden,)]]
    x, h = G.var("x", shape=(1, hidden)), G.var("h", shape=(1, hidden))
    weights = [G.const(a) for a in arrays[2:]] if constant else \
        [G.var(n, shape=a.shape) for n, a in zip(("w_ih", "w_hh", "b_ih", "b_hh"), arrays[2:])]
    params = [x, h] if constant else [x, h, *weights]
    exe = G.build(G.Function(params, G.nn.gru_cell(x, h, *weights)))
    got = exe(*(arrays[:2] if constant else arrays))
    np.testing.assert_allclose(got, torch_gru_cell(*(a.astype(np.float64) for a in arrays)), rtol=RTOL, atol=ATOL)
    assert len(exe.kernels) == 1
    ir = str(exe.kernels[0].lowered)
    product = "dense_panels" if constant else "dense"
    assert len(re.findall(rf"allocate {product}\.local(#\d+)?\[", ir)) == 2
    output_loops = ir[ir.index("produce add {"):]
    assert "produce dense" not in output_loops and "vectorized for" in output_loops
