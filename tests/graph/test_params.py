"""Binding parameters to constants and inputs to parameters."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.params import bind_arguments


def test_bind_params_turns_named_parameters_into_constants():
    x, w = G.var("x", shape=(2, 3)), G.var("w", shape=(4, 3))
    f = G.bind_params(G.Function([x, w], G.nn.dense(x, w)), {"w": np.ones((4, 3), "float32")})
    assert [p.name for p in f.params] == ["x"]
    weight = f.body.args[1]
    assert isinstance(weight, G.Constant) and weight.name == "w"


@pytest.mark.parametrize("params, error, message", [
    ({"v": np.ones(3, "float32")}, ValueError, "v are not parameters"),
    ({"w": np.ones((4, 2), "float32")}, ValueError, r"parameter w: expected shape \(4, 3\)"),
    ({"w": np.ones((4, 3), "float64")}, TypeError, "parameter w: expected dtype float32"),
    ({"w": [[1.0] * 3] * 4}, TypeError, "expected a numpy.ndarray"),
])
def test_bind_params_rejects_unknown_names_and_bad_arrays(params, error, message):
    x, w = G.var("x", shape=(2, 3)), G.var("w", shape=(4, 3))
    with pytest.raises(error, match=message):
        G.bind_params(G.Function([x, w], G.nn.dense(x, w)), params)


def test_bind_arguments_by_position_and_name():
    a, b = G.var("a", shape=(2,)), G.var("b", shape=(3,))
    va, vb = np.zeros(2, "float32"), np.zeros(3, "float32")
    assert [v.shape for v in bind_arguments([a, b], [va], {"b": vb})] == [(2,), (3,)]
    with pytest.raises(TypeError, match="missing inputs: b"):
        bind_arguments([a, b], [va], {})
    with pytest.raises(TypeError, match="given twice"):
        bind_arguments([a, b], [va], {"a": va})
    with pytest.raises(TypeError, match="unknown input 'c'"):
        bind_arguments([a, b], [va, vb], {"c": va})
    with pytest.raises(TypeError, match="at most 2 inputs"):
        bind_arguments([a, b], [va, vb, vb], {})
