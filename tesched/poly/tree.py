"""Build the isl schedule tree of a :class:`~.model.PolyModel`, bottom-up.

For each stage, one single-member band per loop (its value at every statement below, from the loop
vectors), a mark above each band naming the loop (so the AST walk knows its name and kind, even when isl
splits or drops the loop), and a ``produce`` mark above the stage. A reduction's ``init`` statement
shares the loops before the first reduction loop and then gets its own loops, in a sequence before the
``update``. Stages computed at a loop go in a sequence before the rest of that loop's body, under an
``alloc`` mark; their ``alloc`` statement (first in the sequence) sets the buffer's origin for the
iteration. A stage stored outside the loop it is computed at (``store_at``) has its ``alloc`` mark and
statement at its storage loop instead (``store_root``: around the root stage that encloses it).
Prefetch statements (:mod:`.prefetch`) go first in the body of their loop. Root stages form a
sequence in dependence order; a stage computed with another (``compute_with``) runs inside that stage's
loops instead, its bands shared down to the fused loop, its own loops after the host's body there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from tesched.ir.exprs import BufferScope
from tesched.poly.fused import FusedGroup
from tesched.poly.model import PolyModel, StageModel, Statement
from tesched.ir.kinds import LoopKind
from tesched.schedule.schedule import IterVar


@dataclass(frozen=True)
class LoopMark:
    """Above a band: the loop's stage, variable, kind and largest extent (isl may split or drop the loop)."""

    stage: str
    var: IterVar
    kind: LoopKind
    extent: int | None
    origin: str = ""
    pragmas: tuple[tuple[str, bool | int], ...] = ()    # C loop hints (``Stage.pragma``)
    group: FusedGroup | None = None     # the fuse over a symbolic extent this loop is a component of
    thread: str = ""                    # the GPU index the loop is bound to (``bind``), e.g. "threadIdx.x"

    @property
    def label(self) -> str:
        """The loop's name for messages: the user's fused loop for a component of a kept-out fuse."""
        return self.var.name if self.group is None else self.group.describe()


@dataclass(frozen=True)
class ProduceMark:
    stage: StageModel


@dataclass(frozen=True)
class AllocMark:
    stage: StageModel


def _largest_trip_count(sm: StageModel, var: IterVar) -> int | None:
    """The most iterations loop ``var`` of ``sm`` runs: its extent, or for an axis of a stage computed at a
    loop, the size of the region it computes there (its buffer's box) when that is smaller: the GPU
    launch of a loop bound to a GPU index covers this count."""
    extent = sm.leaf_extent.get(id(var))
    buf = sm.buffer
    if buf is None or buf.scope is not BufferScope.LOCAL or buf.folds:
        return extent
    box = next((buf.shape[d] for d, a in enumerate(sm.axes) if a is var), None)
    if not isinstance(box, int):
        return extent
    return box if extent is None else min(extent, box)


class TreeBuilder:
    """Builds the tree over the statements' coordinates (``loop_space=False``: what the analyses read)
    or over their loop values (``loop_space=True``: what isl's AST generator gets, see
    :class:`~.model.LoopSpace`). Both trees have the same shape and marks; ``single`` caches which loops
    are left out (one value per iteration of the loops around them), so the second build reuses it."""

    def __init__(self, model: PolyModel, loop_space: bool = False, single: dict | None = None):
        self.model = model
        self.loop_space = loop_space
        self.single: dict[tuple[str, int], bool] = {} if single is None else single
        self.marks: dict[str, LoopMark | ProduceMark | AllocMark] = {}
        self.depth = 0

    def coords(self, stmt: Statement) -> list[str]:
        return stmt.loop_coords if self.loop_space else stmt.coords

    def value(self, stmt: Statement, pos: int) -> str:
        """The value of loop ``pos`` at ``stmt``, over :meth:`coords`."""
        return stmt.loop_coords[pos] if self.loop_space and stmt.space is not None else stmt.loops[pos]

    def build(self) -> isl.Schedule:
        parts = []
        for root in self.model.stages:
            if root.parent is None and root.fused_into is None:
                stored = [p for p in self.model.stages if p.parent is not None and p.store_parent is None
                          and p.chain()[0][0] is root and p.absorbed_by is None]
                parts.append(self.allocate(stored, [], self.stage_tree(root)[0])[0])
        return _sequence(parts)

    def allocate(self, stored: list[StageModel], computed: list[StageModel],
                 sched: isl.Schedule) -> tuple[isl.Schedule, list[Statement]]:
        """``sched`` after the stages ``computed`` there, inside the buffers of the stages ``stored``
        there (their ``alloc`` statements first), and the statements added."""
        if not stored and not computed:
            return sched, []
        added = [p.alloc for p in stored if p.alloc is not None]
        parts = [self.leaf(a) for a in added]
        for p in computed:
            psched, pstmts = self.stage_tree(p)
            parts.append(psched)
            added += pstmts
        sched = _sequence(parts + [sched])
        for p in reversed(stored):
            sched = self.mark(sched, AllocMark(p))
        return sched, added

    # pieces ---------------------------------------------------------------------------------------
    def mark(self, sched: isl.Schedule, info) -> isl.Schedule:
        name = f"m{len(self.marks)}"
        self.marks[name] = info
        return sched.get_root().child(0).insert_mark(isl.Id(name)).get_schedule()

    def band(self, sched: isl.Schedule, stmts: list[Statement], pos: int, separate: bool = False) -> isl.Schedule:
        self.depth = max(self.depth, pos + 1)
        pieces = "; ".join(f"{s.name}[{', '.join(self.coords(s))}] -> [{self.value(s, pos)}]" for s in stmts)
        umap = isl.UnionMap(f"{self.model.param_prefix}{{ {pieces} }}")
        node = sched.insert_partial_schedule(isl.MultiUnionPwAff.from_union_map(umap)).get_root().child(0)
        # atomic: one loop per band with min/max bounds, rather than a copy of the body per domain piece;
        # separate for a sliding window, whose first iteration computes more than the others: one hull
        # over both would scan every earlier slice under a guard
        kind = isl.ast_loop_type.separate if separate else isl.ast_loop_type.atomic
        return node.band_member_set_ast_loop_type(0, kind).get_schedule()

    def loop(self, sched, stmts, sm: StageModel, pos: int, var: IterVar) -> isl.Schedule:
        # the stage's own statements decide: those of stages computed inside it run at a subset of its
        # iterations, so they are single-valued when it is (and checking them cost seconds)
        own = [s for s in stmts if s.stage is sm]
        key = (",".join(s.name for s in own) or sm.name, pos)
        if key not in self.single:
            self.single[key] = sm.parent is not None and self.single_valued(own, pos)
        if sm.leaf_extent.get(id(var)) == 1 or self.single[key]:
            # One iteration per iteration of the enclosing loops: no loop to generate. Leaving the band
            # out also avoids an isl code generator bug that drops instances of such a band when its
            # value is a modulo (a split) that depends on an enclosing fused loop.
            return sched
        # (not when stages computed inside it would be copied into each piece: their buffers' origins
        # are set once per allocation)
        separate = sm.hoisted and not any(p.parent is sm for p in self.model.stages)
        sched = self.band(sched, stmts, pos, separate)
        group = sm.group_of(var)
        kind = sm.loop_kind(var)
        hints = tuple(sorted(sm.stage.pragmas.get(var, {}).items())) if group is None else group.check_pragmas
        axis = sm.stage.thread_bindings.get(var)
        extent = _largest_trip_count(sm, var) if axis is not None else sm.leaf_extent.get(id(var))
        return self.mark(sched, LoopMark(sm.name, var, kind, extent, sm.stage.loop_origin(var),
                                         hints, group, axis.tag if axis is not None else ""))

    def single_valued(self, stmts: list[Statement], pos: int) -> bool:
        """Whether the loop at ``pos`` has one value per iteration of the loops around it, for all
        ``stmts``. Decided over the statements' loop values (:class:`~.model.LoopSpace`), where the loop
        vector is the point itself: the values of loops ``0..pos`` that run are a projection of the
        domain. Over the coordinates, the same question composes maps of nested floors and modulos, which
        took isl seconds per loop (and isl's operation budget does not interrupt that call)."""
        for s in stmts:
            values = s.loop_coords if s.space is not None else s.loops
            image = isl.Map(f"{self.model.param_prefix}{{ {s.name}[{', '.join(s.loop_coords)}] -> "
                            f"[{', '.join(values[:pos + 1])}] }}")
            ran = image.intersect_domain(s.loop_domain).range()
            if _two_values_at_a_sample(ran, pos) or not isl.Map.from_range(ran).move_dims(
                    isl.dim_type.in_, 0, isl.dim_type.out, 0, pos).is_single_valued():
                return False
        return True

    def leaf(self, stmt: Statement) -> isl.Schedule:
        return isl.Schedule.from_domain(isl.UnionSet(stmt.loop_domain if self.loop_space else stmt.domain))

    # stages ---------------------------------------------------------------------------------------
    def stage_tree(self, sm: StageModel) -> tuple[isl.Schedule, list[Statement]]:
        if sm.tensorized is None:
            sched, placed = self.nest(sm, 0, sm.init, sm.main)
        else:
            sched, placed = self.tensorized(sm)
        return self.mark(sched, ProduceMark(sm)), placed

    def init_loops(self, sm: StageModel, init: Statement) -> isl.Schedule:
        """An init statement (or reset call) with its own loops after the first reduction loop."""
        r = sm.first_reduce
        assert r is not None
        isched = self.leaf(init)
        for j in reversed(range(r, len(init.loop_vars))):
            isched = self.loop(isched, [init], sm, sm.prefix_len + j, init.loop_vars[j])
        return isched

    def nest(self, sm: StageModel, lo: int, init: Statement | None,
             main: Statement) -> tuple[isl.Schedule, list[Statement]]:
        """The plain loops ``lo..`` of a stage: the init (if any) before the first reduction loop, then
        the main statement inside every loop."""
        n = len(sm.leaves)
        if init is None:
            return self.levels(sm, lo, n, self.leaf(main), [main])
        r = sm.first_reduce
        assert r is not None and r >= lo
        usched, ustmts = self.levels(sm, r, n, self.leaf(main), [main])
        return self.levels(sm, lo, r, self.init_loops(sm, init).sequence(usched), [init] + ustmts)

    def tensorized(self, sm: StageModel) -> tuple[isl.Schedule, list[Statement]]:
        """Intrinsic calls in place of the loops from the tensorized one inward, for whole tiles; partial
        tiles (and the init of an intrinsic without reset) run the stage's plain loops beside them."""
        n, r = sm.n_loops, sm.first_reduce
        call = sm.calls[-1]
        below, stmts = self.leaf(call), [call]
        if r is None or r >= n:           # the whole reduction (if any) is inside the region: one body call
            if sm.tail_main is not None:
                plain, pstmts = self.nest(sm, n, sm.tail_init, sm.tail_main)
                below, stmts = below.sequence(plain), stmts + pstmts
            return self.levels(sm, 0, n, below, stmts)
        if sm.tail_main is not None:      # update calls; partial tiles accumulate with plain loops
            plain, pstmts = self.levels(sm, n, len(sm.leaves), self.leaf(sm.tail_main), [sm.tail_main])
            below, stmts = below.sequence(plain), stmts + pstmts
        usched, ustmts = self.levels(sm, r, n, below, stmts)
        inits = [s for s in (sm.calls[0] if len(sm.calls) == 2 else None, sm.tail_init) if s is not None]
        isched = _sequence([self.init_loops(sm, s) for s in inits])
        return self.levels(sm, 0, r, isched.sequence(usched), inits + ustmts)

    def levels(self, sm: StageModel, lo: int, hi: int, sched: isl.Schedule,
               stmts: list[Statement]) -> tuple[isl.Schedule, list[Statement]]:
        """Wrap ``sched`` in ``sm``'s loops ``lo..hi-1``, placing stages computed or stored at each."""
        for t in reversed(range(lo, hi)):
            for p in self.model.stages:     # computed with sm down to this loop (compute_with): after its body
                if p.fused_into is sm and p.fused_level == t:
                    psched, pstmts = self.nest(p, t + 1, p.init, p.main)
                    sched, stmts = sched.sequence(self.mark(psched, ProduceMark(p))), stmts + pstmts
            live = [p for p in self.model.stages if p.parent is not None and p.absorbed_by is None]
            computed = [p for p in live if p.parent is sm and p.level == t]
            stored = [p for p in live if p.store_parent is sm and p.store_level == t and p.update_of is None]
            sched, added = self.allocate(stored, computed, sched)
            stmts = added + stmts
            ahead = [pf.statement for pf in sm.prefetches if pf.level == t]
            if ahead:
                sched = _sequence([self.leaf(a) for a in ahead] + [sched])
                stmts = ahead + stmts
            sched = self.loop(sched, stmts, sm, sm.prefix_len + t, sm.leaves[t])
        return sched, stmts


def _sequence(parts: list[isl.Schedule]) -> isl.Schedule:
    out = parts[0]
    for p in parts[1:]:
        out = out.sequence(p)
    return out


@dataclass(frozen=True)
class ScheduleTree:
    """An isl schedule tree over the statements' coordinates (``schedule``, for the analyses), the same
    tree over their loop values (``loop_schedule``, for the AST generator), the table of their marks and
    their loop depth."""

    schedule: isl.Schedule
    loop_schedule: isl.Schedule
    marks: dict[str, LoopMark | ProduceMark | AllocMark]
    depth: int
    coordinates: dict[str, isl.MultiAff] = field(default_factory=dict)  # statement -> loop values to coords
    stage_of: dict[str, str] = field(default_factory=dict)   # statement -> the name of its stage


def build_tree(model: PolyModel) -> ScheduleTree:
    """The schedule trees of ``model``."""
    builder = TreeBuilder(model)
    schedule = builder.build()
    in_loops = TreeBuilder(model, loop_space=True, single=builder.single)
    loop_schedule = in_loops.build()
    assert in_loops.marks.keys() == builder.marks.keys(), "the two schedule trees differ in shape"
    coordinates = {name: stmt.space.coordinates(stmt) for name, stmt in model.statements.items()
                   if stmt.space is not None}
    stage_of = {name: stmt.stage.name for name, stmt in model.statements.items()}
    return ScheduleTree(schedule, loop_schedule, builder.marks, builder.depth, coordinates, stage_of)


def _two_values_at_a_sample(values: isl.Set, pos: int) -> bool:
    """Whether dimension ``pos`` of ``values`` takes two values where the dimensions before it are those of
    one sample point: a witness that it is not single-valued, found in a slice with every outer loop fixed
    (the general test composes the floors and modulos of resampled tiles, seconds of isl per loop)."""
    if values.is_empty():
        return False
    point = values.sample_point()
    fixed = values
    for kind, count in ((isl.dim_type.param, values.dim(isl.dim_type.param)), (isl.dim_type.set, pos)):
        for d in range(count):          # the sizes too: the same slice, for the same shapes
            fixed = fixed.fix_val(kind, d, point.get_coordinate_val(kind, d))
    return not fixed.subtract(isl.Set.from_point(point)).is_empty()
