"""Comparisons, logic, where, any/all and cast of tesched.nn.logic against NumPy, bool arrays in and out."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn import logic

from .helpers import run

SHAPES = [(4, 8), (3, 5, 7), (2, 3, 16, 16)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_comparisons_where_and_logic_match_numpy(rand, shape):
    x, y = ts.placeholder(shape, name="x"), ts.placeholder(shape[-1:], name="y")
    mask = ts.placeholder(shape, "bool", name="mask")
    xa, ya = rand(shape, low=-1), rand(shape[-1:], low=-1)
    ya[0] = xa.reshape(-1, shape[-1])[0, 0]                      # an equal pair, so eq/le/ge see equality
    ma = rand(shape) > 0.5
    compared = [logic.compare(x, y, op) for op in logic.COMPARISONS] + [logic.compare(x, 0.25, "gt")]
    mixed = logic.logical(logic.logical_not(mask), compared[3], "or")
    outs = compared + [mixed, logic.logical(mask, compared[4], "xor"), logic.logical(mask, compared[2], "and"),
                       logic.where(mask, x, y), logic.where(mixed, -np.inf, x), logic.cast(mask, "float32")]
    results, _ = run(outs, [x, y, mask], [xa, ya, ma])
    numpy_ops = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
    wants = [op(xa, ya) for op in numpy_ops] + [xa > 0.25]
    want_mixed = ~ma | (xa <= ya)
    wants += [want_mixed, ma ^ (xa > ya), ma & (xa < ya), np.where(ma, xa, ya), np.where(want_mixed, -np.inf, xa),
              ma.astype(np.float32)]
    for got, want in zip(results, wants):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_any_all_over_axes(rand):
    shape = (3, 4, 9)
    x = ts.placeholder(shape, "bool", name="x")
    xa = rand(shape) > 0.8
    xa[1] = True                                                # a slice where all holds
    outs = [logic.any(x, -1), logic.all(x, (0, 2), keepdims=True), logic.any(x), logic.all(x, 1)]
    results, _ = run(outs, [x], [xa])
    wants = [xa.any(-1), xa.all((0, 2), keepdims=True), np.asarray(xa.any()), xa.all(1)]
    for got, want in zip(results, wants):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, want)
    assert nn.pattern_of(outs[0]) is nn.Pattern.COMM_REDUCE


def test_cast_between_numbers_and_bool(rand):
    x = ts.placeholder((5, 6), name="x")
    xa = np.round(rand((5, 6), low=-2, high=2))
    as_bool = logic.cast(x, "bool")
    results, _ = run([as_bool, logic.cast(x, "int32"), logic.cast(as_bool, "int64")], [x], [xa])
    np.testing.assert_array_equal(results[0], xa != 0)
    np.testing.assert_array_equal(results[1], xa.astype(np.int32))
    np.testing.assert_array_equal(results[2], (xa != 0).astype(np.int64))


def test_bad_operands_raise_naming_the_op():
    x, m = ts.placeholder((2, 3), name="x"), ts.placeholder((2, 3), "bool", name="m")
    i = ts.placeholder((2, 3), "int32", name="i")
    with pytest.raises(TypeError, match="logical_and: operands must be bool"):
        logic.logical(x, m, "and")
    with pytest.raises(TypeError, match="where: operands must be bool"):
        logic.where(x, x, x)
    with pytest.raises(TypeError, match="where: the values' dtypes float32 and int32 differ"):
        logic.where(m, x, i)
    with pytest.raises(TypeError, match="compare lt: dtypes"):
        logic.compare(x, i, "lt")
    with pytest.raises(ValueError, match="compare: op must be one of"):
        logic.compare(x, x, "lte")
    with pytest.raises(ValueError, match="any"):
        logic.any(m, 2)
