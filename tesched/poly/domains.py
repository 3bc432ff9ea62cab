"""Model phase 2: iteration domains and footprints.

A root stage's statements run over the tensor's box (and the reduce axes). A stage computed inside
another runs, per iteration of the loops around it, over its *footprint*: ``prefix -> reader instances ->
read elements``, computed with isl from the readers' loop maps and access relations (readers first), so
clipped borders and overlapping halos come out exact and overlapping tiles recompute their halo
(Halide's overlapped tiling); a read under an affine condition counts only where it holds, and along a
dimension read at a data-dependent index the footprint is the whole dimension. The footprint is widened
to its per-iteration bounding box (Halide's choice: the producer computes a rectangle), or along an axis
with a ``bound``, to the bound.

A stage stored outside the loop it is computed at (``store_at``/``store_root``) shares its buffer between
the iterations of the loops in between, which run in order: each iteration computes only its box minus
what earlier iterations of the same buffer computed (isl set difference: a sliding window), and the
buffer covers the union of the boxes (:attr:`~.model.StageModel.storage`). A stage computed at the root
with a ``bound`` computes only the bounded part of its tensor (:attr:`~.model.StageModel.realized`), and
its readers must stay inside it (checked with the other reads, :mod:`.bounds`).
Buffers come next (:mod:`.buffers`).
"""
from __future__ import annotations

from typing import Callable, TypeVar

import islpy as isl

from tesched.errors import ScheduleError
from tesched.poly.guards import guarded_reads, restrict_to_guard
from tesched.poly.model import PolyModel, StageModel, StatementKind
from tesched.poly.updates import update_domain
from tesched.schedule.storage import AxisBound

T = TypeVar("T")


def build_domains(model: PolyModel) -> None:
    """Set every statement's domain and every computed-at stage's footprint."""
    for sm in reversed(model.stages):     # readers before producers
        _make_domains(model, sm)


def _make_domains(model: PolyModel, sm: StageModel) -> None:
    if sm.update_of is not None:     # an update definition, over its own axes (see .updates); computed at a
        if sm.parent is None:        # loop, its domain comes with its pure definition's footprint
            sm.main.domain = update_domain(model, sm)
        return
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
        spatial = tdom.intersect(_bounded(model, sm, tdom))
        if sm.stage.bounds:
            sm.realized = spatial
    else:
        updates = [u for u in model.stages if u.update_of is sm]
        footprint = sm.footprint = (_group_footprint(model, sm, updates, tdom) if updates
                                    else _footprint(model, sm, tdom))
        computed = footprint
        if sm.hoisted:
            sm.storage = bounding_box(model, footprint.project_out(isl.dim_type.in_, sm.store_len,
                                                           sm.prefix_len - sm.store_len), tdom)
            computed = _slide(footprint, sm.store_len)
        sm.computed = computed
        spatial = computed.wrap().flatten()
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
    """Every iteration of the loops around a computed-at stage's buffer (where its storage level runs),
    not only those whose footprint is non-empty. Its ``alloc`` statement runs at each of them, so isl's
    AST generator cannot peel the producer's iterations out of the loop it is stored at (the buffer's
    scope would be split from the consumer's, see :func:`.astgen._rejoin_nested`)."""
    host = sm.store_parent
    if host is None:
        return isl.Set(f"{model.param_prefix}{{ [] }}")
    return model.loop_map(host.main, sm.store_len).range()


def _slide(footprint: isl.Map, store_len: int) -> isl.Map:
    """The part of each iteration's region that no earlier iteration sharing its buffer (same values of
    the first ``store_len`` loops, earlier values of the others) has computed."""
    earlier = isl.Map.lex_gt(footprint.domain().get_space())
    for d in range(store_len):
        earlier = earlier.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
    done = earlier.intersect_domain(footprint.domain()).intersect_range(footprint.domain()).apply_range(footprint)
    return footprint.subtract(done).coalesce()


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
            if read.tensor.op is not sm.op:     # any output of a multi-output stage
                continue
            # a data-dependent (non-affine) index may read anywhere along its dimension: the whole
            # dimension is the footprint there (the range is cut to the tensor's box below); a read under
            # an affine condition (if_then_else(t >= 1, P[t - 1], ...)) needs only where it holds
            acc, _ = restrict_to_guard(model, reader, model.access_map(stmt, sm.tag, read.indices, loose=True), guard)
            part = lmap.apply_range(acc)
            fp = part if fp is None else fp.union(part)
    assert fp is not None
    fp = fp.intersect_range(tdom).coalesce()
    box = bounding_box(model, fp, tdom, {d: sm.stage.bounds.get(a) for d, a in enumerate(sm.axes)},
                       model.loop_map(parent.main, depth).range(),
                       {d: sm.stage.bound_alignments[a] for d, a in enumerate(sm.axes)
                        if a in sm.stage.bound_alignments})
    if sm.stage.bounds and not fp.is_subset(box):
        bound_exceeded(model, sm, fp.subtract(box))
    return box


def _group_footprint(model: PolyModel, sm: StageModel, updates: list[StageModel], tdom: isl.Set) -> isl.Map:
    """The region a tensor with updates computes per iteration of the loop it is computed at (Halide's):
    its updates run over the pure coordinates the readers of its latest version need, and its pure
    definition over the box of those elements and of every element the updates touch."""
    assert sm.parent is not None
    depth = sm.prefix_len
    last = updates[-1]
    required = _footprint(model, last, model.tensor_domain(last.tensor, last.tag)).set_tuple_name(
        isl.dim_type.out, sm.tag)
    fp = required
    for u in updates:
        u.main.domain = update_domain(model, u, required)
        u.footprint = u.computed = required
        lmap = model.loop_map(u.main, depth).reverse()
        for read, _ in guarded_reads(u):
            if read.tensor.op is sm.op or any(read.tensor.op is v.op for v in updates):
                fp = fp.union(lmap.apply_range(model.access_map(u.main, sm.tag, read.indices, loose=True)))
    return bounding_box(model, fp.intersect_range(tdom).coalesce(), tdom, None,
                        model.loop_map(sm.parent.main, depth).range())


def _pieces(rel: isl.Map) -> tuple[int, int]:
    """How complex ``rel`` is to work with: its basic maps, and the existential variables they carry."""
    parts = rel.get_basic_maps()
    return len(parts), sum(b.dim(isl.dim_type.div) for b in parts)


def bounding_box(model: PolyModel, fp: isl.Map, tdom: isl.Set, bounds: dict[int, AxisBound | None] | None = None,
                 iterations: isl.Set | None = None, alignments: dict[int, tuple[int, int]] | None = None) -> isl.Map:
    """The per-iteration bounding box of a footprint (Halide's choice): the producer computes a
    rectangle, so its loops stay simple and contiguous; its extent is the buffer's shape anyway. Along
    a dimension in ``bounds`` the box is the bound (from the footprint's minimum for ``bound_extent``).
    ``iterations``, every iteration of the loops, replaces the footprint's domain when it is the same set
    (the projection of the footprint carries existential variables that slow every later step: isl took
    seconds to decide which loops of a statement over such a domain have one value per iteration).
    Along a dimension in ``alignments`` (``align_bounds``: modulus ``m``, remainder ``r``) the box widens
    to the blocks ``[m*q + r, m*q + r + m)`` that hold it. A footprint that is its own box is returned as
    it is, unless it is written through existential variables (floors of resampled reads), which would slow
    every later step: then its box, in one convex piece where it is one."""
    domain = fp.domain()
    if iterations is not None and iterations.is_subset(domain):
        domain = iterations
    n = fp.dim(isl.dim_type.out)
    coords = ", ".join(f"x{k}" for k in range(n))
    box = isl.Map.universe(isl.Space.map_from_domain_and_range(fp.domain().get_space(), tdom.get_space()))
    for d in range(n):
        fixed = (bounds or {}).get(d)
        if fixed is not None and fixed.min is not None:
            box = box.intersect_range(isl.Set(f"{model.param_prefix}{{ {tdom.get_tuple_name()}[{coords}] : "
                                              f"{fixed.min} <= x{d} < {fixed.min + fixed.extent} }}"))
            continue
        if fixed is None:
            extremes = _extremes(fp, d)
            if extremes is None:
                continue        # the whole dimension (cut to the tensor's box below)
            sides = [(extremes[0], ">=", "v"), (extremes[1], "<=", "v")]
            if alignments and d in alignments:
                m, r = alignments[d]
                sides = [(extremes[0], ">=", f"{m} * floor((v - {r}) / {m}) + {r}"),
                         (extremes[1], "<=", f"{m} * floor((v - {r}) / {m}) + {r + m - 1}")]
        else:
            low = fp.dim_min(d)
            sides = [(low, ">=", "v"), (low, "<=", f"v + {fixed.extent - 1}")]
        for bound, op, value in sides:
            rel = isl.Map(f"{model.param_prefix}{{ [v] -> {tdom.get_tuple_name()}[{coords}] : x{d} {op} {value} }}")
            part = isl.Map.from_pw_aff(bound).apply_range(rel)
            box = box.intersect(part)
    # the bounds are defined on the footprint's domain and carry its existential variables, one copy per
    # bound; within that domain they are implied (gist), and ``domain`` is a part of it
    box = box.gist_domain(fp.domain()).intersect_domain(domain).intersect_range(tdom).coalesce()
    if not box.is_equal(fp):
        return box
    if not _pieces(fp)[1]:
        return fp               # an exact footprint without existential variables reads better than its box
    # the footprint is the box, but through floors (resampled reads): every later step (buffers, the
    # dependence check, isl's AST) works with the box instead, as one convex piece when it is one (the
    # simple hull keeps the box's own bounds; the convex hull, dearer, joins a box whose bounds are
    # constants per iteration, as over two tiles), each found within BOX_BUDGET operations (a convex hull
    # of a box through nested floors of split and fused loops took 8 s): the box as it is otherwise
    for hull in (box.simple_hull, box.convex_hull):
        whole = _within_budget(lambda: _hull_if_equal(box, hull), box.get_ctx())
        if whole is not None:
            return whole
    return box


def _hull_if_equal(box: isl.Map, hull: Callable[[], isl.BasicMap]) -> isl.Map | None:
    """``hull()`` of ``box`` as a map when it has fewer pieces than ``box`` and equals it, else None."""
    whole = isl.Map.from_basic_map(hull())
    return whole if _pieces(whole) < _pieces(box) and whole.is_equal(box) else None


# isl operations and pieces allowed for a footprint's exact per-iteration minimum and maximum along one
# dimension (deterministic, unlike a timeout). Fuzzed schedules have 2 to 9 pieces (minimum and maximum
# together), nearly all 2; a footprint through nested floors of split and fused loops with a symbolic
# extent took seconds and 24 pieces, on which isl's AST generator then stalled.
BOX_BUDGET = 200_000
BOX_PIECES = 16


def _extremes(fp: isl.Map, d: int) -> tuple[isl.PwAff, isl.PwAff] | None:
    """The per-iteration minimum and maximum of ``fp`` along dimension ``d``: exact when isl finds them
    within :data:`BOX_BUDGET` operations in at most :data:`BOX_PIECES` pieces (both together), otherwise
    those of ``fp`` without its existential variables (their rational elimination, a superset), and None
    (no bound: the whole dimension) when even those are too complex. A wider box is sound: the producer
    computes a few more points of its own tensor (the box is cut to the tensor's domain), and the readers
    still find every point they read."""
    for relaxed in (fp, fp.remove_divs()):
        found = _within_budget(lambda: (relaxed.dim_min(d), relaxed.dim_max(d)), fp.get_ctx())
        if found is not None and found[0].n_piece() + found[1].n_piece() <= BOX_PIECES:
            return found
    return None


def _within_budget(compute: Callable[[], T], ctx: isl.Context) -> T | None:
    """``compute()``, or None if isl needs more than :data:`BOX_BUDGET` operations for it."""
    previous = ctx.get_max_operations()
    ctx.set_max_operations(BOX_BUDGET)
    ctx.reset_operations()
    try:
        return compute()
    except isl.Error:
        return None
    finally:
        ctx.set_max_operations(previous)
        ctx.reset_operations()


def _bounded(model: PolyModel, sm: StageModel, tdom: isl.Set) -> isl.Set:
    """The part of a root stage's tensor its ``bound``s let it compute (the whole tensor without one)."""
    conds = []
    for d, axis in enumerate(sm.axes):
        fixed = sm.stage.bounds.get(axis)
        if fixed is not None:
            low = fixed.min if fixed.min is not None else model.isl_of(axis.dom.min if axis.dom else 0, {})
            conds.append(f"({low}) <= s{d} < ({low}) + {fixed.extent}")
    text = " and ".join(conds) or "true"
    coords = ", ".join(f"s{k}" for k in range(len(sm.axes)))
    region = isl.Set(f"{model.param_prefix}{{ {tdom.get_tuple_name()}[{coords}] : {text} }}")
    if sm.stage.is_output and not tdom.is_subset(region):
        bound_exceeded(model, sm, tdom.subtract(region), "the kernel's output")
    return region


def bound_exceeded(model: PolyModel, sm: StageModel, outside: isl.Set | isl.Map, who: str = "") -> None:
    """Raise the ScheduleError of a region of ``sm`` requested (by ``who``) beyond its bounds, naming one
    element of ``outside``."""
    point = (outside.range() if isinstance(outside, isl.Map) else outside).sample_point()
    element = [int(point.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in range(len(sm.axes))]
    bounds = "; ".join(f"{a.name}: {sm.stage.bounds[a].describe()}" for a in sm.axes if a in sm.stage.bounds)
    if not who:
        assert sm.parent is not None and sm.level is not None
        who = f"the loop {sm.parent.name}.{sm.parent.user_loop(sm.parent.leaves[sm.level]).name} it is computed at"
    raise ScheduleError(f"bound of {sm.name} ({bounds}): {who} requests {sm.name}"
                        f"[{', '.join(map(str, element))}], which is outside the bounded region")


def _attach_message(sm: StageModel, outside: list[StageModel], readers: list[StageModel]) -> str:
    parent, level = sm.parent, sm.level
    assert parent is not None and level is not None
    loop = parent.user_loop(parent.leaves[level]).name
    legal = list(dict.fromkeys(parent.user_loop(parent.leaves[t]).name for t in range(len(parent.leaves))
                               if all(r.inside(parent, t) for r in readers)))
    where = (f"legal loops of {parent.name}: {', '.join(legal)}" if legal else
             f"no loop of {parent.name} is legal, since {', '.join(r.name for r in outside)} also reads it "
             "outside that stage; compute it at the root or at a loop enclosing every reader")
    return (f"compute_at of {sm.name} at {parent.name}.{loop}: {', '.join(r.name for r in outside)} "
            f"read(s) {sm.name} outside that loop, so those reads would see an incomplete buffer; {where}")

