"""Every rewrite against the interpreter on random graphs: chains and diamonds of dense, conv2d, batch
norm, elementwise, broadcast and injective ops with random shapes and constant weights.

Each pass alone (and the whole pipeline, fusion included) must give what ``G.interpret`` gives for the
original graph; a smaller number of graphs are also compiled and run, which checks the kernels of fused
groups with several outputs and the executor's shared intermediate buffers.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tesched import graph as G
from tesched.graph.passes import (
    alter_op_layout,
    combine_constant_adds,
    combine_parallel_dense,
    fold_constant,
    fold_scale_axis,
    fuse_ops,
    simplify_inference,
)

RTOL, ATOL = 2e-4, 2e-4
PASSES = [simplify_inference, fold_scale_axis, fold_constant, combine_constant_adds, combine_parallel_dense,
          alter_op_layout, fuse_ops]
FUSION_RULES = [G.FusionRules(), G.FusionRules(shared_values="recompute"), G.FusionRules(shared_values="separate"),
                G.FusionRules(combine_anchors=False), G.FusionRules(shared_values="keep", max_group_size=3)]


def _constant(draw, shape, scale=0.5):
    seed = draw(st.integers(0, 2 ** 16))
    return G.const((np.random.default_rng(seed).standard_normal(shape) * scale).astype("float32"))


@st.composite
def matrix_graphs(draw):
    """``(function, input shapes)``: values of shape (rows, features) combined at random."""
    rows, features = draw(st.sampled_from([1, 2, 9])), draw(st.sampled_from([4, 8]))
    x = G.var("x", shape=(rows, features))
    values = [x]
    for _ in range(draw(st.integers(1, 7))):
        a = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(["dense", "dense_bias", "unary", "binary", "concat_dense", "scale", "slice"]))
        if kind == "dense":
            values.append(G.nn.dense(a, _constant(draw, (features, features))))
        elif kind == "dense_bias":
            values.append(G.nn.dense(a, _constant(draw, (features, features)), _constant(draw, (features,))))
        elif kind == "unary":
            values.append(draw(st.sampled_from([G.nn.relu, G.tanh, G.sigmoid]))(a))
        elif kind == "binary":
            values.append(draw(st.sampled_from([G.add, G.multiply, G.subtract]))(a, draw(st.sampled_from(values))))
        elif kind == "concat_dense":
            joined = G.concatenate([a, draw(st.sampled_from(values))], axis=1)
            values.append(G.nn.dense(joined, _constant(draw, (features, 2 * features))))
        elif kind == "scale":
            values.append(G.add(G.multiply(a, _constant(draw, (features,))), _constant(draw, (features,))))
        else:
            half = features // 2
            left, right = G.split(a, 2, axis=1)
            values.append(G.concatenate([G.tanh(right), left], axis=1) if half else a)
    results = [values[-1]] + draw(st.lists(st.sampled_from(values[1:]), max_size=2))
    body = results[0] if len(results) == 1 else G.Tuple(results)
    return G.Function([x], body), [(rows, features)]


@st.composite
def image_graphs(draw):
    """``(function, input shapes)``: conv2d, batch norm, relu and residual adds on NCHW values."""
    channels, size = draw(st.sampled_from([(2, 4), (4, 6), (16, 8)]))  # 16 channels: Winograd F(2x2, 3x3)
    x = G.var("x", shape=(1, channels, size, size))
    values = [x]
    for _ in range(draw(st.integers(1, 5))):
        a = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(["conv3", "conv1", "bn", "relu", "residual"]))
        if kind in ("conv3", "conv1"):
            k = 3 if kind == "conv3" else 1
            values.append(G.nn.conv2d(a, _constant(draw, (channels, channels, k, k), 0.3), padding=k // 2))
        elif kind == "bn":
            stats = [G.const(np.random.default_rng(s).uniform(0.5, 1.5, channels).astype("float32"))
                     for s in range(4)]
            values.append(G.nn.batch_norm(a, *stats))
        elif kind == "relu":
            values.append(G.nn.relu(a))
        else:
            values.append(G.nn.relu(G.add(a, draw(st.sampled_from(values)))))
    results = [values[-1]] + draw(st.lists(st.sampled_from(values[1:]), max_size=1))
    body = results[0] if len(results) == 1 else G.Tuple(results)
    return G.Function([x], body), [(1, channels, size, size)]


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s).astype("float32") for s in shapes]


def _assert_same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(np.asarray(g), w, rtol=RTOL, atol=ATOL * scale)


@given(st.one_of(matrix_graphs(), image_graphs()), st.sampled_from(FUSION_RULES), st.integers(0, 100))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_each_pass_and_the_pipeline_keep_the_interpreted_result(graph, rules, seed):
    f, shapes = graph
    inputs = _inputs(shapes, seed)
    want = G.interpret(f, *inputs)
    pipeline = f
    for p in PASSES:
        alone = fuse_ops(f, rules) if p is fuse_ops else p(f)
        _assert_same(G.interpret(alone, *inputs), want)
        pipeline = fuse_ops(pipeline, rules) if p is fuse_ops else p(pipeline)
        _assert_same(G.interpret(pipeline, *inputs), want)


@given(st.one_of(matrix_graphs(), image_graphs()), st.sampled_from(FUSION_RULES[:3]), st.integers(0, 100))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_compiled_graphs_give_the_interpreted_result(graph, rules, seed):
    f, shapes = graph
    inputs = _inputs(shapes, seed)
    exe = G.build(f, rules=rules)
    _assert_same(exe(*inputs), G.interpret(f, *inputs))
    _assert_same(exe.prepare(*inputs)(), G.interpret(f, *inputs))
