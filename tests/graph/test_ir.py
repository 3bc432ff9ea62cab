"""Graph nodes: types inferred at construction, errors naming the op and shapes, immutability."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.types import FuncType, TensorType, TupleType


def test_types_are_inferred_when_calls_are_built():
    x = G.var("x", shape=(1, 3, 8, 8))
    w = G.var("w", shape=(4, 3, 3, 3))
    y = G.nn.conv2d(x, w, strides=2, padding=1)
    assert y.checked_type == TensorType((1, 4, 4, 4), "float32")
    assert G.nn.max_pool2d(y, 2).checked_type.shape == (1, 4, 2, 2)
    assert G.add(y, G.var("b", shape=(4, 1, 1))).checked_type.shape == (1, 4, 4, 4)
    assert G.var("i", shape=(2,), dtype="int32").checked_type.dtype == "int32"


def test_mismatches_raise_at_construction_with_op_and_shapes():
    x = G.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(ValueError, match=r"nn\.conv2d\(Tensor\[\(1, 3, 8, 8\), float32\], Tensor\[\(4, 2, 3, 3\)"):
        G.nn.conv2d(x, G.var("w", shape=(4, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"add.*\(1, 3, 8, 8\) and \(5,\)"):
        G.add(x, G.var("b", shape=(5,)))
    with pytest.raises(TypeError, match="float64"):
        G.multiply(x, G.var("d", shape=(1,), dtype="float64"))
    with pytest.raises(TypeError, match="takes 1 arguments"):
        G.Call(G.get_op("nn.relu"), [x, x])


def test_nodes_are_immutable():
    x = G.var("x", shape=(2,))
    y = G.nn.relu(x)
    with pytest.raises(AttributeError, match="immutable"):
        y.args = ()
    c = G.const(np.ones(2, "float32"))
    with pytest.raises(ValueError):
        c.data[0] = 5


def test_constants_copy_their_data_and_default_to_float32():
    data = np.arange(3, dtype="float32")
    c = G.const(data, name="c")
    data[0] = 9
    assert c.data[0] == 0 and c.name == "c"
    assert G.const(1.5).checked_type == TensorType((), "float32")
    assert G.const([1, 2], dtype="int32").checked_type == TensorType((2,), "int32")


def test_functions_check_their_parameters():
    x, y = G.var("x", shape=(2,)), G.var("y", shape=(2,))
    f = G.Function([x, y], G.add(x, y))
    assert f.checked_type == FuncType((TensorType((2,)), TensorType((2,))), TensorType((2,)))
    with pytest.raises(ValueError, match="not parameters: y"):
        G.Function([x], G.add(x, y))
    with pytest.raises(ValueError, match="repeat"):
        G.Function([x, G.var("x", shape=(2,))], x)


def test_tuples_and_their_fields():
    x = G.var("x", shape=(2, 3))
    t = G.Tuple([x, G.nn.relu(x)])
    assert t.checked_type == TupleType((TensorType((2, 3)), TensorType((2, 3))))
    first, second = t
    assert first is x and t[1] is second and len(t) == 2
    assert G.TupleGetItem(t, -1).checked_type == TensorType((2, 3))
    with pytest.raises(IndexError):
        G.TupleGetItem(t, 2)
    with pytest.raises(TypeError, match="not a tuple"):
        G.TupleGetItem(x, 0)
    assert isinstance(G.Function([x], [x, x]).body, G.Tuple)


def test_calling_a_function_checks_argument_types():
    p = G.var("p", shape=(2,))
    inner = G.Function([p], G.nn.relu(p), {"primitive": True, "name": "fused_nn_relu"})
    x = G.var("x", shape=(2,))
    assert G.Call(inner, [x]).checked_type == TensorType((2,))
    with pytest.raises(TypeError, match="do not match"):
        G.Call(inner, [G.var("z", shape=(3,))])
