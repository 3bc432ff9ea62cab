"""Tests of tesched.ir.exprs: buffers' flattened indices (origins, folds), vector dtypes and lanes."""
import pytest

from tesched.ir.exprs import Buffer, BufferScope, Lane, LoopVar, RegisterVar, flat_index, split_dtype, vector_dtype
from tesched.te.expr import Const
from tesched.te.visit import substitute
from tesched.arith.simplify import simplify


def _value(e, values):
    out = simplify(substitute(e, {v: Const(x, "int64") for v, x in values.items()}))
    assert isinstance(out, Const)
    return out.value


@pytest.mark.parametrize("i, j", [(0, 0), (2, 3), (4, 6)])
def test_flat_index_is_row_major_minus_the_origin(i, j):
    y, x = LoopVar("y"), LoopVar("x")
    buf = Buffer("B", [5, 7], "float32", BufferScope.LOCAL, [Const(10, "int64"), Const(20, "int64")])
    assert _value(flat_index(buf, [y, x]), {y: 10 + i, x: 20 + j}) == i * 7 + j


def test_a_folded_dimension_indexes_modulo_its_fold():
    y, x = LoopVar("y"), LoopVar("x")
    buf = Buffer("B", [4, 3], "float32", BufferScope.LOCAL, folds={0: 4})
    assert [_value(flat_index(buf, [y, x]), {y: row, x: 2}) for row in range(9)] == \
        [(row % 4) * 3 + 2 for row in range(9)]


def test_vector_dtypes_round_trip():
    assert vector_dtype("float32", 16) == "float32x16"
    assert split_dtype("float32x16") == ("float32", 16)
    assert split_dtype("int8") == ("int8", 1)


def test_a_lane_of_a_vector_is_a_scalar_and_its_index_is_checked():
    v = RegisterVar("v", "float32x8")
    lane = Lane(v, 7)
    assert lane.dtype == "float32" and lane.children() == (v,)
    assert lane.with_children((v,)).index == 7 and repr(lane) == "v.lane[7]"
    with pytest.raises(ValueError, match="lane 8 of a vector of 8 lanes"):
        Lane(v, 8)
