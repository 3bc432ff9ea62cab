"""Type inference with dynamic dimensions: a dim passes through the common ops unchanged, and a size
computed from one (a merge, a scale) is refused naming the op and the dimension."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.types import Dim, TensorType

BATCH, SEQ = Dim("batch", 1, 64), Dim("seq", 1, 48)


def _type(expr):
    return expr.checked_type


def test_dims_pass_through_dense_conv_norms_softmax_and_attention():
    rng = np.random.default_rng(0)
    x = G.var("x", shape=(BATCH, 16))
    assert _type(G.nn.dense(x, G.const(rng.standard_normal((8, 16)).astype("f")))) == TensorType((BATCH, 8))
    assert _type(G.nn.softmax(G.nn.relu(x))) == TensorType((BATCH, 16))
    image = G.var("image", shape=(BATCH, 3, 8, 8))
    conv = G.nn.conv2d(image, G.const(rng.standard_normal((4, 3, 3, 3)).astype("f")), strides=2, padding=1)
    assert _type(conv) == TensorType((BATCH, 4, 4, 4))
    tokens = G.var("tokens", shape=(1, SEQ, 32))
    gamma, beta = G.const(np.ones(32, "f")), G.const(np.zeros(32, "f"))
    assert _type(G.nn.layer_norm(tokens, gamma, beta)) == TensorType((1, SEQ, 32))
    q = G.var("q", shape=(2, SEQ, 16))
    scores = G.nn.batch_matmul(q, G.transpose(q, (0, 2, 1)))
    assert _type(scores) == TensorType((2, SEQ, SEQ))
    assert _type(G.nn.batch_matmul(G.nn.softmax(scores), q)) == TensorType((2, SEQ, 16))      # SEQ reduced


def test_broadcast_reshape_and_slice_keep_a_dim_whole():
    x = G.var("x", shape=(BATCH, 4, 6))
    assert _type(G.add(x, G.const(np.ones((1, 6), "f")))) == TensorType((BATCH, 4, 6))
    assert _type(G.reshape(x, (BATCH, 24))) == TensorType((BATCH, 24))
    assert _type(G.reshape(x, (BATCH, -1, 2))) == TensorType((BATCH, 12, 2))
    assert _type(G.strided_slice(x, [0, 1], [BATCH, 3])) == TensorType((BATCH, 2, 6))
    assert _type(G.broadcast_to(G.const(np.float32(0)), (BATCH, 3))) == TensorType((BATCH, 3))


def test_a_size_computed_from_a_dim_is_refused_naming_the_op():
    x = G.var("x", shape=(BATCH, 4))
    with pytest.raises(ValueError, match=r"reshape\(Tensor\[\(batch, 4\), float32\]\).*dynamic dimensions"):
        G.reshape(x, (-1,))
    with pytest.raises(ValueError, match=r"strided_slice.*axis 0 has the dynamic size batch"):
        G.strided_slice(x, [1], [BATCH])
    with pytest.raises(ValueError, match=r"concatenate.*axis 0 has a dynamic size \(batch, batch\)"):
        G.concatenate([x, x], axis=0)
    assert _type(G.concatenate([x, x], axis=1)) == TensorType((BATCH, 8))
    with pytest.raises(TypeError, match=r"nn.pad\(.*output dimension .*batch.* is an expression of dynamic dimension"):
        G.nn.pad(x, ((1, 1), (0, 0)))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        G.add(x, G.var("y", shape=(SEQ, 4)))
