"""Update definitions in the polyhedral model: the stages of one tensor's definitions share its storage.

A tensor with update definitions (:mod:`tesched.te.update`) is a group of stages: its pure definition,
then each update, in order. Each is a stage model of its own (its loops, its schedule, its statements),
and the updates are linked to the pure definition (``update_of``): they write its buffer and its isl
storage tag, so the dependence analysis sees every definition's accesses to one array.

:func:`link_updates` checks the group (computed at the root; only its latest version read by other
stages or passed to the kernel); :func:`update_statement` and :func:`update_domain` give an update's
statement (one, over its pure axes then its reduce axes) and its domain (the pure axes' box times the
reduce box); :func:`definition_order` gives the dependences between the group's accesses in the order
the definitions declare (definitions in order, each over its loops lexicographically), which the
schedule must keep (:mod:`.deps`). This module reads the declarations; it builds no loop.
"""
from __future__ import annotations

import islpy as isl

from tesched.errors import ScheduleError
from tesched.poly.model import LoopSpace, PolyModel, StageModel, Statement, StatementKind
from tesched.schedule.kinds import AttachType
from tesched.schedule.stage import Stage
from tesched.te.tensor import Tensor, TensorRead
from tesched.te.update import UpdateOp
from tesched.te.visit import collect


def link_updates(model: PolyModel) -> None:
    """Link each update's stage model to its pure definition's, and check the groups."""
    updated = {id(st.op.base) for st in model.schedule.stages if isinstance(st.op, UpdateOp)}
    for st in model.schedule.stages:
        if isinstance(st.op, UpdateOp) and (st.attach_type is not AttachType.ROOT or st.store_type is not None):
            raise ScheduleError(f"{_placement(st)} of {st.name}: an update definition is computed where its "
                                f"pure definition is; place that one (s[{st.op.base.name}]), its updates follow")
        if id(st.op) in updated and (st.attach_type is AttachType.INLINE or st.store_type is not None):
            raise ScheduleError(f"{_placement(st)} of {st.name}: it has update definitions, which run in order "
                                "over its buffer; compute it at the root or at a loop of a reader (compute_at)")
    latest: dict[int, StageModel] = {}
    for sm in model.stages:
        if isinstance(sm.op, UpdateOp):
            sm.update_of = model.by_op[id(sm.op.base)]
            latest[id(sm.op.base)] = sm
            if sm.update_of.stage.attach_type is AttachType.SCOPE:
                _check_local(sm)
    for sm in model.stages:
        for read in collect(sm.body, TensorRead):
            _check_version(model, latest, read.tensor, sm)
    for t in model.arg_tensors:
        _check_version(model, latest, t, None)


def _placement(st: Stage) -> str:
    if st.store_type is not None:
        return "store_root" if st.store_type is AttachType.ROOT else "store_at"
    return {AttachType.INLINE: "compute_inline", AttachType.SCOPE: "compute_at"}.get(st.attach_type, "placement")


def placed_by(sm: StageModel) -> Stage:
    """The stage whose placement ``sm`` follows: its own, or its pure definition's for an update."""
    return sm.stage if sm.update_of is None else sm.update_of.stage


def pure_dims(sm: StageModel) -> list[int]:
    """The tensor dimension of each pure axis of an update, in order."""
    assert sm.target is not None, f"{sm.name} is not an update"
    return [next(d for d, i in enumerate(sm.target.indices) if i is a) for a in sm.axes]


def _check_local(sm: StageModel) -> None:
    """An update computed at a loop runs only over the pure coordinates its readers need there, so it
    may read its tensor only at its own pure coordinates (along each of its pure dimensions)."""
    assert sm.update_of is not None
    group = {id(sm.update_of.op)} | {id(sm.op)}
    dims = dict(zip(pure_dims(sm), sm.axes))
    for read in collect(sm.body, TensorRead):
        op = read.tensor.op
        if not (id(op) in group or (isinstance(op, UpdateOp) and op.base is sm.update_of.op)):
            continue
        for d, axis in dims.items():
            if read.indices[d] is not axis:
                raise ScheduleError(f"compute_at of {sm.update_of.name}: its update {sm.name} reads {read!r}, at "
                                    f"{read.indices[d]!r} along its pure axis {axis.name}, so its value at one "
                                    f"{axis.name} depends on others the loop may not compute; compute "
                                    f"{sm.update_of.name} at the root")


def _check_version(model: PolyModel, latest: dict[int, StageModel], tensor: Tensor, reader: StageModel | None) -> None:
    """A version of an updated tensor that is not its latest is read only by that tensor's updates."""
    op = tensor.op
    base = op.base if isinstance(op, UpdateOp) else op
    last = latest.get(id(base))
    if last is None or last.op is op or (reader is not None and reader.update_of is not None
                                          and reader.update_of.op is base):
        return
    who = f"stage {reader.name} reads" if reader is not None else "the kernel's arguments hold"
    raise ScheduleError(f"{who} {op.name}, a version of {base.name} that a later definition ({last.name}) "
                        f"updates in place; read the latest version, {last.name}")


def update_statement(sm: StageModel, pcoords: list[str], params: str) -> Statement:
    """The one statement of an update: over its pure axes then its reduce axes."""
    coords = pcoords + [sm.coord[id(a)] for a in sm.axes + sm.raxes]
    space = LoopSpace(pcoords + [sm.loop_name[id(v)] for v in sm.leaves],
                      pcoords + [sm.axis_value[id(a)] for a in sm.axes + sm.raxes], [c for _, c in sm.loop_conds],
                      params)
    return Statement(f"S{sm.tag[1:]}_update", StatementKind.UPDATE, sm, coords,
                     pcoords + [sm.leaf_expr[id(v)] for v in sm.leaves], list(sm.leaves), space=space)


def update_domain(model: PolyModel, sm: StageModel, required: isl.Map | None = None) -> isl.Set:
    """An update's instances: the box of its pure axes (their dimensions of the tensor) and of its reduce
    axes, whose bounds may use the axes before them. Computed at a loop, its pure axes run over the
    region its readers need per iteration (``required``: loop prefix -> elements)."""
    conds = []
    for a in sm.axes + sm.raxes:
        lo, ext = model.isl_of(a.range.min, sm.coord), model.isl_of(a.range.extent, sm.coord)
        conds.append(f"{lo} <= {sm.coord[id(a)]} < ({lo}) + ({ext})")
    name = sm.main.name
    box = isl.Set(f"{model.param_prefix}{{ {name}[{', '.join(sm.main.coords)}] : {' and '.join(conds) or 'true'} }}")
    if required is None:
        return box
    region = required.wrap().flatten()
    kept = pure_dims(sm)
    for d in reversed(range(sm.tensor.ndim)):
        if d not in kept:
            region = region.project_out(isl.dim_type.set, sm.prefix_len + d, 1)
    if sm.raxes:
        rcoords = ", ".join(sm.coord[id(r)] for r in sm.raxes)
        region = region.flat_product(isl.Set(f"{model.param_prefix}{{ [{rcoords}] }}"))
    return region.set_tuple_name(name).intersect(box)


def definition_order(model: PolyModel, writes: isl.UnionMap, reads: isl.UnionMap) -> isl.UnionMap:
    """Pairs ``(a, b)`` of instances of one group's statements that access one element, one of them
    writing it, with ``a`` before ``b`` in the declared order: the dependences (flow, anti and output)
    any schedule must keep."""
    pairs = isl.UnionMap.empty(model.context.get_space())
    for base in model.stages:
        group = [base] + [sm for sm in model.stages if sm.update_of is base]
        if len(group) == 1:
            continue
        stmts = [sm.main for sm in group]
        for i, a in enumerate(stmts):
            wa, ra = _of(writes, a), _of(reads, a)
            for b in stmts[i:]:
                wb, rb = _of(writes, b), _of(reads, b)
                touch = wa.apply_range(wb.reverse()).union(wa.apply_range(rb.reverse())).union(
                    ra.apply_range(wb.reverse()))
                if a is b:      # within one statement: its loops in declared order (lexicographic)
                    space = a.domain.get_space()
                    touch = touch.intersect(isl.UnionMap(isl.Map.lex_lt(space)))
                pairs = pairs.union(touch)
    return pairs


def _of(accesses: isl.UnionMap, stmt: Statement) -> isl.UnionMap:
    """The part of ``accesses`` made by ``stmt``."""
    return accesses.intersect_domain(isl.UnionSet(stmt.domain))


def group_statements(model: PolyModel) -> set[str]:
    """The names of the statements of every tensor with update definitions."""
    bases = {id(sm.update_of) for sm in model.stages if sm.update_of is not None}
    return {sm.main.name for sm in model.stages if sm.update_of is not None or id(sm) in bases}
