"""Legality of a schedule, from dependences computed with isl.

Storage is modelled exactly: a whole tensor is ``T[x]``; a ``compute_at`` buffer is private to each
iteration of the loop it is allocated in, so its storage is ``T[p..., x]`` (``p`` the values of the loops
enclosing its allocation: the ``store_at`` loop and those around it). A folded buffer is checked by
:func:`.buffers.fold_is_safe` instead; here elements keep their tensor coordinates. From the access
relations and the schedule tree we check two things:

1. every element is written before it is read: each (writer, reader) pair on the same storage must run in
   that order (a reduction's own accumulation excepted, see 2);
2. loops marked ``parallel`` or ``vectorized``, or with the pragma ``ivdep``, carry no dependence: no two
   accesses to the same storage, one of them a write, run in different iterations of such a loop with
   the same outer iterations. The exceptions: a vectorized innermost reduction loop accumulating into its
   own stage's elements (the code generator gives each lane its own partial result; an ``ivdep`` loop
   has no exception, nor a scatter, whose lanes may hit one element), and a parallel loop of a scatter
   whose updates are atomic additions (``s[H].atomic()``).

A data-dependent index (a gather's read, a scatter's write) may touch any element along its dimension.

Both checks stay linear in the pipeline: the order is checked per pair of statements a flow links, and a
loop is checked only against the storages it does not privatise (a buffer allocated inside the loop has
the loop's value among its coordinates, so no two iterations share an element); an injective write
conflicts with itself only within one instance, so its self-pairs are not built.

A violation raises :class:`~tesched.errors.ScheduleError` naming the stage, the loop, the element and two
instances involved. This module reads the model and the tree; it changes neither.
"""
from __future__ import annotations

import islpy as isl

from tesched.errors import ScheduleError
from tesched.poly.affine import NotAffine
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.poly.tree import LoopMark, ScheduleTree
from tesched.poly.updates import definition_order, group_statements
from tesched.ir.kinds import LoopKind
from tesched.te.tensor import IterType, TensorRead
from tesched.te.visit import collect


class Accesses:
    """Write and read relations of every statement placed in the schedule tree, onto storage spaces.

    A tensorized stage's statements (and those of the stages its intrinsic computes) are analysed as
    written and then collapsed onto the intrinsic call that runs them; the intrinsic's internal tensors
    are not storage."""

    def __init__(self, model: PolyModel):
        self.model = model
        self.writes = isl.UnionMap.empty(model.context.get_space())
        self.reads = isl.UnionMap.empty(model.context.get_space())
        self.collapse: dict[str, isl.Map] = {}
        self._maps: dict[str, isl.UnionMap] = {}       # by isl text: a body reads one element many times
        for sm in model.stages:
            owner = sm.absorbed_by or sm
            if owner.calls:
                reset = next((c for c in owner.calls if c.kind is StatementKind.CALL_RESET), None)
                updating = owner.calls[-1].kind is StatementKind.CALL_UPDATE
                for stmt in sm.statements:
                    # an init goes to the reset call, or to none (an intrinsic without reset leaves the
                    # init to plain loops, sm.tail_init); the rest to the last call; instances of partial
                    # tiles to none (plain loops, sm.tail_main)
                    call = (reset if updating else owner.calls[-1]) if stmt.kind is StatementKind.INIT \
                        else owner.calls[-1]
                    target = call or owner.calls[-1]
                    depth = owner.prefix_len + len(target.loop_vars)
                    lmap = self.model.loop_map(stmt, depth)
                    lmap = lmap.intersect_range(target.domain.reset_tuple_id()) if call is not None \
                        else lmap.subtract(lmap)
                    self.collapse[stmt.name] = lmap.set_tuple_name(isl.dim_type.out, target.name)
        for sm in model.stages:
            if sm.absorbed_by is None:
                for stmt in sm.statements + sm.tail:
                    # a scatter's computed index, an update definition's element
                    if sm.target is not None and stmt.kind is StatementKind.UPDATE:
                        self._add("writes", stmt, self.read_map(stmt, sm, sm.target))
                        continue
                    own = stmt.coords[sm.prefix_len:sm.prefix_len + len(sm.axes)]
                    self._add("writes", stmt, self.storage_map(stmt, sm, own))
            self._reads_of(sm, sm.main)
            if sm.tail_main is not None:
                self._reads_of(sm, sm.tail_main)

    def _add(self, which: str, stmt: Statement, rel: isl.UnionMap) -> None:
        target = self.collapse.get(stmt.name)
        if target is not None:
            rel = isl.UnionMap(target).reverse().apply_range(rel)
        setattr(self, which, getattr(self, which).union(rel))

    def storage_map(self, stmt: Statement, target: StageModel, index: list[str], where: str = "") -> isl.UnionMap:
        """``stmt -> storage of target`` at tensor coordinates ``index`` (isl text), under ``where``."""
        private = stmt.loops[:target.store_len]
        text = (f"{self.model.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] -> "
                f"{target.storage_tag}[{', '.join(private + index)}]{f' : {where}' if where else ''} }}")
        if text not in self._maps:
            self._maps[text] = isl.UnionMap(isl.Map(text).intersect_domain(stmt.domain))
        return self._maps[text]

    def read_map(self, stmt: Statement, target: StageModel, read: TensorRead) -> isl.UnionMap:
        """``stmt -> storage of target`` at ``read``'s indices; along a data-dependent index, any element
        of the dimension."""
        index, bounds = [], []
        for k, i in enumerate(read.indices):
            try:
                index.append(self.model.isl_of(i, stmt.stage.coord))
            except NotAffine:
                index.append(f"any{k}")
                bounds.append(f"0 <= any{k} < {self.model.isl_shape(read.tensor.shape[k], read.tensor)}")
        return self.storage_map(stmt, target, index, " and ".join(bounds))

    def _reads_of(self, reader: StageModel, stmt: Statement) -> None:
        added: set[int] = set()
        for read in collect(reader.body, TensorRead):
            target = self.model.by_op.get(id(read.tensor.op))
            if target is None or target.absorbed_by is not None:  # an input, or internal to an intrinsic
                continue
            rel = self.read_map(stmt, target, read)
            if id(rel) not in added:            # the same element read again (the same map): added once
                added.add(id(rel))
                self._add("reads", stmt, rel)
        if reader.target is not None and reader.update_of is None:  # a scatter reads what it accumulates into
            self._add("reads", stmt, self.read_map(stmt, reader, reader.target))
        elif reader.init is not None and reader.absorbed_by is None:  # the update reads what it accumulates into
            own = stmt.coords[reader.prefix_len:reader.prefix_len + len(reader.axes)]
            self._add("reads", stmt, self.storage_map(stmt, reader, own))


def describe(model: PolyModel, name: str, values: list[int]) -> str:
    """``stage[loop=value, ...]`` for a statement instance, with the user's loop and axis names."""
    stmt = model.statements[name]
    sm = stmt.stage
    names = [v.name for st, lv in sm.chain() for v in st.leaves[:lv + 1]]
    if stmt.kind.is_call:
        names += [v.name for v in stmt.loop_vars]
    else:
        names += [a.name for a in sm.axes] + [r.name for r in sm.raxes]
    label = {"init": f"{sm.name} (init)", "alloc": f"{sm.name} (allocation)", "call_reset": f"{sm.name} (reset call)",
             "call_update": f"{sm.name} (intrinsic call)", "call_body": f"{sm.name} (intrinsic call)"}.get(
        stmt.kind, sm.name)
    return f"{label}[{', '.join(f'{n}={v}' for n, v in zip(names, values))}]"


def _example(pairs: isl.UnionMap) -> tuple[str, list[int], str, list[int]]:
    found: list = []

    def take(m: isl.Map) -> None:
        if not found:
            point = m.wrap().sample_point()
            n_in = m.dim(isl.dim_type.in_)
            coords = [int(point.get_coordinate_val(isl.dim_type.set, k).to_python())
                      for k in range(n_in + m.dim(isl.dim_type.out))]
            found.append((m.get_tuple_name(isl.dim_type.in_), coords[:n_in],
                          m.get_tuple_name(isl.dim_type.out), coords[n_in:]))

    pairs.foreach_map(take)
    return found[0]


def _same_stage_updates(model: PolyModel, scatters: bool = True, only_atomic: bool = False) -> isl.UnionMap:
    """Pairs of update instances of one reduction (whose order does not matter); without ``scatters``,
    not those of a scatter (whose lanes would write one element at once); with ``only_atomic``, only those
    of scatters whose updates are atomic (threads may run them at once)."""
    pairs = isl.UnionMap.empty(model.context.get_space())
    for sm in model.stages:
        if only_atomic and not (sm.scatters and sm.stage.atomic_updates):
            continue
        if sm.init is not None and sm.absorbed_by is None and (scatters or not sm.scatters):
            dom = isl.UnionSet(sm.emitted[-1].domain)
            if sm.tail_main is not None:
                dom = dom.union(isl.UnionSet(sm.tail_main.domain))
            pairs = pairs.union(isl.UnionMap.from_domain_and_range(dom, dom))
    return pairs


def check_legality(model: PolyModel, tree: ScheduleTree) -> None:
    """Raise ScheduleError if the schedule reads before writing, or a parallel loop carries a dependence."""
    acc = Accesses(model)
    schedule = tree.schedule
    flow = acc.writes.apply_range(acc.reads.reverse()).subtract(_same_stage_updates(model))
    # within the definitions of a tensor with updates, the order they declare (flow, anti and output)
    own = group_statements(model)
    if own:
        flow = flow.subtract(_among(model, own)).union(definition_order(model, acc.writes, acc.reads))
    late = _late(flow, schedule.get_map())
    if late is not None:
        src, sv, dst, dv = _example(late)
        raise ScheduleError(f"{describe(model, dst, dv)} would read a value before "
                            f"{describe(model, src, sv)} writes it: the schedule breaks a dependence")
    conflicts: dict[str, tuple[isl.UnionMap, set[str]]] = {}     # per storage: its pairs, their statements
    writes, reads = _by_storage(acc.writes), _by_storage(acc.reads)
    for tag, ws in writes.items():
        pairs = isl.UnionMap.empty(model.context.get_space())
        for i, a in enumerate(ws):
            for b in ws[i:]:
                if a is not b or not a.is_injective():   # an injective write meets itself only in one instance
                    pairs = pairs.union(isl.UnionMap(a.apply_range(b.reverse())))
            for r in reads.get(tag, []):
                pairs = pairs.union(isl.UnionMap(a.apply_range(r.reverse())))
        pairs = pairs.union(pairs.reverse())
        conflicts[tag] = (pairs, _statements(pairs.domain()))
    _check_loops(model, tree, schedule.get_root(), conflicts)


def _among(model: PolyModel, names: set[str]) -> isl.UnionMap:
    """Every pair of instances of the statements ``names``."""
    dom = isl.UnionSet.empty(model.context.get_space())
    for name in names:
        dom = dom.union(isl.UnionSet(model.statements[name].domain))
    return isl.UnionMap.from_domain_and_range(dom, dom)


def _statements(instances: isl.UnionSet) -> set[str]:
    """The names of the statements ``instances`` has instances of."""
    names: set[str] = set()
    instances.foreach_set(lambda s: names.add(s.get_tuple_name()))
    return names


def _late(flow: isl.UnionMap, time: isl.UnionMap) -> isl.UnionMap | None:
    """The pairs of ``flow`` (writer -> reader instances) the schedule ``time`` does not run in order, or
    None; judged per pair of statements (the order between every two statements would be quadratic)."""
    when: dict[str, isl.UnionMap] = {}

    def add(m: isl.Map) -> None:
        name = m.get_tuple_name(isl.dim_type.in_)
        when[name] = when[name].union(isl.UnionMap(m)) if name in when else isl.UnionMap(m)

    time.foreach_map(add)
    found: list[isl.UnionMap] = []

    def check(m: isl.Map) -> None:
        if found:
            return
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        if _in_order(isl.UnionMap(m).apply_domain(when[src]).apply_range(when[dst])):
            return
        late = isl.UnionMap(m).subtract(when[src].lex_lt_union_map(when[dst]))
        if not late.is_empty():
            found.append(late)

    flow.foreach_map(check)
    return found[0] if found else None


def _in_order(times: isl.UnionMap) -> bool:
    """Whether every pair of schedule vectors in ``times`` (writer's -> reader's) is lexicographically
    increasing: decided on the vectors (a handful of dimensions) before building the order between every
    two instances of the statements, which is what costs when their domains hold the floors of resampled
    tiles. False where the spaces differ (then the instances decide)."""
    maps = times.get_map_list()
    if maps.n_map() != 1:
        return times.is_empty()
    pairs = maps.get_at(0)
    space = pairs.get_space()
    if space.dim(isl.dim_type.in_) != space.dim(isl.dim_type.out):
        return False
    return pairs.intersect(isl.Map.lex_ge(space.domain())).is_empty()


def _by_storage(accesses: isl.UnionMap) -> dict[str, list[isl.Map]]:
    """The maps of ``accesses`` (one per statement) by the storage (tensor tag) they touch."""
    out: dict[str, list[isl.Map]] = {}
    accesses.foreach_map(lambda m: out.setdefault(m.get_tuple_name(isl.dim_type.out), []).append(m))
    return out


def _private_storage(model: PolyModel, stage: str, var: object) -> set[str]:
    """The storages (tags) allocated inside loop ``var`` of ``stage``: each iteration of that loop has its
    own copy (the loop's value is a coordinate of the storage), so no access to one of them conflicts
    with an access in another iteration."""
    owners = [sm for sm in model.stages if sm.name == stage]
    if len(owners) != 1:                 # two stages of one name: no storage is taken for private
        return set()
    owner = owners[0]
    level = next((k for k, v in enumerate(owner.leaves) if v is var), None)
    if level is None:
        return set()
    return {sm.storage_tag for sm in model.stages
            if (owner, level) in [(s, t) for s, lv in sm.chain() for t in range(lv + 1)][:sm.store_len]}


def _carried(band: isl.ScheduleNode, pairs: isl.UnionMap) -> bool:
    """Whether some pair of instances in ``pairs`` runs in the same iteration of the loops around
    ``band`` but in different iterations of the band's loop. Judged on the pairs' *schedule values*
    (``[outer..., loop]``, a handful of dimensions) instead of building every pair of instances that share
    the outer iterations, which grew with the product of the statements' domains."""
    when = band.get_prefix_schedule_union_map().flat_range_product(band.band_get_partial_schedule_union_map())
    times = pairs.apply_domain(when).apply_range(when)
    if times.is_empty():
        return False
    n = when.get_map_list().get_at(0).dim(isl.dim_type.out) if not when.is_empty() else 0
    outer = ", ".join(f"o{k}" for k in range(n - 1))
    sep = ", " if outer else ""
    differ = isl.UnionMap(f"{{ [{outer}{sep}x] -> [{outer}{sep}y] : x < y or x > y }}")
    return not times.intersect(differ).is_empty()


def _scatter_hint(model: PolyModel, a: str, b: str, kind: LoopKind) -> str:
    """What to do when the conflict is between two points of a scatter (two may hit one element)."""
    for name in (a, b):
        stmt = model.statements[name]
        sm = stmt.stage
        if sm.scatters and stmt.kind is StatementKind.UPDATE:
            fix = (f"make the updates atomic (s[{sm.name}].atomic())" if kind is LoopKind.PARALLEL
                   else "keep the loop scalar")
            return (f"; {sm.name} is a scatter whose points may add into the same element (its index is "
                    f"computed): keep the loop serial, {fix}, or give each iteration its own partial result "
                    "(an index affine in the loop, summed afterwards)")
    return ""


def _check_loops(model: PolyModel, tree: ScheduleTree, node: isl.ScheduleNode,
                 conflicts: dict[str, tuple[isl.UnionMap, set[str]]]) -> None:
    if node.get_type() == isl.schedule_node_type.mark:
        info = tree.marks.get(node.mark_get_id().get_name())
        ivdep = isinstance(info, LoopMark) and ("ivdep", True) in info.pragmas
        if isinstance(info, LoopMark) and (info.kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED) or info.kind.bound
                                           or ivdep):
            band = node.child(0)
            dom = band.get_domain()
            private = _private_storage(model, info.stage, info.var)
            inside = _statements(dom)           # only the storages these statements access can conflict here
            local = isl.UnionMap.empty(model.context.get_space())
            for tag, (pairs, stmts) in conflicts.items():
                if tag not in private and stmts & inside:
                    local = local.union(pairs.intersect_domain(dom).intersect_range(dom))
            if not ivdep and info.kind is LoopKind.VECTORIZED and info.var.iter_type is IterType.COMM_REDUCE and any(
                    sm.leaves and sm.leaves[-1] is info.var for sm in model.stages):
                # innermost reduction loop: each lane keeps its own partial result
                local = local.subtract(_same_stage_updates(model, scatters=False))
            if info.kind is LoopKind.GPU_THREAD and info.var.iter_type is IterType.COMM_REDUCE:
                # a cross-thread reduction: each thread keeps its own partial result, the block combines them
                local = local.subtract(_same_stage_updates(model, scatters=False))
            if info.kind is LoopKind.PARALLEL:      # atomic additions of a scatter may run at once
                local = local.subtract(_same_stage_updates(model, only_atomic=True))
            if _carried(band, local):
                prefix = band.get_prefix_schedule_union_map()
                partial = band.band_get_partial_schedule_union_map()
                carried = (local.intersect(prefix.apply_range(prefix.reverse()))
                           .subtract(partial.apply_range(partial.reverse())))
                a, av, b, bv = _example(carried)
                what = "has pragma ivdep" if ivdep else f"is bound to {info.thread}" if info.thread else f"is {info.kind}"
                raise ScheduleError(
                    f"loop {info.label} of stage {info.stage} {what}, but its iterations depend on "
                    f"each other: {describe(model, a, av)} and {describe(model, b, bv)} access the same "
                    f"element (one of them writes it) in different iterations of {info.label}"
                    + _scatter_hint(model, a, b, info.kind))
    for k in range(node.n_children()):
        _check_loops(model, tree, node.child(k), conflicts)
