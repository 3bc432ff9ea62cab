"""Model phase 1: a :class:`~.model.StageModel` per computed stage, its attachment and its statements.

Each stage's loops (after split and fuse) become isl expressions over its coordinates; a stage computed
at a loop of another is linked to it (its *prefix* is the loops around it), and to the loop its buffer
lives in (``store_at``: its *storage prefix*, the first loops of the prefix); then each stage gets its
statements (``compute``, or ``init`` and ``update`` for a reduction, plus ``alloc`` for a ``compute_at``
buffer; a scatter's ``init`` runs over its tensor and its ``update`` over its reduce axes only). Domains
come next (:mod:`.domains`).
"""
from __future__ import annotations

import re

from tesched.errors import ScheduleError
from tesched.poly.compute_with import resolve_compute_with
from tesched.poly.fused import fused_groups
from tesched.poly.model import LoopSpace, PolyModel, StageModel, Statement, StatementKind
from tesched.poly.updates import link_updates, placed_by, update_statement
from tesched.ir.kinds import LoopKind
from tesched.schedule.kinds import AttachType
from tesched.schedule.stage import Fuse, Singleton, Split, Stage
from tesched.te.reduction import Reduce
from tesched.te.scan import ScanOp
from tesched.te.scatter import Scatter, ScatterOp
from tesched.te.tensor import ComputeOp, IterType, IterVar
from tesched.te.update import Definition, UpdateOp


def declare_stages(model: PolyModel) -> None:
    """Add a stage model (with its statements) for every stage that is neither an input nor inlined."""
    for st in model.schedule.stages:
        if st.store_type is not None and st.attach_type is not AttachType.SCOPE:
            raise ScheduleError(f"{_store_call(st)} of {st.name}: {st.name} is {_placement(st)}, so its storage "
                                "follows it; store_at and store_root need compute_at at a loop inside the "
                                "storage level")
        if isinstance(st.op, ComputeOp) and st.attach_type is not AttachType.INLINE:
            sm = _stage_model(model, st, len(model.stages))
            model.stages.append(sm)
            model.by_op[id(st.op)] = sm
    link_updates(model)
    for sm in model.stages:
        _resolve_attach(model, sm)
    for sm in model.stages:
        _resolve_store(model, sm)
    resolve_compute_with(model)
    for sm in model.stages:
        if isinstance(sm.op, ScanOp):
            _check_scan_group(model, sm)
    for sm in model.stages:
        _make_statements(sm, model.param_prefix)
    model.index_statements()


def _stage_model(model: PolyModel, st: Stage, index: int) -> StageModel:
    op = st.op
    assert isinstance(op, ComputeOp)
    axes, raxes = list(op.axis), list(op.reduce_axis)
    coord = {id(a): f"s{k}" for k, a in enumerate(axes)}
    coord.update({id(r): f"r{k}" for k, r in enumerate(raxes)})
    leaf_expr: dict[int, str] = {}
    leaf_min: dict[int, str] = {}
    extent = st.extents()
    extent.update({id(a): a.range.extent if isinstance(a.range.extent, int) else None for a in axes})
    for a in axes + raxes:
        leaf_expr[id(a)] = coord[id(a)]
        leaf_min[id(a)] = model.isl_of(a.range.min, coord)   # a reduce bound may use the axes
    # fuses over a symbolic extent (and splits of them) are kept out of the model: their loops stand for them
    leaves, groups, kept_out = fused_groups(st, extent)
    for rel in st.relations:
        if isinstance(rel, Split) and id(rel.parent) in kept_out:
            continue
        if isinstance(rel, Split):
            base = f"({leaf_expr[id(rel.parent)]} - ({leaf_min[id(rel.parent)]}))"
            factor = st.split_factor(rel)
            leaf_expr[id(rel.outer)] = f"floor({base}/{factor})"
            leaf_expr[id(rel.inner)] = f"({base} mod {factor})"
            leaf_min[id(rel.outer)] = leaf_min[id(rel.inner)] = "0"
        elif isinstance(rel, Fuse) and id(rel.fused) not in kept_out:
            iext = extent[id(rel.inner)]
            leaf_expr[id(rel.fused)] = (f"(({leaf_expr[id(rel.outer)]} - ({leaf_min[id(rel.outer)]}))"
                                        f" * {iext} + ({leaf_expr[id(rel.inner)]} - "
                                        f"({leaf_min[id(rel.inner)]})))")
            leaf_min[id(rel.fused)] = "0"
        elif isinstance(rel, Singleton):    # fuse() of no axes: one iteration
            leaf_expr[id(rel.iter_var)] = leaf_min[id(rel.iter_var)] = "0"
    body = model.bodies[id(op)]
    sm = StageModel(st, op, body, f"T{index}", axes, raxes, coord, leaf_expr, extent)
    if isinstance(op, ScatterOp):
        assert isinstance(body, Scatter)
        sm.target = op.target(body)
    if isinstance(op, UpdateOp):
        assert isinstance(body, Definition)
        sm.target = op.target(body)
    if groups:
        sm.model_leaves, sm.groups = leaves, groups
    sm.loop_name = {id(v): f"l{k}" for k, v in enumerate(leaves)}
    sm.axis_value, sm.loop_conds = _inverse(st, leaves, kept_out, set(coord), sm.loop_name, leaf_min, extent)
    _in_loop_values(sm.axis_value, {name: id(a) for a in axes + raxes if (name := coord[id(a)])})
    return sm


def _in_loop_values(value: dict[int, str], coords: dict[str, int]) -> None:
    """Rewrite, in place, axis values whose lower bound names another axis' coordinate (a reduce axis
    over ``(i, n)`` starts at ``i``) with that axis' value in loop terms, so they are functions of the
    loop values only."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, coords)) + r")\b") if coords else None
    for _ in range(len(coords)):        # an axis' bound names an axis declared before it: a short chain
        changed = False
        for key, text in value.items():
            new = pattern.sub(lambda m: f"({value[coords[m.group(1)]]})", text) if pattern else text
            if new != text:
                value[key], changed = new, True
        if not changed:
            return


def _inverse(st: Stage, leaves: list[IterVar], kept_out: set[int], axes: set[int], loop_name: dict[int, str],
             leaf_min: dict[int, str], extent: dict[int, int | None]) -> tuple[dict[int, str], list[tuple[bool, str]]]:
    """Each axis as an isl expression of the loop values (``outer * factor + inner`` for a split,
    ``fused // inner_extent`` and ``fused % inner_extent`` for a fuse, as TVM recovers them), and the
    constraints under which loop values are the image of exactly one point (a split's inner value below
    its factor, every intermediate value non-negative). Over these, the map from the axes to the loops
    is a bijection, so a domain over the loops is the preimage of the domain over the axes: a
    substitution, where the image would make isl invert nested floors."""
    value = dict(loop_name)
    reduce = {id(v): v.iter_type == IterType.COMM_REDUCE for v in st.all_iter_vars}
    # a loop made by split or fuse counts from 0 (an axis loop runs over the axis' own range, which the
    # domain bounds); its upper bound is implied by the others, but isl does not always derive it
    made = [v for v in leaves if id(v) not in axes]
    conds = [(reduce[id(v)], f"{loop_name[id(v)]} >= 0") for v in made]
    conds += [(reduce[id(v)], f"{loop_name[id(v)]} < {extent[id(v)]}") for v in made
              if extent.get(id(v)) is not None]
    for rel in reversed(st.relations):
        if isinstance(rel, (Split, Fuse)) and id(rel.parent if isinstance(rel, Split) else rel.fused) in kept_out:
            continue    # (a fuse kept out of the model: its loops are loops of the model, see .fused)
        if isinstance(rel, Split):
            factor = st.split_factor(rel)
            inner = value[id(rel.inner)]
            conds.append((reduce[id(rel.inner)], f"{inner} < {factor}"))
            value[id(rel.parent)] = f"(({value[id(rel.outer)]}) * {factor} + {inner} + ({leaf_min[id(rel.parent)]}))"
        elif isinstance(rel, Fuse):     # (a Singleton defines no axis; its loop is bounded to 0 above)
            iext = extent[id(rel.inner)]
            fused = value[id(rel.fused)]
            conds.append((reduce[id(rel.fused)], f"{fused} >= 0"))
            value[id(rel.outer)] = f"(floor(({fused})/{iext}) + ({leaf_min[id(rel.outer)]}))"
            value[id(rel.inner)] = f"((({fused}) mod {iext}) + ({leaf_min[id(rel.inner)]}))"
    return value, conds


def _resolve_attach(model: PolyModel, sm: StageModel) -> None:
    st = sm.stage
    marked: list[tuple[IterVar, str]] = list(st.iter_var_attrs.items())
    marked += [(v, "with pragma " + ", ".join(hints)) for v, hints in st.pragmas.items()]
    for v, kind in marked:
        if v not in st.leaf_iter_vars:
            raise ScheduleError(f"stage {sm.name}: loop {v.name} is marked {kind} but was later split or "
                                f"fused; mark one of its current loops "
                                f"({', '.join(x.name for x in st.leaf_iter_vars)})")
        hints = [h for h in st.pragmas.get(v, {}) if h != "unroll_explicit"]
        if kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED) and hints:
            raise ScheduleError(f"pragma {hints[0]!r} on stage {sm.name}, loop {v.name}: the loop is {kind}, "
                                "and gcc takes no loop hint on an OpenMP loop; drop one of the two")
        if kind is LoopKind.UNROLLED and sm.leaf_extent[id(v)] is None:
            raise ScheduleError(f"unroll of {sm.name}.{v.name}: its extent is not a constant; split it "
                                "with a constant factor and unroll the inner loop")
    st = placed_by(sm)      # an update definition is placed with its pure definition
    if st.attach_type is not AttachType.SCOPE:
        return
    if sm.scatters:
        raise ScheduleError(f"compute_at of {sm.name}: a scatter writes anywhere in its tensor, so it is "
                            "computed at the root; compute its readers at it instead")
    host, ivar = st.attach_stage, st.attach_ivar
    assert host is not None and ivar is not None, f"{sm.name} is attached without a stage and loop"
    parent = model.by_op.get(id(host.op))
    if parent is None:
        raise ScheduleError(f"compute_at of {sm.name}: {host.name} was inlined, so it has no "
                            "loops to compute inside; compute it at a stage that has loops")
    sm.parent = parent
    sm.level = parent.level_of(ivar)


def _check_scan_group(model: PolyModel, scan: StageModel) -> None:
    """The stages between a scan's state and the scan run inside its time loop (a stage at the root would
    read steps the scan has not computed yet)."""
    for sm in model.stages:
        if sm is not scan and not sm.inside(scan, 0) and model.reads_of(sm, scan.tensor) \
                and model.schedule.reads_transitively(scan.op, sm.op):
            loop = scan.op.axis[0].name
            raise ScheduleError(f"stage {sm.name} reads the state of scan {scan.name}, so it runs inside the "
                                f"scan's time loop: compute it at {scan.name}.{loop} (where it starts) or "
                                f"deeper, or inline it, not outside that loop")


def _store_call(st: Stage) -> str:
    return "store_root" if st.store_type is AttachType.ROOT else "store_at"


def _placement(st: Stage) -> str:
    return "inlined" if st.attach_type is AttachType.INLINE else "computed at the root"


def _resolve_store(model: PolyModel, sm: StageModel) -> None:
    """Where ``sm``'s buffer lives: the ``compute_at`` loop by default, else the ``store_at`` loop (which
    must enclose it) or the root; the loops between the two must run in order (a sliding window)."""
    st = placed_by(sm)
    if sm.parent is None:
        return
    if st.store_type is None:
        sm.store_parent, sm.store_level, sm.store_len = sm.parent, sm.level, sum(lv + 1 for _, lv in sm.chain())
        return
    if st.store_type is AttachType.SCOPE:
        assert st.store_stage is not None and st.store_ivar is not None
        host = model.by_op.get(id(st.store_stage.op))
        level = None if host is None else host.level_of(st.store_ivar)
        if host is None or level is None or not sm.inside(host, level):
            legal = [f"{s.name}.{v.name}" for s, lv in sm.chain() for v in s.leaves[:lv + 1]]
            assert st.attach_stage is not None and st.attach_ivar is not None
            raise ScheduleError(f"store_at of {sm.name} at {st.store_stage.name}.{st.store_ivar.name}: "
                                f"{sm.name} is computed at {st.attach_stage.name}.{st.attach_ivar.name}, which "
                                "that loop does not enclose; storage must be at or outside the compute_at "
                                f"loop: {', '.join(legal)} (or store_root)")
        sm.store_parent, sm.store_level = host, level
    loops = [(s, t) for s, lv in sm.chain() for t in range(lv + 1)]     # the prefix, outermost first
    host = sm.store_parent
    sm.store_len = 0 if host is None else next(k for k, (s, t) in enumerate(loops)
                                               if s is host and t == sm.store_level) + 1
    where = "the root" if host is None else f"{host.name}.{host.user_loop(host.leaves[sm.store_level or 0]).name}"
    inner, level = loops[-1]
    for s, t in loops[sm.store_len:]:
        kind = s.loop_kind(s.leaves[t])
        if kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED):
            raise ScheduleError(
                f"{_store_call(st)} of {sm.name}: loop {s.loop_label(s.leaves[t])} of stage {s.name} is {kind}, but "
                f"it runs between the storage of {sm.name} (at {where}) and its computation (at "
                f"{inner.name}.{inner.user_loop(inner.leaves[level]).name}); its iterations reuse values earlier "
                "ones computed (a sliding window), so it must run in order: make it serial, or store "
                f"{sm.name} at {s.name}.{s.user_loop(s.leaves[t]).name} or inside it")


def _make_statements(sm: StageModel, params: str) -> None:
    prefix_len = sum(lv + 1 for _, lv in sm.chain())
    sm.prefix_len = prefix_len
    pcoords = [f"p{k}" for k in range(prefix_len)]
    scoords = [sm.coord[id(a)] for a in sm.axes]
    rcoords = [sm.coord[id(r)] for r in sm.raxes]
    own = [sm.leaf_expr[id(v)] for v in sm.leaves]
    base = f"S{sm.tag[1:]}"
    if sm.update_of is not None:
        sm.statements = [update_statement(sm, pcoords, params)]
        return
    if sm.target is not None:   # a scatter: the identity over the tensor, then the updates over its points
        space = LoopSpace(pcoords + [sm.loop_name[id(v)] for v in sm.leaves],
                          pcoords + [sm.axis_value[id(r)] for r in sm.raxes], [c for _, c in sm.loop_conds], params)
        sm.statements = [
            Statement(f"{base}_init", StatementKind.INIT, sm, pcoords + scoords, pcoords + scoords, list(sm.axes)),
            Statement(f"{base}_update", StatementKind.UPDATE, sm, pcoords + rcoords, pcoords + own, list(sm.leaves),
                      space=space),
        ]
        return
    values = [sm.axis_value[id(a)] for a in sm.axes + sm.raxes]

    def in_loops(loop_vars: list[IterVar], with_reduce: bool) -> LoopSpace | None:
        """The statement over its loop values; ``None`` (over its coordinates) for the ``init`` of a
        reduction whose loops fuse data-parallel with reduction values (its own loops do not give its
        coordinates: it runs before that loop)."""
        if not with_reduce and any(sm.stage.mixes_reduction(v) for v in sm.leaves):
            return None
        return LoopSpace(pcoords + [sm.loop_name[id(v)] for v in loop_vars],
                         pcoords + values[:len(sm.axes) + (len(sm.raxes) if with_reduce else 0)],
                         [c for red, c in sm.loop_conds if with_reduce or not red], params)

    if isinstance(sm.body, Reduce):
        spatial = [v for v in sm.leaves if v.iter_type != IterType.COMM_REDUCE]
        sm.statements = [
            Statement(f"{base}_init", StatementKind.INIT, sm, pcoords + scoords,
                      pcoords + [sm.leaf_expr[id(v)] for v in spatial], spatial, space=in_loops(spatial, False)),
            Statement(f"{base}_update", StatementKind.UPDATE, sm, pcoords + scoords + rcoords, pcoords + own,
                      list(sm.leaves), space=in_loops(sm.leaves, True)),
        ]
    else:
        sm.statements = [Statement(base, StatementKind.COMPUTE, sm, pcoords + scoords, pcoords + own,
                                   list(sm.leaves), space=in_loops(sm.leaves, False))]
    if sm.parent is not None:
        stored = pcoords[:sm.store_len]      # the buffer's origin depends on the storage level's loops
        sm.alloc = Statement(f"{base}_alloc", StatementKind.ALLOC, sm, stored, list(stored), [])


