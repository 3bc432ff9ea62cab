"""combine_parallel_dense: dense calls sharing an input become one dense over concatenated weights."""
import numpy as np

from tesched import graph as G
from tesched.graph.passes import combine_parallel_dense

from ..helpers import ATOL, RTOL, op_names


def qkv(rand, rows=2):
    x = G.var("x", shape=(rows, 8))
    q, k, v = (G.nn.dense(x, G.const(rand((n, 8), low=-1))) for n in (8, 8, 4))
    return G.Function([x], G.Tuple([G.nn.relu(q), G.tanh(k), v]))


def test_q_k_v_become_one_dense_and_slices(rand):
    f = qkv(rand)
    combined = combine_parallel_dense(f)
    assert op_names(combined).count("nn.dense") == 1
    assert op_names(combined).count("strided_slice") == 3
    (dense,) = [n for n in G.visit.post_order(combined.body) if isinstance(n, G.Call) and n.op_name == "nn.dense"]
    assert dense.tensor_type.shape == (2, 20)
    x = rand((2, 8), low=-1)
    for got, want in zip(G.interpret(combined, x), G.interpret(f, x)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_the_combined_projections_are_one_kernel(rand):
    f = qkv(rand, rows=9)
    exe = G.build(f)
    assert len(exe.kernels) == 1
    x = rand((9, 8), low=-1)
    for got, want in zip(exe(x), G.interpret(f, x)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_different_inputs_or_variable_weights_do_not_combine(rand):
    x, y, w = G.var("x", shape=(2, 8)), G.var("y", shape=(2, 8)), G.var("w", shape=(4, 8))
    c = G.const(rand((4, 8)))
    f = G.Function([x, y, w], G.Tuple([G.nn.dense(x, c), G.nn.dense(y, c), G.nn.dense(x, w)]))
    assert combine_parallel_dense(f) is f
