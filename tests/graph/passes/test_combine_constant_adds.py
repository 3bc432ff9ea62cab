"""combine_constant_adds: chains of constant additions become one add."""
import numpy as np

from tesched import graph as G
from tesched.graph.passes import combine_constant_adds

from ..helpers import ATOL, RTOL, op_names, vgg_block


def test_two_adds_of_constants_merge_with_broadcasting(rand):
    x = G.var("x", shape=(2, 3, 4))
    c1, c2, c3 = G.const(rand((3, 1))), G.const(rand((4,))), G.const(rand((1, 1, 1)))
    f = G.Function([x], G.add(c3, G.add(G.add(x, c1), c2)))
    out = combine_constant_adds(f)
    assert op_names(out) == ["add"] and out.body.args[1].data.shape == (1, 3, 4)
    xa = rand((2, 3, 4))
    np.testing.assert_allclose(G.interpret(out, xa), G.interpret(f, xa), rtol=RTOL, atol=ATOL)


def test_bias_add_then_add_becomes_one_add(rand):
    x = G.var("x", shape=(1, 3, 2, 2))
    f = G.Function([x], G.add(G.nn.bias_add(x, G.const(rand((3,)))), G.const(rand((3, 1, 1)))))
    out = combine_constant_adds(f)
    assert op_names(out) == ["add"]
    xa = rand((1, 3, 2, 2))
    np.testing.assert_allclose(G.interpret(out, xa), G.interpret(f, xa), rtol=RTOL, atol=ATOL)


def test_an_inner_add_used_elsewhere_is_kept(rand):
    x = G.var("x", shape=(3,))
    inner = G.add(x, G.const(rand((3,))))
    f = G.Function([x], G.Tuple([G.add(inner, G.const(rand((3,)))), inner]))
    assert op_names(combine_constant_adds(f)) == ["add", "add"]


def test_vgg_block_ends_as_one_conv_one_add_one_relu(rand):
    f, params = vgg_block()
    bound = G.bind_params(f, params)
    out = G.optimize(bound, disabled_passes=["fuse_ops"])
    assert op_names(out) == ["nn.conv2d", "add", "nn.relu"]
    x = rand((1, 4, 6, 6), low=-1)
    np.testing.assert_allclose(G.interpret(out, x), G.interpret(bound, x), rtol=RTOL, atol=ATOL)
