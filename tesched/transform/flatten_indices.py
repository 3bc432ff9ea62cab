"""Accesses written as the element offset the C computes, where that offset has fewer divisions.

The loop IR indexes tensors by their coordinates, and C by the row-major element offset of those
coordinates (:func:`tesched.ir.nodes.flat_index`), simplified under the loops' ranges. For a fused loop
the two differ: ``B[i.j.fused // 32, i.j.fused % 32]`` is ``B[i.j.fused]`` in C, since
``(x // 32) * 32 + x % 32`` folds back to ``x``. This pass (in the ``lower`` phase, so that ``lower()``
shows what runs) replaces the coordinates of an access to a buffer of several dimensions by its
simplified element offset when the offset's floor divisions and modulos are a proper subset of the
coordinates' (compared as expressions): the fused loop above, a split of a fused loop, a ``compute_at``
buffer read through a fused loop. An access whose offset divides as much (a tiled loop fused,
``B[8 * (f // 8) + i, 8 * (f % 8) + j]``) keeps its coordinates, which read better. A one-index access
to a buffer of several dimensions is an element offset from the buffer's start (its origin for a local
buffer), as C indexes it.

A buffer allocated in a GPU block, outside the loops bound to threads but around some, keeps its
coordinates: the GPU printer proves per dimension which thread owns each element to give the threads a
register tile (:mod:`tesched.codegen.gpu_private`), which an element offset hides; its printed offsets
are the same either way (the printer simplifies them as this pass would).
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.interval import VarRanges
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.kinds import LoopKind
from tesched.ir.visitor import walk_stmts
from tesched.te.expr import BinOp, Binary, Expr
from tesched.te.visit import rewrite, structural_key, walk
from tesched.transform.simplify_indices import RangeMutator


def _divisions(indices: tuple[Expr, ...] | list[Expr]) -> set:
    """The floor divisions and modulos of ``indices``, as structural keys."""
    keys: dict = {}
    return {structural_key(n, keys) for i in indices for n in walk(i)
            if isinstance(n, Binary) and n.op in (BinOp.FLOORDIV, BinOp.FLOORMOD)}


def flat_where_simpler(buf: ir.Buffer, indices: tuple[Expr, ...], ranges: VarRanges) -> tuple[Expr, ...]:
    """``indices``, or ``(offset,)`` when the simplified element offset divides strictly less."""
    if len(buf.shape) < 2 or ir.is_flat(buf, indices):
        return indices
    divided = _divisions(indices)
    if not divided:
        return indices
    offset = simplify(ir.flat_index(buf, indices), ranges)
    return (offset,) if _divisions([offset]) < divided else indices


def _thread_loop(s: ir.Stmt) -> bool:
    return isinstance(s, ir.For) and s.kind is LoopKind.GPU_THREAD


class _Flatten(RangeMutator):
    def __init__(self, ranges: VarRanges):
        super().__init__(ranges)
        self.kept: set[int] = set()         # ids of the buffers of a GPU block that keep their coordinates
        self.in_threads = False

    def flat(self, buf: ir.Buffer, indices: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return indices if id(buf) in self.kept else flat_where_simpler(buf, indices, self.ranges)

    def mutate_expr(self, e: Expr) -> Expr:
        def visit(n: Expr) -> Expr | None:
            if isinstance(n, (ir.Load, ir.Address)):
                indices = tuple(rewrite(i, visit) for i in n.indices)
                return type(n)(n.buffer, self.flat(n.buffer, indices))
            return None
        return rewrite(e, visit)

    def visit_Store(self, s: ir.Store) -> ir.Stmt:
        out = self.visit_default(s)
        assert isinstance(out, ir.Store)
        indices = tuple(out.indices)
        flat = self.flat(out.buffer, indices)
        return out if flat is indices else replace(out, indices=flat)

    def visit_For(self, s: ir.For) -> ir.Stmt:
        saved = self.in_threads
        self.in_threads = saved or s.kind is LoopKind.GPU_THREAD
        try:
            return super().visit_For(s)
        finally:
            self.in_threads = saved

    def visit_Allocate(self, s: ir.Allocate) -> ir.Stmt:
        if s.buffer.scope is ir.BufferScope.LOCAL and not self.in_threads \
                and any(_thread_loop(x) for x in walk_stmts(s.body)):
            self.kept.add(id(s.buffer))
        return self.visit_default(s)


def flatten_indices(stmt: ir.Stmt) -> ir.Stmt:
    """``stmt`` with the accesses whose element offset divides less than their coordinates written as it."""
    return _Flatten(VarRanges()).visit(stmt)
