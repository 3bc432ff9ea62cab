"""fold_constant: subgraphs of constants become constants; fields of literal tuples resolve."""
import numpy as np

from tesched import graph as G
from tesched.graph.passes import fold_constant

from ..helpers import op_names


def test_constant_subgraphs_are_evaluated():
    x = G.var("x", shape=(2, 3))
    c = G.multiply(G.exp(G.const(np.zeros(3, "float32"))), G.const(np.full(3, 2, "float32")))
    f = G.Function([x], G.add(x, c))
    out = fold_constant(f)
    assert op_names(out) == ["add"]
    np.testing.assert_array_equal(out.body.args[1].data, np.full(3, 2, "float32"))


def test_fields_of_literal_tuples_resolve():
    x = G.var("x", shape=(2,))
    relu = G.nn.relu(x)
    out = fold_constant(G.Function([x], G.sigmoid(G.TupleGetItem(G.Tuple([relu, x]), 0))))
    assert out.body.args[0].op_name == "nn.relu"
