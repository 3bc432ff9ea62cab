"""Where a GPU kernel needs a barrier: the accesses of shared memory in a statement and whether two of
them may touch another thread's element.

An access's key is its flat index with each loop bound to a thread index written as ``begin + index``:
equal keys are the same thread's element (the dependence check has refused thread loops whose iterations
share an element). Other loop variables make keys differ, so the test is conservative: it may ask for a
barrier a finer (isl) analysis would not. It prints nothing (:mod:`tesched.codegen.gpu` places the
barriers).
"""
from __future__ import annotations

from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.visitor import child_fields
from tesched.te.expr import BinOp, Binary, Expr, Var
from tesched.te.visit import structural_key, substitute, walk


class Access:
    """One access of a shared buffer: the buffer, whether it writes, and the key of its indices (with each
    loop bound to a GPU thread index written as ``begin + index``, so that two loops over the same range
    bound to the same index give equal keys: an element at equal keys is the same thread's)."""

    def __init__(self, buffer: ir.Buffer, write: bool, indices: tuple, threads: dict[Var, Expr]):
        self.buffer, self.write = buffer, write
        self.key = structural_key(simplify(substitute(ir.flat_index(buffer, indices), threads)))

    def conflicts(self, other: "Access") -> bool:
        """Whether another thread may touch this one's element between the two (a barrier is needed)."""
        return self.buffer is other.buffer and (self.write or other.write) and self.key != other.key


def shared_accesses(s: ir.Stmt, shared: set[int], tag_vars: dict[str, Var],
                    threads: dict[Var, Expr] | None = None) -> list[Access]:
    """The accesses in ``s`` of the buffers whose ids are in ``shared``, keyed under the thread loops around
    them (``tag_vars``: each thread index as a variable, added to as new indices are met)."""
    threads = {} if threads is None else threads
    if isinstance(s, ir.For) and s.thread.startswith("thread"):
        index = tag_vars.setdefault(s.thread, Var(s.thread, "int64"))
        threads = {**threads, s.var: simplify(Binary(BinOp.ADD, substitute(s.begin, threads), index, "int64"))}
    elif isinstance(s, ir.LetStmt) and threads:     # a value of the thread loops' variables
        threads = {**threads, s.var: substitute(s.value, threads)}
    out = []
    if isinstance(s, ir.Store) and id(s.buffer) in shared:
        out.append(Access(s.buffer, True, s.indices, threads))
    for e in expressions(s):
        out += [Access(r.buffer, False, r.indices, threads) for r in walk(e)
                if isinstance(r, ir.Load) and id(r.buffer) in shared]
    for _, value in child_fields(s):
        for child in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(child, ir.Stmt):
                out += shared_accesses(child, shared, tag_vars, threads)
    return out


def expressions(s: ir.Stmt) -> list[Expr]:
    """The expressions a statement holds directly (not those of the statements inside it)."""
    out: list[Expr] = []
    for value in vars(s).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        out += [x for x in items if isinstance(x, Expr)]
    return out
