"""sink_reshapes: elementwise and broadcasting ops move before the reshapes they read, so that a dense layer's
GELU and residual addition fuse into its kernel; values never change (checked with the interpreter and against
NumPy), and operands that would broadcast differently keep the call as it was."""
import math

import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.passes import sink_reshapes

from ..helpers import ATOL, RTOL, op_names


def dense_3d(rand, tokens=6, features=8, hidden=16):
    """``x (1, tokens, features)`` through a dense layer with bias, reshaped back to 3-D (as PyTorch's Linear
    over a 3-D tensor imports), and its NumPy value."""
    x = G.var("x", (1, tokens, features))
    w, b = rand((hidden, features), low=-1), rand((hidden,), low=-1)
    flat = G.nn.bias_add(G.nn.dense(G.reshape(x, (tokens, features)), G.const(w)), G.const(b))
    return x, G.reshape(flat, (1, tokens, hidden)), lambda xa: (xa.reshape(tokens, features) @ w.T + b)[None]


def gelu(y):
    return G.multiply(G.multiply(y, 0.5), G.add(G.erf(G.multiply(y, 1 / math.sqrt(2))), 1.0))


def check_values(f, out, *inputs):
    np.testing.assert_allclose(G.interpret(out, *inputs), G.interpret(f, *inputs), rtol=RTOL, atol=ATOL)


def test_a_gelu_chain_moves_whole_and_fuses_into_the_dense(rand):
    x, y, dense_np = dense_3d(rand)
    f = G.Function([x], gelu(y))
    out = sink_reshapes(f)
    assert op_names(out)[-1] == "reshape" and op_names(out).count("reshape") == 2   # the input's and the last
    xa = rand((1, 6, 8), low=-1)
    check_values(f, out, xa)
    want = dense_np(xa)
    want = 0.5 * want * (1 + np.vectorize(math.erf)(want / math.sqrt(2)))
    exe = G.build(f)
    assert len(exe.kernels) == 1
    np.testing.assert_allclose(exe(xa), want, rtol=1e-4, atol=1e-5)


def test_a_residual_of_the_whole_shape_is_read_as_a_view(rand):
    x, y, dense_np = dense_3d(rand, features=16)
    f = G.Function([x], G.add(x, y))
    out = sink_reshapes(f)
    assert op_names(out)[-2:] == ["add", "reshape"]
    assert [a.tensor_type.shape for a in out.body.args[0].args] == [(6, 16), (6, 16)]
    xa = rand((1, 6, 16), low=-1)
    check_values(f, out, xa)
    exe = G.build(f)
    assert len(exe.kernels) == 1
    np.testing.assert_allclose(exe(xa), xa + dense_np(xa), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(16,), (1, 16), (1, 1, 16), (), (1, 1, 1)])
def test_vectors_along_shared_trailing_axes_and_scalars_move(rand, shape):
    x, y, _ = dense_3d(rand)
    f = G.Function([x], G.multiply(y, G.const(rand(shape, low=-1))))
    out = sink_reshapes(f)
    assert op_names(out)[-2:] == ["multiply", "reshape"]
    assert out.body.args[0].tensor_type.shape == (6, 16)
    check_values(f, out, rand((1, 6, 8), low=-1))


@pytest.mark.parametrize("shape", [(6, 1), (1, 6, 1), (2, 1, 1, 1)])
def test_operands_broadcasting_along_changed_axes_keep_the_call(rand, shape):
    x, y, _ = dense_3d(rand)
    f = G.Function([x], G.add(y, G.const(rand(shape, low=-1))))
    out = sink_reshapes(f)
    assert op_names(out)[-2:] == ["reshape", "add"]
    check_values(f, out, rand((1, 6, 8), low=-1))


def test_two_reshapes_of_other_shapes_and_where_move(rand):
    """Operands reshaped from different shapes meet at the first one's source; ``where`` moves with them."""
    a, b = G.var("a", (4, 6)), G.var("b", (2, 12))
    ra, rb = G.reshape(G.exp(a), (2, 2, 6)), G.reshape(G.tanh(b), (2, 2, 6))
    f = G.Function([a, b], G.where(G.greater(ra, rb), ra, G.negative(rb)))
    out = sink_reshapes(f)
    assert op_names(out)[-1] == "reshape" and "where" in op_names(out)
    assert out.body.args[0].tensor_type.shape == (4, 6)
    check_values(f, out, rand((4, 6), low=-1), rand((2, 12), low=-1))


def test_ops_with_axis_attributes_and_reshape_free_calls_are_left(rand):
    x = G.var("x", (2, 3, 4))
    bias = G.nn.bias_add(G.reshape(x, (6, 4)), G.const(rand((4,))), axis=-1)
    f = G.Function([x], G.add(bias, G.const(rand((4,)))))
    assert sink_reshapes(f).body is f.body


def test_a_dynamic_dimension_is_left(rand):
    x = G.var("x", (G.Dim("batch", 1, 8), 4))
    f = G.Function([x], G.nn.relu(G.reshape(x, (x.tensor_type.extents[0], 2, 2))))
    assert op_names(sink_reshapes(f)) == ["reshape", "nn.relu"]


def test_reshapes_of_inputs_and_operands_computed_by_fusable_ops_are_left(rand):
    """Nothing to fuse with an input; and moving the reshape would cut the other operand's producer (here a
    relu, as a convolution's tiles in ``alter_op_layout``'s Winograd blocks) off from the add."""
    a, b = G.var("a", (4, 6)), G.var("b", (2, 12))
    f = G.Function([a], G.multiply(G.reshape(a, (2, 12)), 2.0))
    assert sink_reshapes(f).body is f.body
    computed = G.nn.relu(b)
    g = G.Function([a, b], G.add(computed, G.reshape(G.exp(a), (2, 12))))
    assert sink_reshapes(g).body is g.body
