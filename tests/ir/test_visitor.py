"""Statement visitors and mutators: rebinding a buffer reaches every kind of read; chains of thousands of
``let`` statements are visited, rebuilt and printed without exhausting Python's recursion limit; the
variables declared inside a statement are all found."""
import sys

from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtVisitor, bound_inside, let_chain, map_stmt, rebind_buffer
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Binary, Const, Var
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


def _let_chain(n: int) -> tuple[ir.Stmt, ir.Buffer]:
    """``let t0 = 1.0; let t1 = t0 + 1.0; ... out[0] = t{n-1}``."""
    out = ir.Buffer("O", [1], "float32", ir.BufferScope.ARG)
    names = [Var(f"t{k}", "float32") for k in range(n)]
    body: ir.Stmt = ir.Store(out, (Const(0, "int64"),), names[-1])
    for k in reversed(range(n)):
        value = Const(1.0, "float32") if k == 0 else Binary("add", names[k - 1], Const(1.0, "float32"), "float32")
        body = ir.LetStmt(names[k], value, body)
    return body, out


def test_let_chains_longer_than_the_recursion_limit():
    n = 2 * sys.getrecursionlimit()
    chain, _ = _let_chain(n)

    class Count(StmtVisitor):
        values = 0

        def visit_expr(self, e):
            Count.values += 1

    Count().visit(chain)
    assert Count.values == n + 2          # every let's value once, then the store's index and value
    doubled = map_stmt(chain, on_expr=lambda e: Binary("mul", e, Const(2.0, "float32"), "float32"))
    lets, inner = let_chain(doubled)
    assert len(lets) == n and isinstance(inner, ir.Store)
    assert all(isinstance(let.value, Binary) and let.value.op == "mul" for let in lets)
    assert map_stmt(chain) is chain       # nothing changed: the same objects

    stop = ir.Block([])

    def cut(s):                           # on_stmt sees every let of the chain, the inner ones too
        return stop if isinstance(s, ir.LetStmt) and s.var.name == f"t{n // 2}" else None
    lets, inner = let_chain(map_stmt(chain, on_stmt=cut))
    assert len(lets) == n // 2 and inner is stop
    text = str(chain)
    assert text.count("let ") == n and text.splitlines()[-1].strip().startswith("O[0] =")


def test_bound_inside_names_every_variable_declared_in_a_statement():
    """Loops at any depth, lets, registers, assigned variables and the origins of allocated buffers; not
    the variables of enclosing statements nor symbolic sizes used inside."""
    i, j, t, acc, size = ir.LoopVar("i"), ir.LoopVar("j"), Var("t", "int64"), Var("acc", "float32"), Var("n", "int64")
    origin = ir.OriginVar("T.origin0")
    local = ir.Buffer("T", [4], "float32", ir.BufferScope.LOCAL, [origin])
    out = ir.Buffer("O", [8], "float32", ir.BufferScope.ARG)
    zero = Const(0, "int64")
    store = ir.Store(out, (t,), ir.Load(local, [zero]))
    inner = ir.For(j, zero, size, LoopKind.SERIAL, ir.LetStmt(t, Binary("add", i, j, "int64"),
                                                              ir.seq([ir.Assign(acc, Const(0.0, "float32")), store])))
    loop = ir.For(i, zero, Const(2, "int64"), LoopKind.SERIAL, ir.Allocate(local, inner))
    assert bound_inside(loop) == {id(i), id(j), id(t), id(acc), id(origin)}
    assert bound_inside(inner) == {id(j), id(t), id(acc)}         # i and the origin are declared outside
