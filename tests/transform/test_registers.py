"""Register promotion of small local buffers: masked vector reads (padding inside a vectorized loop)."""
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.te.expr import Binary, Const, Select
from tesched.te.visit import walk
from tesched.transform.registers import promote


def _masked_copy(read_at: int):
    """``T[0:8] = X[0:8]; O[0:8] = T[read_at:read_at + 8] where X > 0.5 (else 0)``, ``T`` local."""
    x, out = (ir.Buffer(name, [8], "float32", ir.BufferScope.ARG) for name in "XO")
    local = ir.Buffer("T", [8], "float32", ir.BufferScope.LOCAL)
    mask = Binary("gt", ir.VLoad(x, Const(0, "int64"), 8), ir.Broadcast(Const(0.5, "float32"), 8),
                  ir.vector_dtype("int32", 8))
    body = ir.seq([ir.VStore(local, Const(0, "int64"), ir.VLoad(x, Const(0, "int64"), 8)),
                   ir.VStore(out, Const(0, "int64"), ir.VLoadMasked(local, Const(read_at, "int64"), mask, 8))])
    return ir.Allocate(local, body), local


def _values(stmt):
    return [n for s in walk_stmts(stmt) if isinstance(s, (ir.VStore, ir.Assign)) for n in walk(s.value)]


def test_masked_read_of_a_stored_slot_selects_from_the_register():
    stmt, local = _masked_copy(0)
    promoted = promote(stmt)
    assert isinstance(promoted, ir.Registers)
    values = _values(promoted)
    assert not any(getattr(n, "buffer", None) is local for n in values)
    blend = [n for n in values if isinstance(n, Select)]
    assert blend and blend[0].true_value is promoted.variables[0]
    zero = blend[0].false_value
    assert isinstance(zero, ir.Broadcast) and isinstance(zero.value, Const) and zero.value.value == 0


def test_masked_read_of_lanes_no_store_writes_keeps_the_buffer_in_memory():
    """Lanes -1..6: lane -1 belongs to no slot a store writes, so the read stays a masked memory read."""
    stmt, local = _masked_copy(-1)
    kept = promote(stmt)
    assert isinstance(kept, ir.Allocate) and kept.buffer is local
    assert any(isinstance(n, ir.VLoadMasked) and n.buffer is local for n in _values(kept))
