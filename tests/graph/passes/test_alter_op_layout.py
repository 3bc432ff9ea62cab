"""alter_op_layout: constant dense weights transposed for the GEMM schedule when the rows are many."""
import numpy as np

from tesched import graph as G
from tesched.graph.passes import alter_op_layout

from ..helpers import ATOL, RTOL, op_names


def dense_graph(rows, weight):
    x = G.var("x", shape=(rows, weight.shape[1]))
    return G.Function([x], G.nn.relu(G.nn.dense(x, G.const(weight))))


def test_many_rows_become_a_gemm_over_the_transposed_weight(rand):
    weight = rand((6, 5), low=-1)
    f = dense_graph(16, weight)
    altered = alter_op_layout(f)
    assert op_names(altered) == ["nn.matmul", "nn.relu"]
    (const,) = [n for n in G.visit.post_order(altered.body) if isinstance(n, G.Constant)]
    np.testing.assert_array_equal(const.data, weight.T)
    x = rand((16, 5), low=-1)
    np.testing.assert_allclose(G.interpret(altered, x), G.interpret(f, x), rtol=RTOL, atol=ATOL)
    exe = G.build(f)
    assert [k.name for k in exe.kernels] == ["fused_nn_matmul_nn_relu"]
    np.testing.assert_allclose(exe(x), np.maximum(x @ weight.T, 0), rtol=RTOL, atol=ATOL)


def test_few_rows_keep_the_gemv_and_variable_weights_are_left_alone(rand):
    assert op_names(alter_op_layout(dense_graph(2, rand((6, 5))))) == ["nn.dense", "nn.relu"]
    x, w = G.var("x", shape=(16, 5)), G.var("w", shape=(6, 5))
    f = G.Function([x, w], G.nn.dense(x, w))
    assert op_names(alter_op_layout(f)) == ["nn.dense"]
