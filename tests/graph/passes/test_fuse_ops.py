"""fuse_ops: groups by pattern under FusionRules, and the explanation of every edge left unfused."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.passes import explain_fusion, fuse_ops

from ..helpers import ATOL, RTOL, lstm, vgg_block

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def groups(f, rules=None):
    return explain_fusion(f, rules).groups


def conv_relu(x, channels, name):
    w = G.const(np.full((channels, x.tensor_type.shape[1], 3, 3), 0.1, "float32"), name=name)
    return G.nn.relu(G.nn.conv2d(x, w, padding=1))


def two_conv_blocks():
    x = G.var("x", shape=(1, 2, 5, 5))
    return G.Function([x], conv_relu(conv_relu(x, 3, "w1"), 4, "w2"))


def test_vgg_block_becomes_one_group(rand):
    f, params = vgg_block()
    optimized = G.optimize(G.bind_params(f, params), disabled_passes=["fuse_ops"])
    report = explain_fusion(optimized)
    assert report.groups == [("fused_nn_conv2d_add_nn_relu", ["nn.conv2d", "add", "nn.relu"])]
    assert report.unfused == []
    fused = fuse_ops(optimized)
    x = rand((1, 4, 6, 6), low=-1)
    np.testing.assert_allclose(G.interpret(fused, x), G.interpret(optimized, x), rtol=RTOL, atol=ATOL)


def test_an_anchor_does_not_follow_another_and_the_edge_is_explained():
    f = two_conv_blocks()
    report = explain_fusion(f)
    assert report.groups == [("fused_nn_conv2d_nn_relu", ["nn.conv2d", "nn.relu"]),
                             ("fused_nn_conv2d_nn_relu_1", ["nn.conv2d", "nn.relu"])]
    (edge,) = report.unfused
    assert (edge.producer, edge.consumer) == ("%1 (nn.relu)", "%2 (nn.conv2d)")
    assert edge.reason == ("an out_elemwise_fusable group (nn.conv2d) may not follow an out_elemwise_fusable group "
                           "(nn.conv2d); after out_elemwise_fusable the rules allow elemwise, broadcast")
    assert "2 fused groups" in str(report) and "%1 (nn.relu) -> %2 (nn.conv2d)" in str(report)


def test_a_value_with_several_consumers_is_kept_as_an_output_of_its_group(rand):
    x = G.var("x", shape=(1, 2, 5, 5))
    y = conv_relu(x, 3, "w")
    f = G.Function([x], G.Tuple([G.sigmoid(y), G.tanh(y), y]))
    report = explain_fusion(f)
    assert [ops for _, ops in report.groups] == [["nn.conv2d", "nn.relu", "sigmoid", "tanh"]]
    assert report.unfused == []
    fused = fuse_ops(f)
    (group,) = [n for n in op_calls(fused)]
    assert len(group.checked_type.fields) == 3
    xa = rand((1, 2, 5, 5), low=-1)
    for got, want in zip(G.interpret(fused, xa), G.interpret(f, xa)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_separate_shared_values_end_the_group_as_in_tvm():
    x = G.var("x", shape=(1, 2, 5, 5))
    y = conv_relu(x, 3, "w")
    report = explain_fusion(G.Function([x], G.Tuple([G.sigmoid(y), G.tanh(y), y])),
                            G.FusionRules(shared_values="separate"))
    assert [ops for _, ops in report.groups] == [["nn.conv2d", "nn.relu"], ["sigmoid"], ["tanh"]]
    assert all("%1 (nn.relu) has 2 consumers and is a result of the function" in e.reason for e in report.unfused)


def test_a_cheap_shared_value_is_kept_or_recomputed_and_the_report_says_which(rand):
    x = G.var("x", shape=(4, 8))
    e = G.exp(x)
    f = G.Function([x], G.Tuple([G.tanh(e), G.sigmoid(e)]))
    kept = explain_fusion(f)
    assert [ops for _, ops in kept.groups] == [["exp", "tanh", "sigmoid"]]
    recomputed = explain_fusion(f, G.FusionRules(shared_values="recompute"))
    assert [ops for _, ops in recomputed.groups] == [["exp (recomputed)", "tanh"], ["exp", "sigmoid"]]
    assert "%0 (exp) is recomputed by %1 (tanh)'s group" in str(recomputed)
    xa = rand((4, 8), low=-1)
    for rules in (None, G.FusionRules(shared_values="recompute")):
        for got, want in zip(G.interpret(fuse_ops(f, rules), xa), G.interpret(f, xa)):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_a_kept_value_is_named_in_the_report():
    x = G.var("x", shape=(1, 2, 5, 5))
    y = conv_relu(x, 3, "w")
    report = explain_fusion(G.Function([x], G.Tuple([G.sigmoid(y), y])))
    assert "%1 (nn.relu) is kept: computed once in its group and stored for its 1 other reader(s)" in str(report)


def test_a_group_never_reads_a_value_computed_from_its_own_output():
    x = G.var("x", shape=(4, 8))
    a = G.exp(x)
    b = G.nn.softmax(a)                     # opaque: its own group, reads a
    f = G.Function([x], G.add(G.tanh(a), b))  # tanh(a) + b: fusing a into the add would need b first
    fused = fuse_ops(f, G.FusionRules(shared_values="keep"))
    xa = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    np.testing.assert_allclose(G.interpret(fused, xa), G.interpret(f, xa), rtol=RTOL, atol=ATOL)
    report = explain_fusion(f, G.FusionRules(shared_values="keep"))
    assert any("cycle" in e.reason for e in report.unfused)


@pytest.mark.parametrize("rules, expected, reason", [
    (G.FusionRules(never_fuse={"nn.relu"}), [["nn.conv2d", "add"], ["nn.relu"]], "nn.relu is in FusionRules.never_fuse"),
    (G.FusionRules(max_group_size=2), [["nn.conv2d", "add"], ["nn.relu"]], "3 ops, more than max_group_size=2"),
    (G.FusionRules().disallow("out_elemwise_fusable", "broadcast"), [["nn.conv2d"], ["add", "nn.relu"]],
     "may not follow an out_elemwise_fusable group (nn.conv2d); after out_elemwise_fusable the rules allow elemwise"),
])
def test_rules_changed_by_a_user_change_the_groups(rules, expected, reason):
    f, params = vgg_block()
    optimized = G.optimize(G.bind_params(f, params), disabled_passes=["fuse_ops"])
    report = explain_fusion(optimized, rules)
    assert [ops for _, ops in report.groups] == expected
    (edge,) = report.unfused
    assert reason in edge.reason


def test_allowing_more_fuses_more():
    x = G.var("x", shape=(1, 2, 5, 5))
    f = G.Function([x], G.transpose(conv_relu(x, 3, "w"), (0, 1, 3, 2)))
    assert len(groups(f)) == 2
    assert groups(f, G.FusionRules().allow("out_elemwise_fusable", "injective")) == [
        ("fused_nn_conv2d_nn_relu_transpose", ["nn.conv2d", "nn.relu", "transpose"])]


def test_a_reshape_is_a_view_and_never_fuses():
    x = G.var("x", shape=(1, 2, 5, 5))
    report = explain_fusion(G.Function([x], G.nn.relu(G.reshape(G.exp(x), (2, 25)))))
    assert [ops for _, ops in report.groups] == [["exp"], ["reshape"], ["nn.relu"]]
    assert all("is a view of its input's memory" in e.reason for e in report.unfused)


def test_stop_fusion_separates_and_disappears():
    x = G.var("x", shape=(1, 2, 5, 5))
    w = G.const(np.ones((3, 2, 3, 3), "float32"))
    f = G.Function([x], G.nn.relu(G.annotation.stop_fusion(G.nn.conv2d(x, w))))
    report = explain_fusion(f)
    assert [ops for _, ops in report.groups] == [["nn.conv2d"], ["nn.relu"]]
    assert report.unfused[0].reason == "a stop_fusion annotation separates them"
    assert "stop_fusion" not in str(fuse_ops(f))


def test_reductions_end_groups_and_absorb_injective_producers():
    x = G.var("x", shape=(3, 4))
    f = G.Function([x], G.nn.relu(G.sum(G.transpose(G.exp(x)), axis=1)))
    report = explain_fusion(f)
    assert [ops for _, ops in report.groups] == [["exp", "transpose", "sum"], ["nn.relu"]]
    assert "after comm_reduce the rules allow nothing" in report.unfused[0].reason


def test_opaque_ops_stand_alone():
    x = G.var("x", shape=(3, 4))
    f = G.Function([x], G.exp(G.nn.softmax(G.nn.relu(x))))
    assert [ops for _, ops in groups(f)] == [["nn.relu"], ["nn.softmax"], ["exp"]]


def test_lstm_cell_is_one_group_with_two_outputs(rand):
    f, params = lstm()
    bound = G.bind_params(f, params)
    report = explain_fusion(bound)
    assert len(report.groups) == 1 and report.unfused == []
    assert report.groups[0][1].count("nn.dense") == 2
    fused = fuse_ops(bound)
    args = [rand((2, 3), low=-1), rand((2, 4), low=-1), rand((2, 4), low=-1)]
    for got, want in zip(G.interpret(fused, *args), G.interpret(bound, *args)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_anchors_side_by_side_stay_apart_without_combine_anchors():
    f, params = lstm()
    report = explain_fusion(G.bind_params(f, params), G.FusionRules(combine_anchors=False))
    assert len(report.groups) == 2
    assert "may not follow an out_elemwise_fusable group" in report.unfused[0].reason


def op_calls(f):
    from tesched.graph.visit import post_order
    return [n for n in post_order(f.body) if isinstance(n, G.Call) and isinstance(n.op, G.Function)]


def test_two_convolutions_side_by_side_keep_their_own_kernels():
    x = G.var("x", shape=(1, 2, 5, 5))
    w1, w2 = (G.const(np.full((3, 2, k, k), 0.1, "float32")) for k in (3, 1))
    f = G.Function([x], G.nn.relu(G.add(G.nn.conv2d(x, w1, padding=1), G.nn.conv2d(x, w2))))
    assert [ops for _, ops in explain_fusion(f).groups] == [["nn.conv2d"], ["nn.conv2d", "add", "nn.relu"]]


def test_conv_chains_put_two_convolutions_in_a_row_in_one_group_and_no_more(rand):
    """Under ``conv_chains`` a convolution follows a group of one convolution (conv, relu, conv); a third
    starts a group of its own, and two dense ops in a row stay apart."""
    x = G.var("x", shape=(1, 2, 5, 5))
    three = G.Function([x], conv_relu(conv_relu(conv_relu(x, 3, "w1"), 4, "w2"), 2, "w3"))
    rules = G.FusionRules(conv_chains=True)
    report = explain_fusion(three, rules)
    assert [ops for _, ops in report.groups] == [["nn.conv2d", "nn.relu", "nn.conv2d", "nn.relu"],
                                                 ["nn.conv2d", "nn.relu"]]
    assert "may not follow an out_elemwise_fusable group" in report.unfused[0].reason
    assert len(groups(three)) == 3                                      # off by default
    v = G.var("v", shape=(2, 6))
    w = G.const(np.full((6, 6), 0.1, "float32"))
    dense = G.Function([v], G.nn.dense(G.nn.relu(G.nn.dense(v, w)), w))
    assert len(groups(dense, rules)) == len(groups(dense)) == 2
    fused = fuse_ops(three, rules)
    a = rand((1, 2, 5, 5), low=-1)
    np.testing.assert_allclose(G.interpret(fused, a), G.interpret(three, a), rtol=RTOL, atol=ATOL)
