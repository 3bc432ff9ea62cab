"""fold_scale_axis: per-channel scales fold into conv2d/dense weights, never across other ops."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.passes import fold_scale_axis

from ..helpers import ATOL, RTOL, op_names


def conv_graph(rand, tail):
    x = G.var("x", shape=(1, 3, 5, 5))
    y = G.nn.conv2d(x, G.const(rand((4, 3, 3, 3), low=-1)), padding=1)
    return G.Function([x], tail(y))


def check_same_output(rand, before, after):
    x = rand(before.params[0].tensor_type.shape, low=-1)
    np.testing.assert_allclose(G.interpret(after, x), G.interpret(before, x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("tail, expected", [
    (lambda y: G.multiply(y, G.const(np.linspace(0.5, 2, 4, dtype="float32").reshape(4, 1, 1))), ["nn.conv2d"]),
    (lambda y: G.multiply(G.const(np.float32(3)), y), ["nn.conv2d"]),
    (lambda y: G.multiply(G.nn.bias_add(y, G.const(np.arange(4, dtype="float32"))),
                          G.const(np.arange(1, 5, dtype="float32").reshape(1, 4, 1, 1))), ["nn.conv2d", "nn.bias_add"]),
    (lambda y: G.multiply(G.add(y, G.const(np.ones((4, 1, 1), "float32"))),
                          G.const(np.arange(1, 5, dtype="float32").reshape(4, 1, 1))), ["nn.conv2d", "add"]),
])
def test_scales_fold_into_conv_weights_and_biases(rand, tail, expected):
    f = conv_graph(rand, tail)
    out = fold_scale_axis(f)
    assert op_names(out) == expected
    assert isinstance(out.body.args[1] if expected == ["nn.conv2d"] else out.body.args[0].args[1], G.Constant)
    check_same_output(rand, f, out)


def test_scale_folds_into_dense(rand):
    x = G.var("x", shape=(2, 3))
    f = G.Function([x], G.multiply(G.nn.dense(x, G.const(rand((5, 3)))), G.const(rand((5,), low=1, high=2))))
    out = fold_scale_axis(f)
    assert op_names(out) == ["nn.dense"]
    check_same_output(rand, f, out)


@pytest.mark.parametrize("tail", [
    lambda y: G.multiply(G.nn.relu(y), G.const(np.full((4, 1, 1), 2, "float32"))),        # across relu
    lambda y: G.multiply(y, G.const(np.full((5, 1), 2, "float32"))),                      # not per channel
    lambda y: G.multiply(y, G.const(np.full((2, 1, 1, 1, 1), 2, "float32"))),             # broadcasts out
    lambda y: G.Tuple([G.multiply(y, G.const(np.full((4, 1, 1), 2, "float32"))), y]),    # conv used twice
])
def test_nothing_folds_across_other_ops_or_shared_values(rand, tail):
    f = conv_graph(rand, tail)
    out = fold_scale_axis(f)
    assert op_names(out) == op_names(f)


def test_a_variable_weight_is_scaled_in_the_graph(rand):
    x, w = G.var("x", shape=(2, 3)), G.var("w", shape=(4, 3))
    f = G.Function([x, w], G.multiply(G.nn.dense(x, w), G.const(rand((4,), low=1, high=2))))
    out = fold_scale_axis(f)
    assert op_names(out) == ["multiply", "nn.dense"]
    xa, wa = rand((2, 3)), rand((4, 3))
    np.testing.assert_allclose(G.interpret(out, xa, wa), G.interpret(f, xa, wa), rtol=RTOL, atol=ATOL)
