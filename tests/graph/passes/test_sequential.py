"""Sequential pipelines, tracing, and the default sequence."""
import functools

import pytest

from tesched import graph as G
from tesched.graph.passes import (
    DEFAULT_PASSES,
    Sequential,
    default_sequence,
    fold_constant,
    fuse_ops,
    pass_name,
    simplify_inference,
)


def test_passes_run_in_order_and_are_traced():
    x = G.var("x", shape=(2,))
    f = G.Function([x], G.nn.relu(x))
    seen = []
    out = Sequential([simplify_inference, fold_constant])(f, trace=lambda name, g: seen.append(name))
    assert seen == ["simplify_inference", "fold_constant"] and isinstance(out, G.Function)


def test_default_sequence_names_and_disabling():
    assert default_sequence().names == list(DEFAULT_PASSES)
    assert default_sequence(disabled_passes=["fuse_ops", "fold_constant"]).names == [
        "simplify_inference", "fold_scale_axis", "combine_constant_adds", "combine_parallel_dense", "fuse_attention",
        "alter_op_layout", "sink_reshapes"]
    with pytest.raises(ValueError, match=r"unknown passes \['fuse'\]"):
        default_sequence(disabled_passes=["fuse"])
    assert pass_name(functools.partial(fuse_ops, rules=None)) == "fuse_ops"


def test_bad_passes_and_inputs_raise():
    x = G.var("x", shape=(2,))
    with pytest.raises(TypeError, match="not a pass"):
        Sequential([3])
    with pytest.raises(TypeError, match="run on a Function"):
        Sequential([fold_constant])(G.nn.relu(x))
    with pytest.raises(TypeError, match="returned Call"):
        Sequential([lambda f: f.body])(G.Function([x], G.nn.relu(x)))
