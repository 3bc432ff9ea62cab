"""Valid arrays that NumPy spells unusually are accepted: every alias of a fixed-width type (``np.longlong``,
``np.intc``, ``np.single``...) and data at any byte offset (views of a byte buffer), as inputs and outputs of
kernels (plain and prepared calls) and of graph executables."""
import numpy as np
import pytest

import tesched as ts
from tesched import graph as G

ALIASES = [np.byte, np.ubyte, np.short, np.ushort, np.intc, np.uintc, np.int_, np.longlong,  # (no uint64 in tesched)
           np.half, np.single, np.double]


def _at_offset(values: np.ndarray, offset: int) -> np.ndarray:
    """``values`` copied into a byte buffer at ``offset`` bytes (unaligned for offsets not a multiple of the
    element size)."""
    raw = np.zeros(values.nbytes + 16, np.uint8)
    view = raw[offset:offset + values.nbytes].view(values.dtype).reshape(values.shape)
    view[...] = values
    return view


@pytest.mark.parametrize("alias", ALIASES, ids=lambda a: np.dtype(a).name + "/" + a.__name__)
def test_every_numpy_alias_of_a_fixed_width_type(alias):
    dtype = np.dtype(alias)
    A = ts.placeholder((6,), dtype=dtype.name, name="A")
    B = ts.compute((6,), lambda i: A[i] + A[i], name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name=f"alias_{dtype.name}")
    a = np.arange(6).astype(alias)
    out = np.zeros(6, alias)
    f(a, out)
    np.testing.assert_array_equal(out, a + a)
    np.testing.assert_array_equal(f(a), a + a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int64"])
@pytest.mark.parametrize("offset", range(8))
def test_inputs_and_outputs_at_any_byte_offset(dtype, offset):
    A = ts.placeholder((3, 5), dtype=dtype, name="A")
    B = ts.compute((3, 5), lambda i, j: A[i, j] * 3, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name=f"offset_{dtype}")
    values = np.arange(15).reshape(3, 5).astype(dtype)
    a = _at_offset(values, offset)
    out = _at_offset(np.zeros((3, 5), dtype), 7 - offset)
    f(a, out)
    np.testing.assert_array_equal(out, values * 3)
    out[...] = 0
    f.prepare(a, out)()
    np.testing.assert_array_equal(out, values * 3)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_graph_inputs_at_any_byte_offset(offset):
    x = G.var("x", shape=(2, 4))
    exe = G.build(G.Function([x], G.nn.relu(G.multiply(x, 2.0))))
    values = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(exe(_at_offset(values, offset)), np.maximum(values * 2, 0))
