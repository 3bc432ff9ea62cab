"""simplify_inference: batch_norm with constant parameters becomes multiply + add."""
import numpy as np

from tesched import graph as G
from tesched.graph.passes import simplify_inference

from ..helpers import ATOL, RTOL, op_names, vgg_block


def test_constant_batch_norm_becomes_multiply_and_add(rand):
    f, params = vgg_block()
    bound = G.bind_params(f, params)
    out = simplify_inference(bound)
    assert op_names(out) == ["nn.conv2d", "nn.bias_add", "multiply", "add", "nn.relu"]
    scale = out.body.args[0].args[0].args[1]
    assert isinstance(scale, G.Constant) and scale.data.shape == (6, 1, 1)
    x = rand((1, 4, 6, 6), low=-1)
    np.testing.assert_allclose(G.interpret(out, x), G.interpret(bound, x), rtol=RTOL, atol=ATOL)


def test_batch_norm_along_the_last_axis(rand):
    x = G.var("x", shape=(3, 5))
    stats = [G.const(rand((5,), low=0.5, high=2)) for _ in range(4)]
    f = G.Function([x], G.nn.batch_norm(x, *stats, axis=-1))
    out = simplify_inference(f)
    xa = rand((3, 5), low=-1)
    np.testing.assert_allclose(G.interpret(out, xa), G.interpret(f, xa), rtol=RTOL, atol=ATOL)


def test_batch_norm_with_a_variable_statistic_is_left_alone():
    f, params = vgg_block()
    del params["bn_var"]
    out = simplify_inference(G.bind_params(f, params))
    assert "nn.batch_norm" in op_names(out)
