"""Model phase 1: a :class:`~.model.StageModel` per computed stage, its attachment and its statements.

Each stage's loops (after split and fuse) become isl expressions over its coordinates; a stage computed
at a loop of another is linked to it (its *prefix* is the loops around it); then each stage gets its
statements (``compute``, or ``init`` and ``update`` for a reduction, plus ``alloc`` for a ``compute_at``
buffer; a scatter's ``init`` runs over its tensor and its ``update`` over its reduce axes only). Domains
come next (:mod:`.domains`).
"""
from __future__ import annotations

from tesched.errors import ScheduleError
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.schedule.stage import Fuse, Split, Stage
from tesched.te.expr import Reduce
from tesched.te.scan import ScanOp
from tesched.te.scatter import Scatter, ScatterOp
from tesched.te.tensor import ComputeOp, IterType


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
        if isinstance(sm.op, ScanOp):
            _check_scan_group(model, sm)
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
    extent.update({id(a): a.range.extent if isinstance(a.range.extent, int) else None for a in axes})
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
    body = model.bodies[id(op)]
    sm = StageModel(st, op, body, f"T{index}", axes, raxes, coord, leaf_expr, extent)
    if isinstance(op, ScatterOp):
        assert isinstance(body, Scatter)
        sm.target = op.target(body)
    return sm


def _resolve_attach(model: PolyModel, sm: StageModel) -> None:
    st = sm.stage
    for v, kind in st.iter_var_attrs.items():
        if v not in st.leaf_iter_vars:
            raise ScheduleError(f"stage {sm.name}: loop {v.name} is marked {kind} but was later split or "
                                f"fused; mark one of its current loops "
                                f"({', '.join(x.name for x in st.leaf_iter_vars)})")
        if kind is LoopKind.UNROLLED and sm.leaf_extent[id(v)] is None:
            raise ScheduleError(f"unroll of {sm.name}.{v.name}: its extent is not a constant; split it "
                                "with a constant factor and unroll the inner loop")
    if st.attach_type is not AttachType.SCOPE:
        return
    if sm.target is not None:
        raise ScheduleError(f"compute_at of {sm.name}: a scatter writes anywhere in its tensor, so it is "
                            "computed at the root; compute its readers at it instead")
    host, ivar = st.attach_stage, st.attach_ivar
    assert host is not None and ivar is not None, f"{sm.name} is attached without a stage and loop"
    parent = model.by_op.get(id(host.op))
    if parent is None:
        raise ScheduleError(f"compute_at of {sm.name}: {host.name} was inlined, so it has no "
                            "loops to compute inside; compute it at a stage that has loops")
    sm.parent = parent
    sm.level = parent.stage.leaf_position(ivar)


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


def _make_statements(sm: StageModel) -> None:
    prefix_len = sum(lv + 1 for _, lv in sm.chain())
    sm.prefix_len = prefix_len
    pcoords = [f"p{k}" for k in range(prefix_len)]
    scoords = [sm.coord[id(a)] for a in sm.axes]
    rcoords = [sm.coord[id(r)] for r in sm.raxes]
    own = [sm.leaf_expr[id(v)] for v in sm.leaves]
    base = f"S{sm.tag[1:]}"
    if sm.target is not None:   # a scatter: the identity over the tensor, then the updates over the reduce axes
        sm.statements = [
            Statement(f"{base}_init", StatementKind.INIT, sm, pcoords + scoords, pcoords + scoords, list(sm.axes)),
            Statement(f"{base}_update", StatementKind.UPDATE, sm, pcoords + rcoords, pcoords + own, list(sm.leaves)),
        ]
    elif isinstance(sm.body, Reduce):
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


