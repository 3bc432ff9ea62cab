"""Traversals: post-order, rewriting with the original node at hand, use counts."""
from tesched import graph as G
from tesched.graph.visit import post_order, rewrite, use_counts


def test_post_order_lists_producers_first_each_once():
    x = G.var("x", shape=(2,))
    a = G.nn.relu(x)
    b = G.add(a, a)
    assert post_order(b) == [x, a, b]


def test_rewrite_rebuilds_consumers_of_replaced_nodes():
    x = G.var("x", shape=(2,))
    a = G.nn.relu(x)
    b = G.sigmoid(a)
    seen = []

    def swap(node, original):
        seen.append(original)
        return G.tanh(node.args[0]) if isinstance(node, G.Call) and node.op_name == "nn.relu" else None

    out = rewrite(b, swap)
    assert out.op_name == "sigmoid" and out.args[0].op_name == "tanh"
    assert seen == [x, a, b] and b.args[0] is a  # the original graph is untouched


def test_use_counts_count_distinct_consumers():
    x = G.var("x", shape=(2,))
    a = G.nn.relu(x)
    b = G.add(a, a)
    c = G.Tuple([b, a])
    counts = use_counts(c)
    assert counts[id(a)] == 2 and counts[id(b)] == 1 and counts[id(c)] == 1 and counts[id(x)] == 1
