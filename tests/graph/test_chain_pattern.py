"""Chain patterns: construction errors, constraints and matches found directly on small graphs."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.visit import post_order, use_counts


def matches(pattern, f):
    """The op names of each match in ``f``, producers first, without overlaps."""
    counts, taken, found = use_counts(f.body), set(), []
    for node in post_order(f.body):
        m = pattern.match(node, counts, taken)
        if m is not None:
            taken.update(id(c) for c in m.calls)
            found.append(m)
    return found


def test_the_text_of_a_pattern():
    p = G.pattern(G.is_op("nn.conv2d", G.wildcard(), G.is_constant(), padding=1), "add", "nn.relu")
    assert str(p) == "nn.conv2d(wildcard(), is_constant(), padding=1) -> add -> nn.relu"


@pytest.mark.parametrize("make, error, message", [
    (lambda: G.pattern(), ValueError, "give at least one op"),
    (lambda: G.pattern("nn.conv3d"), ValueError, "no op named 'nn.conv3d'"),
    (lambda: G.pattern(3), TypeError, "a step is an op name or is_op"),
    (lambda: G.pattern("nn.conv2d", G.is_op("add", G.wildcard(), G.wildcard())), ValueError,
     r"step 1 \(add\) has 1 free arguments, but constraints are given for 2"),
    (lambda: G.pattern(G.is_op("nn.relu", G.wildcard(), G.wildcard())), ValueError,
     r"step 0 \(nn.relu\) has 1 free arguments"),
    (lambda: G.is_op("add", "const"), TypeError, "argument constraints are wildcard"),
])
def test_bad_patterns_are_rejected(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_free_inputs_follow_the_steps_and_the_argument_order():
    x, y, z = (G.var(n, shape=(3,)) for n in "xyz")
    f = G.Function([x, y, z], G.nn.relu(G.add(z, G.multiply(x, y))))
    (m,) = matches(G.pattern("multiply", "add", "nn.relu"), f)
    assert [a.name for a in m.free_inputs] == ["x", "y", "z"]
    assert m.chain_positions == (1, 0)
    assert [c.op_name for c in m.calls] == ["multiply", "add", "nn.relu"]


def test_the_chained_value_enters_a_non_commutative_op_first():
    x, y = G.var("x", shape=(3,)), G.var("y", shape=(3,))
    first = G.Function([x, y], G.subtract(G.exp(x), y))
    second = G.Function([x, y], G.subtract(y, G.exp(x)))
    assert len(matches(G.pattern("exp", "subtract"), first)) == 1
    assert matches(G.pattern("exp", "subtract"), second) == []


def test_the_leftmost_argument_that_completes_the_chain_is_taken():
    x, y = G.var("x", shape=(3,)), G.var("y", shape=(3,))
    f = G.Function([x, y], G.add(G.exp(x), G.exp(y)))
    (m,) = matches(G.pattern("exp", "add"), f)
    assert [a.name for a in m.free_inputs[:1]] == ["x"] and m.chain_positions == (0,)
    sigmoid_right = G.Function([x, y], G.add(G.exp(x), G.sigmoid(y)))
    (m,) = matches(G.pattern("sigmoid", "add"), sigmoid_right)
    assert m.chain_positions == (1,)


def test_constraints_on_arguments_and_attributes():
    x = G.var("x", shape=(1, 2, 5, 5))
    w = G.const(np.ones((2, 2, 3, 3), "float32"))
    w_var = G.var("w", shape=(2, 2, 3, 3))
    f = G.Function([x, w_var], G.Tuple([G.nn.conv2d(x, w, strides=2), G.nn.conv2d(x, w_var, strides=2),
                                        G.nn.conv2d(x, w, padding=(0, 1))]))
    assert len(matches(G.pattern("nn.conv2d"), f)) == 3
    assert len(matches(G.pattern(G.is_op("nn.conv2d", G.wildcard(), G.is_constant())), f)) == 2
    assert len(matches(G.pattern(G.is_op("nn.conv2d", strides=2)), f)) == 2
    assert len(matches(G.pattern(G.is_op("nn.conv2d", strides=[2, 2], padding=0)), f)) == 2
    assert len(matches(G.pattern(G.is_op("nn.conv2d", padding=(0, 1, 0, 1))), f)) == 1
    assert matches(G.pattern(G.is_op("nn.conv2d", layout="NHWC")), f) == []


def test_a_value_used_twice_by_the_next_step_is_not_chained():
    x = G.var("x", shape=(3,))
    e = G.exp(x)
    f = G.Function([x], G.add(e, e))
    assert matches(G.pattern("exp", "add"), f) == []
