"""The gather graph op: its type, and the compiled kernel against the NumPy evaluation the interpreter uses."""
import numpy as np

from tesched import graph as G


def test_gather_compiled_and_interpreted(rand):
    x, i = G.var("x", (3, 4)), G.var("i", (2, 4), "int32")
    f = G.Function([x, i], G.gather(G.nn.relu(x), i, 0))
    assert f.body.checked_type == G.TensorType((2, 4), "float32")
    xa, ia = rand((3, 4), low=-1), np.array([[0, 2, 1, 5], [-1, 1, 2, 0]], dtype=np.int32)
    want = np.take_along_axis(np.maximum(xa, 0), np.clip(ia, 0, 2), axis=0)
    np.testing.assert_array_equal(G.interpret(f, xa, ia), want)
    np.testing.assert_array_equal(G.build(f)(xa, ia), want)
