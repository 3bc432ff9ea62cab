"""Whether a lowered function branches on data: the functions gcc must not if-convert.

GCC 12.2's loop vectorizer gives wrong results for a loop whose body holds a group of conditional reads
under conditions computed from data, e.g. ``B[i, j] = C[i, j] > 0 ? X[i, j] : 0`` in a nest of inner trip
count 4 to 16, unrolled by gcc or by the schedule: if-conversion turns the reads into masked loads, and
the vectorizer applies one part of the mask to every vector of the group (lanes read as 0). Conditions
on loop indices alone (padding, tails) are not affected. A function for which :func:`branches_on_data`
holds is compiled without loop if-conversion nor SLP vectorization (``TS_NO_IF_CONVERT`` in
``tesched_runtime.h``; gcc's SLP vectorizer gave an ``any`` over a comparison all false without AVX-512);
the loops of other functions keep both.

A value depends on data when it reads memory (a load, a promoted register, a reduction's input) or a
variable bound to such a value; loop variables, symbolic sizes and the ``let``\\ s of index arithmetic do
not. This module decides; it does not print C.
"""
from __future__ import annotations

from tesched.ir import nodes as ir
from tesched.ir.visitor import child_fields, walk_stmts
from tesched.te.expr import Expr, Select, Var
from tesched.te.visit import walk

_MEMORY = (ir.Load, ir.VLoad, ir.VLoadStrided, ir.VLoadMasked, ir.VGather, ir.CheckedIndex, ir.RegisterVar, ir.ReduceInput)


def _expressions(s: ir.Stmt) -> list[Expr]:
    """The expressions directly held by statement ``s`` (not those of the statements inside it)."""
    return [item for _, value in child_fields(s)
            for item in (value if isinstance(value, (list, tuple)) else (value,)) if isinstance(item, Expr)]


def branches_on_data(body: ir.Stmt) -> bool:
    """Whether some ``select`` or ``if`` of ``body`` has a condition that depends on data."""
    statements = list(walk_stmts(body))
    bindings = [(s.var, s.value) for s in statements if isinstance(s, (ir.LetStmt, ir.Assign))]
    data_vars: set[int] = set()

    def on_data(e: Expr) -> bool:
        return any(isinstance(n, _MEMORY) or (isinstance(n, Var) and id(n) in data_vars) for n in walk(e))

    grew = True
    while grew:     # a variable bound to a data-dependent variable depends on data too
        grew = False
        for var, value in bindings:
            if id(var) not in data_vars and on_data(value):
                data_vars.add(id(var))
                grew = True
    for s in statements:
        if isinstance(s, ir.IfThenElse) and on_data(s.cond):
            return True
        for e in _expressions(s):
            if any(isinstance(n, Select) and on_data(n.cond) for n in walk(e)):
                return True
    return False
