"""Model phase 2: iteration domains and footprints.

A root stage's statements run over the tensor's box (and the reduce axes). A stage computed inside
another runs, per iteration of the loops around it, over its *footprint*: ``prefix -> reader instances ->
read elements``, computed with isl from the readers' loop maps and access relations (readers first), so
clipped borders and overlapping halos come out exact and overlapping tiles recompute their halo
(Halide's overlapped tiling); a read under an affine condition counts only where it holds; along a dimension read at a data-dependent index, the footprint is the
whole dimension. The footprint is widened to its per-iteration bounding box (Halide's choice:
the producer computes a rectangle). Buffers come next (:mod:`.buffers`).
"""
from __future__ import annotations

import islpy as isl

from tesched.errors import ScheduleError
from tesched.poly.bounds import guarded_reads, restrict_to_guard
from tesched.poly.model import PolyModel, StageModel, StatementKind


def build_domains(model: PolyModel) -> None:
    """Set every statement's domain and every computed-at stage's footprint."""
    for sm in reversed(model.stages):     # readers before producers
        _make_domains(model, sm)


def _make_domains(model: PolyModel, sm: StageModel) -> None:
    tdom = model.tensor_domain(sm.tensor, sm.tag)
    rdom = bounds = None
    if sm.raxes:
        # reduce bounds may depend on the stage's own axes (TVM's reduce_axis((0, i))): the update's
        # domain is the product with a free reduce box, cut by the bounds over all its coordinates
        conds = []
        for r in sm.raxes:
            lo = model.isl_of(r.range.min, sm.coord)
            ext = model.isl_of(r.range.extent, sm.coord)
            conds.append(f"{lo} <= {sm.coord[id(r)]} < ({lo}) + ({ext})")
        rc = ", ".join(sm.coord[id(r)] for r in sm.raxes)
        rdom = isl.Set(f"{model.param_prefix}{{ [{rc}] }}")
        bounds = " and ".join(conds)
    if sm.parent is None:
        spatial = tdom
    else:
        footprint = sm.footprint = _footprint(model, sm, tdom)
        spatial = footprint.wrap().flatten()
        assert sm.alloc is not None, f"{sm.name} is computed at a loop but has no alloc statement"
        sm.alloc.domain = _every_iteration(model, sm).set_tuple_name(sm.alloc.name)
    for stmt in sm.statements:
        if stmt.kind is StatementKind.UPDATE:
            assert rdom is not None, f"{sm.name} updates without reduce axes"
            dom = rdom if sm.target is not None else spatial.flat_product(rdom)   # a scatter: its points only
            cut = isl.Set(f"{model.param_prefix}{{ [{', '.join(stmt.coords)}] : {bounds} }}")
            dom = dom.intersect(cut.set_tuple_id(dom.get_tuple_id()) if dom.has_tuple_id() else cut)
        else:
            dom = spatial
        stmt.domain = dom.set_tuple_name(stmt.name)


def _every_iteration(model: PolyModel, sm: StageModel) -> isl.Set:
    """Every iteration of the loops around a computed-at stage (where its parent runs), not only those
    whose footprint is non-empty. Its ``alloc`` statement runs at each of them, so isl's AST generator
    cannot peel the producer's iterations out of the loop it is computed at (the buffer's scope would be
    split from the consumer's, see :func:`.astgen._rejoin_nested`)."""
    parent = sm.parent
    assert parent is not None
    return model.loop_map(parent.main, sm.prefix_len).range()


def _footprint(model: PolyModel, sm: StageModel, tdom: isl.Set) -> isl.Map:
    parent, level = sm.parent, sm.level
    assert parent is not None and level is not None
    depth = sm.prefix_len
    readers = model.readers(sm)
    outside = [r for r in readers if not r.inside(parent, level)]
    if outside:
        raise ScheduleError(_attach_message(sm, outside, readers))
    fp = None
    for reader in readers:
        stmt = reader.main
        lmap = model.loop_map(stmt, depth).reverse()
        for read, guard in guarded_reads(reader):
            if read.tensor is not sm.tensor:
                continue
            # a data-dependent (non-affine) index may read anywhere along its dimension: the whole
            # dimension is the footprint there (the range is cut to the tensor's box below); a read under
            # an affine condition (if_then_else(t >= 1, P[t - 1], ...)) needs only where it holds
            acc, _ = restrict_to_guard(model, reader, model.access_map(stmt, sm.tag, read.indices, loose=True), guard)
            part = lmap.apply_range(acc)
            fp = part if fp is None else fp.union(part)
    assert fp is not None
    return _box(model, fp.intersect_range(tdom).coalesce(), tdom)


def _box(model: PolyModel, fp: isl.Map, tdom: isl.Set) -> isl.Map:
    """The per-iteration bounding box of a footprint (Halide's choice): the producer computes a
    rectangle, so its loops stay simple and contiguous; its extent is the buffer's shape anyway."""
    n = fp.dim(isl.dim_type.out)
    coords = ", ".join(f"x{k}" for k in range(n))
    box = isl.Map.universe(isl.Space.map_from_domain_and_range(fp.domain().get_space(), tdom.get_space()))
    for d in range(n):
        for bound, op in ((fp.dim_min(d), ">="), (fp.dim_max(d), "<=")):
            rel = isl.Map(f"{model.param_prefix}{{ [v] -> {tdom.get_tuple_name()}[{coords}] : x{d} {op} v }}")
            part = isl.Map.from_pw_aff(bound).apply_range(rel)
            box = box.intersect(part)
    box = box.intersect_domain(fp.domain()).intersect_range(tdom).coalesce()
    return fp if box.is_equal(fp) else box   # an exact footprint reads better than its rebuilt box


def _attach_message(sm: StageModel, outside: list[StageModel], readers: list[StageModel]) -> str:
    parent, level = sm.parent, sm.level
    assert parent is not None and level is not None
    loop = parent.leaves[level].name
    legal = [parent.leaves[t].name for t in range(len(parent.leaves))
             if all(r.inside(parent, t) for r in readers)]
    where = (f"legal loops of {parent.name}: {', '.join(legal)}" if legal else
             f"no loop of {parent.name} is legal, since {', '.join(r.name for r in outside)} also reads it "
             "outside that stage; compute it at the root or at a loop enclosing every reader")
    return (f"compute_at of {sm.name} at {parent.name}.{loop}: {', '.join(r.name for r in outside)} "
            f"read(s) {sm.name} outside that loop, so those reads would see an incomplete buffer; {where}")

