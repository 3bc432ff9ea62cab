"""Statement visitors and mutators: rebinding a buffer reaches every kind of read."""
from tesched.ir import nodes as ir
from tesched.ir.visitor import rebind_buffer
from tesched.te.expr import Binary, Const
from tesched.te.visit import walk


def test_rebind_buffer_rewrites_scalar_vector_strided_and_masked_reads():
    old = ir.Buffer("T", [4, 8], "float32", ir.BufferScope.LOCAL)
    new = ir.Buffer("T", [4, 8], "float32", ir.BufferScope.LOCAL, [Const(1, "int64"), Const(0, "int64")])
    out = ir.Buffer("O", [8], "float32", ir.BufferScope.ARG)
    zero, one = Const(0, "int64"), Const(1, "int64")
    mask = ir.Broadcast(Const(-1, "int32"), 4)
    reads = [ir.VLoad(old, zero, 4), ir.VLoadStrided(old, zero, Const(8, "int64"), 4),
             ir.VLoadMasked(old, one, mask, 4)]
    total = reads[0]
    for r in reads[1:]:
        total = Binary("add", total, r, total.dtype)
    stmt = ir.seq([ir.VStore(out, zero, total), ir.Store(out, (one,), ir.Load(old, [zero, one]))])
    rebound = rebind_buffer(stmt, old, new)
    nodes = [n for s in rebound.stmts for n in walk(s.value)]
    kinds = {type(n) for n in nodes if getattr(n, "buffer", None) is new}
    assert kinds == {ir.VLoad, ir.VLoadStrided, ir.VLoadMasked, ir.Load}
    assert not any(getattr(n, "buffer", None) is old for n in nodes)
    masked = next(n for n in nodes if isinstance(n, ir.VLoadMasked))
    assert masked.mask is mask and masked.lanes == 4
