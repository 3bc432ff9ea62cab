"""fuse_attention: batched products around a softmax become one nn.attention, through reshapes, scales,
biases (added before or after the scale, leading axes broadcast) and PyTorch's guard of masked rows; chains
whose values are read elsewhere stay. Each rewrite is compared with the graph it replaced."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.passes import fuse_attention

from ..helpers import op_names

B, H, M, N, D = 2, 3, 5, 6, 4


def scores_graph(bias_shape=None, guard=False, scale_first=True):
    """``softmax(q @ kt * 0.5 + bias) @ v`` over (B * H) batches, split to (B, H) around the softmax."""
    q, kt, v = G.var("q", (B * H, M, D)), G.var("kt", (B * H, D, N)), G.var("v", (B * H, N, D))
    params = [q, kt, v]
    logits = G.reshape(G.nn.batch_matmul(q, kt), (B, H, M, N))
    if scale_first:
        logits = G.multiply(logits, 0.5)
    if bias_shape is not None:
        bias = G.var("bias", bias_shape)
        params.append(bias)
        logits = G.add(logits, bias)
    if not scale_first:
        logits = G.multiply(logits, 0.5)
    weights = G.nn.softmax(logits, -1)
    if guard:
        masked_row = G.logical_not(G.any(G.logical_not(G.equal(logits, float("-inf"))), -1, True))
        weights = G.where(masked_row, G.const(np.zeros((B, H, M, N), np.float32)), weights)
    return G.Function(params, G.nn.batch_matmul(G.reshape(weights, (B * H, M, N)), v))


def arrays(f, rand):
    out = [rand(p.tensor_type.shape, low=-1) for p in f.params]
    if len(out) == 4:
        out[3] = np.where(out[3] > 0.6, -np.inf, out[3]).astype(np.float32)   # some keys masked out
    return out


@pytest.mark.parametrize("bias_shape, guard, scale_first", [
    (None, False, True), ((M, N), True, True), ((B, 1, M, N), True, False), ((B, H, M, N), False, True),
    ((B, 1, 1, N), True, True)])
def test_chains_become_one_attention(rand, bias_shape, guard, scale_first):
    f = scores_graph(bias_shape, guard, scale_first)
    fused = fuse_attention(f)
    assert "nn.attention" in op_names(fused) and "nn.softmax" not in op_names(fused)
    data = arrays(f, rand)
    data[0][0] = 0.0                                       # (not all) rows with equal logits
    np.testing.assert_allclose(G.interpret(fused, *data), G.interpret(f, *data), rtol=1e-5, atol=1e-6)


def test_built_attention_matches_the_unfused_graph(rand):
    f = scores_graph((M, N), guard=True)
    data = arrays(f, rand)
    data[3][1] = -np.inf                                   # a query row masked out whole: zeros
    want = G.build(f, disabled_passes=["fuse_attention"])(*data)
    got = G.build(f)(*data)
    assert "nn.attention" in str(G.optimize(f))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.all(got[3:6, 1] == 0) and np.all(got[:3, 1] == 0)


def test_weights_read_elsewhere_are_not_fused(rand):
    q, kt, v = G.var("q", (2, 3, 4)), G.var("kt", (2, 4, 5)), G.var("v", (2, 5, 4))
    weights = G.nn.softmax(G.nn.batch_matmul(q, kt), -1)
    f = G.Function([q, kt, v], G.Tuple([G.nn.batch_matmul(weights, v), weights]))
    assert "nn.attention" not in op_names(fuse_attention(f))


@pytest.mark.parametrize("offset", [0, -1, 2])
def test_a_constant_causal_mask_becomes_the_causal_attribute(rand, offset):
    q, kt, v = G.var("q", (3, M, D)), G.var("kt", (3, D, N)), G.var("v", (3, N, D))
    keep = np.arange(N)[None, :] <= np.arange(M)[:, None] + offset
    mask = G.const(np.where(keep, 0.0, -np.inf).astype(np.float32))
    logits = G.add(G.multiply(G.nn.batch_matmul(q, kt), 0.5), mask)
    f = G.Function([q, kt, v], G.nn.batch_matmul(G.nn.softmax(logits, -1), v))
    fused = fuse_attention(f)
    call = fused.body
    assert call.op_name == "nn.attention" and call.attrs["causal"] == offset and len(call.args) == 3
    data = [rand(p.tensor_type.shape, low=-1) for p in f.params]
    got, want = G.interpret(fused, *data), G.interpret(f, *data)
    seen = max(0, -offset)                  # query rows before it see no key: zeros (plain softmax: NaN)
    np.testing.assert_allclose(got[:, seen:], want[:, seen:], rtol=1e-5, atol=1e-6)
    assert np.all(got[:, :seen] == 0)
    if offset == 0:
        np.testing.assert_allclose(G.build(f)(*data), G.interpret(f, *data), rtol=1e-5, atol=1e-6)


def test_a_mask_that_is_not_causal_stays_a_bias():
    q, kt, v = G.var("q", (3, M, D)), G.var("kt", (3, D, N)), G.var("v", (3, N, D))
    mask = np.zeros((M, N), np.float32)
    mask[2, 1] = -np.inf
    logits = G.add(G.nn.batch_matmul(q, kt), G.const(mask))
    fused = fuse_attention(G.Function([q, kt, v], G.nn.batch_matmul(G.nn.softmax(logits, -1), v)))
    assert fused.body.op_name == "nn.attention" and fused.body.attrs["causal"] is None and len(fused.body.args) == 4
