"""Global-memory traffic of a lowered schedule, counted from its exact footprints (isl).

A GPU block (one iteration of the innermost loops bound to ``blockIdx``) reads and writes a region of each
tensor in global memory: the arguments and the intermediates computed at the root. Summed over the
blocks, the sizes of those regions are the elements the kernels move between global memory and the chip
when each block loads its region once (what staging in shared memory achieves); a halo read by two blocks
counts twice, an element a block reads twice counts once. Statements outside every block loop count as
one block. A reduction's reads of the elements it accumulates into are not counted (they are the block's
own output, written once). Buffers of stages computed at a loop (shared memory, registers) are not global: they cost no
traffic. Non-affine (data-dependent) indices count their whole dimension.

This module counts; it does not decide schedules or look at the loop IR.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from tesched.poly.model import PolyModel, StageModel, Statement
from tesched.poly.tree import LoopMark, ScheduleTree
from tesched.ir.kinds import LoopKind
from tesched.te.tensor import PlaceholderOp, TensorRead
from tesched.te.visit import collect


@dataclass(frozen=True)
class Traffic:
    """Elements of each global tensor read and written, summed over the blocks (``reads``, ``writes``:
    tensor name -> elements), with the number of blocks."""

    reads: dict[str, int]
    writes: dict[str, int]
    blocks: int

    @property
    def total(self) -> int:
        """Every element read or written, summed over the blocks."""
        return sum(self.reads.values()) + sum(self.writes.values())


def _global(sm: StageModel | None) -> bool:
    return sm is None or sm.parent is None


def _accesses(model: PolyModel) -> tuple[isl.UnionMap, isl.UnionMap, dict[str, str]]:
    """Reads and writes of global tensors by every statement, and each tensor's isl name -> its name."""
    space = model.context.get_space()
    reads, writes = isl.UnionMap.empty(space), isl.UnionMap.empty(space)
    names: dict[str, str] = {}
    for sm in model.stages:
        if sm.absorbed_by is not None:
            continue
        statements: list[Statement] = [sm.main] + ([sm.init] if sm.init is not None else [])
        if _global(sm):
            names[sm.tag] = sm.name
            own = tuple(sm.axes)
            for stmt in statements:
                writes = writes.union(isl.UnionMap(model.access_map(stmt, sm.tag, own)))
        for read in collect(sm.body, TensorRead):
            target = model.by_op.get(id(read.tensor.op))
            if not _global(target):
                continue
            tag = target.tag if target is not None else f"input_{len(names)}"
            if target is None:
                assert isinstance(read.tensor.op, PlaceholderOp)
                tag = next((t for t, n in names.items() if n == read.tensor.name), tag)
            names[tag] = read.tensor.name
            region = model.access_map(sm.main, tag, read.indices, loose=True)
            box = model.tensor_domain(read.tensor, tag)
            reads = reads.union(isl.UnionMap(region.intersect_range(box)))
    return reads, writes, names


def _block_prefixes(tree: ScheduleTree) -> list[isl.UnionMap]:
    """For each innermost loop bound to ``blockIdx``: statement instance -> its block's loop values."""
    out: list[isl.UnionMap] = []

    def visit(node: isl.ScheduleNode) -> bool:
        inner = False
        for k in range(node.n_children()):
            inner = visit(node.child(k)) or inner
        if node.get_type() == isl.schedule_node_type.mark:
            info = tree.marks.get(node.mark_get_id().get_name())
            if isinstance(info, LoopMark) and info.kind is LoopKind.GPU_BLOCK:
                if not inner:
                    below = node.child(0).child(0)
                    out.append(below.get_prefix_schedule_union_map().intersect_domain(below.get_domain()))
                return True
        return inner

    visit(tree.schedule.get_root())
    return out


def _per_block(footprint: isl.UnionMap, names: dict[str, str], into: dict[str, int]) -> None:
    """Add the size of each block's region of each tensor to ``into``."""
    def tensor(m: isl.Map) -> None:
        name = names[m.get_tuple_name(isl.dim_type.out)]
        counts: list[int] = []
        m.domain().foreach_point(lambda p: counts.append(int(m.intersect_domain(isl.Set.from_point(p)).range()
                                                              .count_val().to_python())))
        into[name] = into.get(name, 0) + sum(counts)

    footprint.foreach_map(tensor)


def global_traffic(model: PolyModel, tree: ScheduleTree) -> Traffic:
    """The global-memory traffic of the schedule in ``tree``: per tensor, the elements each block reads and
    writes, summed over the blocks. Sizes must be constant (each block's region is counted)."""
    reads, writes, names = _accesses(model)
    prefixes = _block_prefixes(tree)
    out_reads: dict[str, int] = {}
    out_writes: dict[str, int] = {}
    blocks = 0
    covered = isl.UnionSet.empty(model.context.get_space())
    for prefix in prefixes:
        covered = covered.union(prefix.domain())
        blocks += 0 if prefix.is_empty() else int(prefix.range().as_set().count_val().to_python())
        for rel, into in ((reads, out_reads), (writes, out_writes)):
            _per_block(prefix.reverse().apply_range(rel), names, into)
    for rel, into in ((reads, out_reads), (writes, out_writes)):
        rest = rel.subtract_domain(covered)
        if not rest.is_empty():
            whole = rest.range()
            one = isl.UnionMap.from_domain_and_range(isl.UnionSet(isl.Set("{ [] }")), whole)
            _per_block(one, names, into)
    if any(not rel.subtract_domain(covered).is_empty() for rel in (reads, writes)):
        blocks += 1
    return Traffic(out_reads, out_writes, blocks)
