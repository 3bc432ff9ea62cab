"""Reads that need no mask: inside their buffer (tensor, or a local box minus its origin) at every point."""
import pytest

from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.te.expr import Binary, Const
from tesched.transform.masked_reads import inside_buffer

I, J = ir.LoopVar("i"), ir.LoopVar("j")
RANGES = VarRanges().where(I, 0, 7).where(J, 0, 31)


def _minus(e, c):
    return Binary("sub", e, Const(c, "int64"), "int64")


@pytest.mark.parametrize("column, inside", [(J, True), (_minus(J, 1), False)])
def test_argument_reads_are_judged_against_the_tensor(column, inside):
    a = ir.Buffer("A", [8, 32], "float32", ir.BufferScope.ARG)
    assert inside_buffer(ir.Load(a, [I, column]), RANGES) is inside


@pytest.mark.parametrize("shift, inside", [(1, True), (2, False)])
def test_local_reads_are_judged_against_the_box_minus_its_origin(shift, inside):
    """A row ``i`` of 33 columns from column -1: ``j - 1`` is inside it, ``j - 2`` is not (at j = 0)."""
    box = ir.Buffer("T", [1, 33], "float32", ir.BufferScope.LOCAL, [I, Const(-1, "int64")])
    assert inside_buffer(ir.Load(box, [I, _minus(J, shift)]), RANGES) is inside


def test_folded_dimension_is_always_inside_and_symbolic_extent_never():
    window = ir.Buffer("W", [4, 32], "float32", ir.BufferScope.LOCAL, folds={0: 4})
    assert inside_buffer(ir.Load(window, [Binary("add", I, Const(100, "int64"), "int64"), J]), RANGES)
    n = ir.LoopVar("n")
    symbolic = ir.Buffer("S", [8, n], "float32", ir.BufferScope.ARG)
    assert not inside_buffer(ir.Load(symbolic, [I, J]), RANGES)


@pytest.mark.parametrize("low, inside", [(0, True), (-1, False)])
def test_element_offsets_are_judged_against_the_allocation(low, inside):
    """One index into a 2-D buffer is an offset from its start (origin -1 does not shift it)."""
    box = ir.Buffer("T", [2, 16], "float32", ir.BufferScope.LOCAL, [Const(-1, "int64"), Const(-1, "int64")])
    k = ir.LoopVar("k")
    assert inside_buffer(ir.Load(box, [k]), VarRanges().where(k, low, 31)) is inside
    assert not inside_buffer(ir.Load(box, [k]), VarRanges().where(k, 0, 32))
