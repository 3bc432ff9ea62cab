"""Tests of tesched.ir.stmts: sequences flatten, and statements print through the IR printer."""
from tesched.ir.exprs import Buffer, BufferScope, LoopVar
from tesched.ir.stmts import Block, For, Store, seq
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Const


def _store(value: float) -> Store:
    buf = Buffer("B", [4], "float32", BufferScope.GLOBAL)
    return Store(buf, (Const(0, "int64"),), Const(value, "float32"))


def test_seq_flattens_blocks_and_unwraps_a_single_statement():
    a, b, c = _store(1.0), _store(2.0), _store(3.0)
    assert seq([a]) is a
    flat = seq([Block([a, b]), c])
    assert isinstance(flat, Block) and flat.stmts == [a, b, c]


def test_a_loop_prints_its_kind_and_range():
    i = LoopVar("i")
    loop = For(i, Const(0, "int64"), Const(4, "int64"), LoopKind.PARALLEL, _store(1.0))
    text = str(loop)
    assert "parallel for i in [0, 4)" in text and "B[0] = 1.0f" in text
