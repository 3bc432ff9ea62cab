"""NumPy reference evaluation of graphs."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.interpret import evaluate_constant

from .helpers import ATOL, RTOL, lstm, lstm_reference, vgg_block, vgg_reference


def test_interpret_a_conv_block(rand):
    f, params = vgg_block()
    x = rand((1, 4, 6, 6), low=-1)
    out = G.interpret(G.bind_params(f, params), data=x)
    np.testing.assert_allclose(out, vgg_reference(x, params), rtol=RTOL, atol=ATOL)


def test_interpret_returns_tuples(rand):
    f, params = lstm()
    x, h, c = rand((2, 3), low=-1), rand((2, 4), low=-1), rand((2, 4), low=-1)
    h_next, c_next = G.interpret(G.bind_params(f, params), x, h, c)
    h_ref, c_ref = lstm_reference(x, h, c, params)
    np.testing.assert_allclose(h_next, h_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(c_next, c_ref, rtol=RTOL, atol=ATOL)


def test_evaluate_constant():
    expr = G.add(G.const(np.arange(3, dtype="float32")), G.const(np.ones((2, 1), "float32")))
    c = evaluate_constant(expr)
    np.testing.assert_array_equal(c.data, np.arange(3) + np.ones((2, 1)))
    with pytest.raises(ValueError, match="variable x has no value"):
        evaluate_constant(G.nn.relu(G.var("x", shape=(2,))))
