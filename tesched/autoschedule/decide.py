"""The analytical scheduler: a :class:`~.plan.Plan` for a pipeline from the cost model alone.

Consumers first (Mullapudi-style grouping), every stage is inlined, computed at a tile of the one host all
its readers run in, or stored whole (a *host* of its own), by the rules of :mod:`.cost`. Each host then
gets its loops: a register tile when a reduction anchors it (the host's own reduction through a write
cache, or the reduction its elementwise epilogue reads; tile loops that no input depends on innermost),
otherwise row bands or sliding windows sized by the exact footprints of the stages computed in them
(:mod:`.bands`); the parallel and vectorized loops; and the level at which its members are computed (and
stored), the one of least modelled cost. A member whose halo recompute exceeds
:data:`~.cost.MAX_REDUNDANCY` is stored whole instead, and the grouping is redone. Every decision carries
its reason. This module does not build or time anything.
"""
from __future__ import annotations

from tesched.arith.linear import coefficient
from tesched.autoschedule import cost
from tesched.autoschedule.bands import banded, level_tiles, level_trips, place_members, with_parallel
from tesched.autoschedule.machine import Machine
from tesched.autoschedule.pipeline import Pipeline, StageInfo
from tesched.autoschedule.plan import Plan, StagePlan
from tesched.autoschedule.scan_steps import step_plan
from tesched.autoschedule.state import DecideState, DecisionMemo
from tesched.poly.analysis import NotModelable, Region, tile_regions
from tesched.poly.isl_lock import ISL_LOCK
from tesched.te.tensor import ComputeOp, PlaceholderOp, TensorRead
from tesched.te.expr import BinOp, Binary, Const
from tesched.te.reduction import Reduce
from tesched.te.visit import walk

PACK_MIN_REUSE = 4
"""A panel is packed only when at least this many inner tiles read the copy."""


def decide(pipe: Pipeline, machine: Machine) -> Plan:
    """The plan of least modelled cost for ``pipe`` on ``machine``."""
    with ISL_LOCK:      # its footprints are isl sets of the process's one context
        return _decide(pipe, machine)


def _decide(pipe: Pipeline, machine: Machine) -> Plan:
    forced: set[int] = set()
    why: dict[int, str] = {}
    memo = DecisionMemo()
    while True:
        state = DecideState(pipe, machine, set(forced), forced_why=dict(why), memo=memo)
        _place(state)
        demoted = _tile_hosts(state)
        if not demoted:
            return Plan(tuple(state.plans[k] for k in sorted(state.plans)))
        forced |= demoted
        why.update(state.forced_why)


def _materialized_readers(state: DecideState, index: int) -> list[int]:
    out: list[int] = []
    for r in state.pipe[index].readers:
        plan = state.plans.get(r)
        if plan is not None and plan.placement == "inline":
            out += [m for m in _materialized_readers(state, r) if m not in out]
        elif r not in out:
            out.append(r)
    return out


def _reads_of(state: DecideState, reader: StageInfo, producer: StageInfo) -> list[TensorRead]:
    return [r for r in state.accesses(reader.op) if r.tensor.op is producer.op]


def _resamples(state: DecideState, reader: StageInfo, producer: StageInfo) -> int:
    """1 if ``reader`` reads ``producer`` at a scaled or divided index (a pyramid level), else 0."""
    for r in _reads_of(state, reader, producer):
        for index in r.indices:
            for node in walk(index):
                if isinstance(node, Binary) and node.op in (BinOp.FLOORDIV, BinOp.FLOORMOD, BinOp.DIV):
                    return 1
                if isinstance(node, Binary) and node.op == BinOp.MUL and any(
                        isinstance(c, Const) and c.value not in (1, -1) for c in (node.a, node.b)):
                    return 1
    return 0


def _inline_factor(state: DecideState, info: StageInfo, readers: list[int]) -> float:
    total = 0
    for m in readers:
        reader = state.pipe[m]
        evaluations = reader.reduce_extent if reader.kind == "scatter" else reader.points * reader.reduce_extent
        total += evaluations * len(_reads_of(state, reader, info))
    return total / max(info.points, 1)


def _identity_read(state: DecideState, host: StageInfo, producer: StageInfo) -> bool:
    found = _reads_of(state, host, producer)
    return (len(found) == 1 and producer.op.output(0).shape == host.op.output(0).shape and
            all(i is a for i, a in zip(found[0].indices, host.op.axis)))


def _place(state: DecideState) -> None:
    pipe = state.pipe
    for info in reversed(pipe.stages):
        k = info.index
        if info.kind == "input":
            continue
        if info.kind == "opaque" and info.scan:
            state.plans[k] = step_plan(state, info)
            continue
        if info.kind == "opaque":
            state.plans[k] = StagePlan(k, info.name, "keep", reasons=(f"kept as scheduled: {info.why_opaque}",))
            continue
        if info.kind == "scatter":
            state.plans[k] = _scatter_plan(state, info)
            continue
        if info.is_output:
            state.plans[k] = StagePlan(k, info.name, "root", reasons=("an output: stored whole",))
            continue
        readers = _materialized_readers(state, k)
        if any(state.plans[r].placement == "keep" for r in readers):
            state.plans[k] = StagePlan(k, info.name, "root", reasons=(
                "read by a stage kept as scheduled: stored whole",))
            continue
        if any(pipe[r].kind == "scatter" for r in readers):
            state.plans[k] = StagePlan(k, info.name, "root", reasons=(
                "read by a scatter: stored whole, in vectorized loops of its own (a scatter's loops stay "
                "scalar, and it has no tile loop to compute it at)",))
            continue
        if info.kind == "pointwise":
            factor = _inline_factor(state, info, readers)
            guarded = info.guarded_load and (factor > 1.0 or any(pipe[r].kind == "reduction" for r in readers))
            if not guarded and cost.inline_wins(info, factor):
                state.plans[k] = StagePlan(k, info.name, "inline", reasons=(
                    f"inlined: evaluated {factor:.2f}x per point in its readers, {info.ops} operations each, "
                    f"cheaper than storing and loading it",))
                continue
            why = (f"not inlined: it guards a load with a select (padding), which would stop its "
                   f"{factor:.0f} reads from vectorizing" if guarded else
                   f"not inlined: its readers evaluate it {factor:.2f}x per point ({info.ops} operations each)")
        else:
            why = "a reduction: computed into a buffer"
        hosts = {k2 if state.plans[k2].placement == "root" else state.plans[k2].host for k2 in readers}
        only_host = next(iter(hosts))
        scalar_host = len(hosts) == 1 and only_host is not None and not pipe[only_host].op.axis
        if k in state.forced_root or len(hosts) != 1 or scalar_host:
            reason = (state.forced_why.get(k, "stored whole: computed at a tile its halo would recompute too much")
                      if k in state.forced_root
                      else "stored whole: its reader is a single value, with no loop to compute it in"
                      if scalar_host else f"stored whole: read in {len(hosts)} different loop nests")
            state.plans[k] = StagePlan(k, info.name, "root", reasons=(why, reason))
            continue
        host = hosts.pop()
        assert host is not None
        depth = max(state.resamplings.get(r, 0) + _resamples(state, pipe[r], info) for r in readers)
        if depth > cost.MAX_RESAMPLINGS:
            state.plans[k] = StagePlan(k, info.name, "root", reasons=(why, (
                f"stored whole: its box at a tile of {pipe[host].name} would follow {depth} resampling reads "
                f"(2*x, x // 2), more than {cost.MAX_RESAMPLINGS}: each one widens the halo and divides the "
                "bounds of the box once more")))
            continue
        state.resamplings[k] = depth
        if info.kind == "reduction" and host not in state.anchor and _identity_read(state, pipe[host], info):
            state.anchor[host] = k
            state.plans[k] = StagePlan(k, info.name, "at", host=host, reasons=(
                why, f"the anchor of {pipe[host].name}: computed per register tile of its elementwise reader"))
        else:
            state.members.setdefault(host, []).append(k)
            state.plans[k] = StagePlan(k, info.name, "at", host=host, reasons=(
                why, f"computed at a tile of {pipe[host].name}, the only loop nest that reads it"))


def _scatter_plan(state: DecideState, info: StageInfo) -> StagePlan:
    """A scatter's loops: serial when too small to share; else in parallel over a loop whose iterations
    write disjoint elements (an index of the target that is that loop's value, moved outermost: no
    atomics, no copies); else its outermost loop parallel, scattering into one private copy of the
    tensor per thread (summed after) when the copies cost little beside the points, or with atomic
    additions into the one tensor."""
    machine, op = state.machine, info.op
    plan = StagePlan(info.index, info.name, "root", reasons=(f"a scatter of {info.reduce_extent} points into "
                                                             f"{info.points} elements: stored whole",))
    if machine.threads < 2 or not cost.worth_parallel(info.reduce_extent * max(info.ops, 1)):
        return plan.with_("serial: too little work to share between threads")
    axes = list(op.reduce_axis)
    disjoint = [k for k in disjoint_axes(op) if (axes[k].constant_extent or 0) >= machine.threads]
    if disjoint:
        k = disjoint[0]
        return plan.with_(f"parallel over loop {axes[k].name} (moved outermost): its iterations write disjoint "
                          f"elements of {info.name}", scatter="disjoint",
                          outer_order=(k, *(j for j in range(len(axes)) if j != k)))
    if (axes[0].constant_extent or 1) < machine.threads:
        return plan.with_("serial: its first loop is too short to share between threads")
    copies = machine.threads
    if info.points * copies * cost.PRIVATE_COPY_COST <= info.reduce_extent:
        return plan.with_(
            f"privatised: {copies} copies of {info.name} ({info.points} elements each), one per part of loop "
            f"{axes[0].name} in parallel (an rfactor), then summed", scatter="private", copies=copies)
    combiner = op.body.combiner if isinstance(op.body, Reduce) else ""
    if combiner == "sum" and op.output(0).dtype in ("float32", "float64", "int32", "int64"):
        return plan.with_(f"atomic: loop {axes[0].name} parallel, its additions atomic (private "
                          f"copies of {info.points} elements would cost more than the points)", scatter="atomic")
    return plan.with_(f"serial: a {combiner} scatter cannot be atomic, and private copies of "
                      f"{info.points} elements would cost more than its points")


def disjoint_axes(op: ComputeOp) -> list[int]:
    """Positions of a scatter's loops whose distinct iterations write distinct elements: some index of
    its target is affine in that loop alone (no other loop, no read), with a non-zero coefficient."""
    axes = list(op.reduce_axis)
    found: list[int] = []
    for index in getattr(op.body, "index", ()):
        nodes = list(walk(index))
        if any(isinstance(n, TensorRead) for n in nodes):
            continue
        used = [k for k, a in enumerate(axes) if any(n is a for n in nodes)]
        if len(used) == 1 and used[0] not in found and coefficient(index, axes[used[0]]) not in (None, 0):
            found.append(used[0])
    return sorted(found)


def _tile_hosts(state: DecideState) -> set[int]:
    """Give every host its loops; returns the members to store whole instead (too much recompute)."""
    demoted: set[int] = set()
    for k, plan in list(state.plans.items()):
        if plan.placement != "root" or state.pipe[k].kind == "scatter":
            continue
        try:
            demoted |= _tile_host(state, state.pipe[k])
        except NotModelable as err:         # its members have no tile loop to be computed at: stored whole
            state.plans[k] = plan.with_(f"loops left as declared: {err}")
            demoted |= set(state.members.get(k, [])) | ({state.anchor[k]} if k in state.anchor else set())
    return demoted


def _tile_host(state: DecideState, host: StageInfo) -> set[int]:
    k = host.index
    extents = [int(d) for d in host.op.output(0).shape]
    anchor_index = state.anchor.get(k)
    anchor = state.pipe[anchor_index] if anchor_index is not None else (host if host.kind == "reduction" else None)
    plan = state.plans[k]
    members = state.members.get(k, [])
    if anchor is not None:
        plan, placement = with_parallel(state, host, _register_tiled(state, host, anchor, plan, extents),
                                        extents, members)
    else:
        plan, placement = banded(state, host, plan, extents)
    if plan.parallel:
        trips = level_trips(plan, extents)
        work = host.work + sum(state.pipe[m].work for m in members)
        work += anchor.work if anchor is not None and anchor is not host else 0
        plan = plan.with_(f"parallel over the {plan.parallel} outermost loop(s) ({_product(trips[:plan.parallel])} "
                          f"iterations for {state.machine.threads} threads, {work:.3g} operations)")
    state.plans[k] = plan
    if anchor is not None and anchor is not host and not level_tiles(plan, extents):
        state.forced_why[anchor.index] = (f"stored whole: {host.name} is one tile (tiles {list(plan.tile)}), "
                                          "with no tile loop to compute it at")
        return {anchor.index}
    return place_members(state, host, plan, placement, members)


def _product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _register_tiled(state: DecideState, host: StageInfo, anchor: StageInfo, plan: StagePlan,
                    extents: list[int]) -> StagePlan:
    machine = state.machine
    inlined = state.inlined_ops()
    anchor_reads = state.reads(anchor.op)
    ndim = len(extents)
    vector_axis = ndim - 1
    lanes = machine.lanes(anchor.itemsize)
    strided = [r for r in anchor_reads if ndim and r.strides[vector_axis] not in (0, 1)]
    last_reduce = len(anchor.op.axis) + len(anchor.op.reduce_axis) - 1
    reduce_extent = anchor.op.reduce_axis[-1].constant_extent or 1    # constant: else the stage is opaque
    rf_lanes = cost.rfactor_lanes(reduce_extent, lanes)
    if (not ndim or extents[vector_axis] < lanes or strided) and rf_lanes and all(
            r.strides[last_reduce] in (0, 1) for r in anchor_reads):
        rows = [a for a in range(ndim) if extents[a] > 1]
        tile = [1] * ndim
        if rows:
            tile[rows[-1]] = min(extents[rows[-1]], lanes)
        target = plan if anchor is host else state.plans[anchor.index]
        state.plans[anchor.index] = target.with_(
            f"rfactor: the reduction over {anchor.op.reduce_axis[-1].name} ({reduce_extent}) is contiguous in "
            f"its inputs but the output axis is {'short' if not strided else 'strided in ' + strided[0].tensor.name}"
            f": {rf_lanes} lanes of partial sums, vectorized", rfactor=rf_lanes,
            unroll_axis=rows[-1] if rows else None)
        new = state.plans[host.index] if anchor is host else plan
        new = new.with_(f"tiles of {tile}: one partial reduction per tile", tile=tuple(tile))
        invariant = [a for a in range(ndim) if extents[a] > 1 and tile[a] < extents[a]
                     and all(r.strides[a] == 0 for r in anchor_reads)]
        if invariant and len(invariant) < len([a for a in range(ndim) if tile[a] < extents[a]]):
            order = [a for a in range(ndim) if a not in invariant] + invariant
            new = new.with_(f"tile loops over {', '.join(host.op.axis[a].name for a in invariant)} innermost: no "
                            f"input of {anchor.name} depends on them, so each tile's inputs are read once from "
                            f"memory and reused from cache", outer_order=tuple(order))
        return new
    if not ndim or extents[vector_axis] < 2:
        return plan.with_("no axis long enough to vectorize: loops as declared", tile=tuple([1] * ndim))
    best: cost.RegisterTile | None = None
    u_axis: int | None = None
    candidates: list[int | None] = [a for a in range(ndim - 1) if extents[a] > 1] or [None]
    for candidate in candidates:
        tiles = cost.register_tiles(anchor_reads, extents, vector_axis, candidate, machine, anchor.itemsize)
        if tiles and (best is None or tiles[0].fmas_per_load > best.fmas_per_load):
            best, u_axis = tiles[0], candidate
    assert best is not None
    tile = [1] * ndim
    tile[vector_axis] = best.v
    if u_axis is not None:
        tile[u_axis] = best.u
    reg = register_footprint_text(anchor, tile, inlined)
    k_extent = reduce_extent
    k_unroll = cost.k_unroll(k_extent)
    anchor_plan = state.plans[anchor.index] if anchor is not host else plan
    whole = all(t >= e for t, e in zip(tile, extents))      # one tile: no tile loop for a write cache to sit at
    anchor_plan = anchor_plan.with_(
        f"register tile {best.u} x {best.v} ({best.accumulators} vector accumulators of {machine.registers}; "
        f"{best.fmas_per_load:.2f} FMAs per load; per reduction step it reads {reg}); reduce loops outside "
        f"the tile, the innermost unrolled by {k_unroll}" + ("; the tile is the whole output, which "
                                                             "accumulates in place" if whole else ""),
        reduce_outer=True, unroll_axis=u_axis, vectorize=True, k_unroll=k_unroll,
        cache_write=anchor is host and not whole)
    regions = state.regions(host.op, tile, [anchor.op] if anchor is not host else [])
    reused = {a: sum(r.volume for name, r in regions.items() if name != anchor.name and
                     all(x.strides[a] == 0 for x in anchor_reads if x.tensor.name == name))
              for a in range(ndim) if tile[a] < extents[a]}
    order = list(range(ndim))
    if reused:
        inner_axis = max(reused, key=lambda a: (reused[a], a))
        order.remove(inner_axis)
        order.append(inner_axis)
        anchor_plan = anchor_plan.with_(
            f"tile loop over axis {host.op.axis[inner_axis].name} innermost: {reused[inner_axis]} elements per tile "
            f"do not change along it and stay in cache")
        anchor_plan = _pack(state, anchor, anchor_plan, regions, anchor_reads, inner_axis, extents, tile)
    state.plans[anchor.index] = anchor_plan
    base = anchor_plan if anchor is host else plan
    return base.with_(f"tiles of {tile} along the register tile", tile=tuple(tile), outer_order=tuple(order),
                      vectorize=True, unroll_axis=u_axis)


def register_footprint_text(anchor: StageInfo, tile: list[int], inlined: list[ComputeOp]) -> str:
    regions = tile_regions(anchor.op, tile, (), inlined, [1] * len(anchor.op.reduce_axis))
    return ", ".join(f"{r.volume} of {name}" for name, r in regions.items())


def _pack(state: DecideState, anchor: StageInfo, plan: StagePlan, regions: dict[str, Region], anchor_reads: list,
          inner_axis: int, extents: list[int], tile: list[int]) -> StagePlan:
    reuse = -(-extents[inner_axis] // tile[inner_axis])
    outer = [a for a in range(len(extents)) if tile[a] < extents[a] or extents[a] == 1]
    if reuse < PACK_MIN_REUSE or len(outer) < 2:
        return plan
    packs = []
    for r in anchor_reads:
        region = regions.get(r.tensor.name)
        if (isinstance(r.tensor.op, PlaceholderOp) and region is not None and r.strides[inner_axis] == 0
                and region.extents[-1] < r.tensor.shape[-1] and _product(list(region.extents[:-1])) > 1):
            index = next(s.index for s in state.pipe.stages if s.stage.op is r.tensor.op)
            packs.append((index, region))
    if not packs:
        return plan
    names = ", ".join(f"{state.pipe[i].name} ({'x'.join(map(str, reg.extents))})" for i, reg in packs)
    return plan.with_(f"pack {names}: a strided panel read by {reuse} tiles in turn, copied contiguous once",
                      pack=tuple(i for i, _ in packs), pack_level=len(outer) - 2)


