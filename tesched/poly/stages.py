"""Model phase 1: a :class:`~.model.StageModel` per computed stage, its attachment and its statements.

Each stage's loops (after split and fuse) become isl expressions over its coordinates; a stage computed
at a loop of another is linked to it (its *prefix* is the loops around it); then each stage gets its
statements (``compute``, or ``init`` and ``update`` for a reduction, plus ``alloc`` for a ``compute_at``
buffer). Domains come next (:mod:`.domains`).
"""
from __future__ import annotations

from tesched.errors import ScheduleError
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.schedule.stage import Fuse, Singleton, Split, Stage
from tesched.te.expr import Reduce
from tesched.te.tensor import ComputeOp, IterType, IterVar


def declare_stages(model: PolyModel) -> None:
    """Add a stage model (with its statements) for every stage that is neither an input nor inlined."""
    for st in model.schedule.stages:
        if isinstance(st.op, ComputeOp) and st.attach_type is not AttachType.INLINE:
            sm = _stage_model(model, st, len(model.stages))
            model.stages.append(sm)
            model.by_op[id(st.op)] = sm
    for sm in model.stages:
        _resolve_attach(model, sm)
    for sm in model.stages:
        _make_statements(sm)
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
    for a in axes + raxes:
        leaf_expr[id(a)] = coord[id(a)]
        leaf_min[id(a)] = model.isl_of(a.range.min, {})
    for rel in st.relations:
        if isinstance(rel, Split):
            base = f"({leaf_expr[id(rel.parent)]} - ({leaf_min[id(rel.parent)]}))"
            factor = st.split_factor(rel)
            leaf_expr[id(rel.outer)] = f"floor({base}/{factor})"
            leaf_expr[id(rel.inner)] = f"({base} mod {factor})"
            leaf_min[id(rel.outer)] = leaf_min[id(rel.inner)] = "0"
        elif isinstance(rel, Fuse):
            iext = extent[id(rel.inner)]
            if iext is None:
                raise ScheduleError(f"fuse of {st.name}.{rel.outer.name} and {rel.inner.name}: the inner "
                                    "loop's extent must be a constant")
            leaf_expr[id(rel.fused)] = (f"(({leaf_expr[id(rel.outer)]} - ({leaf_min[id(rel.outer)]}))"
                                        f" * {iext} + ({leaf_expr[id(rel.inner)]} - "
                                        f"({leaf_min[id(rel.inner)]})))")
            leaf_min[id(rel.fused)] = "0"
        elif isinstance(rel, Singleton):    # fuse() of no axes: one iteration
            leaf_expr[id(rel.iter_var)] = leaf_min[id(rel.iter_var)] = "0"
    body = model.bodies[id(op)]
    return StageModel(st, op, body, f"T{index}", axes, raxes, coord, leaf_expr, extent)


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
    if st.attach_type is not AttachType.SCOPE:
        return
    host, ivar = st.attach_stage, st.attach_ivar
    assert host is not None and ivar is not None, f"{sm.name} is attached without a stage and loop"
    parent = model.by_op.get(id(host.op))
    if parent is None:
        raise ScheduleError(f"compute_at of {sm.name}: {host.name} was inlined, so it has no "
                            "loops to compute inside; compute it at a stage that has loops")
    sm.parent = parent
    sm.level = parent.stage.leaf_position(ivar)


def _make_statements(sm: StageModel) -> None:
    prefix_len = sum(lv + 1 for _, lv in sm.chain())
    sm.prefix_len = prefix_len
    pcoords = [f"p{k}" for k in range(prefix_len)]
    scoords = [sm.coord[id(a)] for a in sm.axes]
    rcoords = [sm.coord[id(r)] for r in sm.raxes]
    own = [sm.leaf_expr[id(v)] for v in sm.leaves]
    base = f"S{sm.tag[1:]}"
    if isinstance(sm.body, Reduce):
        spatial = [v for v in sm.leaves if v.iter_type != IterType.COMM_REDUCE]
        sm.statements = [
            Statement(f"{base}_init", StatementKind.INIT, sm, pcoords + scoords,
                      pcoords + [sm.leaf_expr[id(v)] for v in spatial], spatial),
            Statement(f"{base}_update", StatementKind.UPDATE, sm, pcoords + scoords + rcoords, pcoords + own,
                      list(sm.leaves)),
        ]
    else:
        sm.statements = [Statement(base, StatementKind.COMPUTE, sm, pcoords + scoords, pcoords + own, list(sm.leaves))]
    if sm.parent is not None:
        sm.alloc = Statement(f"{base}_alloc", StatementKind.ALLOC, sm, pcoords, list(pcoords), [])


