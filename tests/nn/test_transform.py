"""pad, reshape, transpose, concatenate, strided_slice and split against NumPy."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn

from .helpers import run


def test_injective_ops_match_numpy(rand):
    x, y = ts.placeholder((2, 3, 4), name="x"), ts.placeholder((2, 2, 4), name="y")
    xa, ya = rand(x.shape), rand(y.shape)
    outs = [nn.pad(x, [(0, 0), (1, 2), (2, 0)], pad_value=-1.0), nn.reshape(x, (4, -1)), nn.transpose(x, (2, 0, 1)),
            nn.transpose(x), nn.concatenate([x, y, x], axis=1), nn.strided_slice(x, [1, 2], [-3, 0], [-1, -2])]
    results, _ = run(outs, [x, y], [xa, ya])
    refs = [np.pad(xa, [(0, 0), (1, 2), (2, 0)], constant_values=-1.0), xa.reshape(4, -1), xa.transpose(2, 0, 1),
            xa.transpose(), np.concatenate([xa, ya, xa], axis=1), xa[1:-3:-1, 2:0:-2]]
    for out, ref in zip(results, refs):
        np.testing.assert_array_equal(out, ref)


def test_split_into_sections_and_at_indices(rand):
    x = ts.placeholder((2, 6), name="x")
    xa = rand(x.shape)
    pieces = nn.split(x, 3, axis=1) + nn.split(x, [1, 5], axis=-1)
    results, _ = run(pieces, [x], [xa])
    for out, ref in zip(results, np.split(xa, 3, axis=1) + np.split(xa, [1, 5], axis=1)):
        np.testing.assert_array_equal(out, ref)


def test_injective_ops_are_tagged_injective():
    x = ts.placeholder((2, 3), name="x")
    for t in (nn.pad(x, [(1, 1), (0, 0)]), nn.reshape(x, (3, 2)), nn.transpose(x), nn.strided_slice(x, [0], [1])):
        assert nn.pattern_of(t) is nn.Pattern.INJECTIVE


@pytest.mark.parametrize("make, message", [
    (lambda x: nn.reshape(x, (4, 2)), "cannot reshape"),
    (lambda x: nn.reshape(x, (-1, -1)), "invalid target"),
    (lambda x: nn.transpose(x, (0, 0)), "permutation"),
    (lambda x: nn.pad(x, [(1, 1)]), "pad_width"),
    (lambda x: nn.concatenate([x, nn.transpose(x)], axis=0), "differ outside axis"),
    (lambda x: nn.strided_slice(x, [2], [2]), "empty"),
    (lambda x: nn.split(x, 4, axis=1), "equal sections"),
    (lambda x: nn.split(x, [2, 1], axis=1), "increasing"),
])
def test_bad_arguments_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make(ts.placeholder((2, 3), name="x"))


def test_broadcast_to_and_take(rand):
    x, table = ts.placeholder((3, 1), name="x"), ts.placeholder((5, 4), name="table")
    ids = ts.placeholder((2, 3), "int64", name="ids")
    col = ts.placeholder((2,), "int32", name="col")
    xa, ta = rand(x.shape), rand(table.shape)
    ida = np.array([[0, 4, 2], [7, -3, 1]], dtype="int64")   # 7 and -3 are outside: clipped to 4 and 0
    cola = np.array([3, 0], dtype="int32")
    outs, _ = run([nn.broadcast_to(x, (2, 3, 4)), nn.take(table, ids), nn.take(table, col, axis=1)],
                  [x, table, ids, col], [xa, ta, ida, cola])
    np.testing.assert_array_equal(outs[0], np.broadcast_to(xa, (2, 3, 4)))
    np.testing.assert_array_equal(outs[1], np.take(ta, ida, axis=0, mode="clip"))
    np.testing.assert_array_equal(outs[2], ta[:, cola])
    assert nn.pattern_of(nn.take(table, ids)) is nn.Pattern.INJECTIVE


def test_broadcast_to_and_take_reject_bad_arguments():
    x = ts.placeholder((3, 2), name="x")
    with pytest.raises(ValueError, match=r"broadcast_to: \(3, 2\) cannot be broadcast to \(3, 1\)"):
        nn.broadcast_to(x, (3, 1))
    with pytest.raises(TypeError, match="take: indices must be int32 or int64"):
        nn.take(x, ts.placeholder((2,), name="ids"))


def test_a_symbolic_axis_is_sliced_and_broadcast_whole(rand):
    n = ts.var("n")
    x = ts.placeholder((n, 6), name="x")
    middle = nn.strided_slice(x, [0, 1], [n, 5])
    spread = nn.broadcast_to(ts.placeholder((1, 6), name="row"), (n, 6))
    assert middle.shape[0] is n and spread.shape[0] is n
    with pytest.raises(ValueError, match="strided_slice: axis 0 has the dynamic size n; it can only be taken whole"):
        nn.strided_slice(x, [1], [n])
    with pytest.raises(ValueError, match="concatenate: axis 0 has a dynamic size"):
        nn.concatenate([x, x], 0)
    f = ts.build(nn.default_schedule(middle), [x, middle], name="middle_columns")
    a = rand((7, 6))
    np.testing.assert_array_equal(f(a), a[:, 1:5])
