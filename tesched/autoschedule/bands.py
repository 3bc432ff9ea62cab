"""The loops of a host without a register tile, and where the stages computed in it go.

A host whose members (stages computed at its tiles) are stencils or maps gets, as candidates, bands of
``R`` rows of its full width (members at a band: the halo of each band recomputed), and sliding windows:
bands of ``B`` rows (and strips of ``C`` columns) whose rows are loops of their own, members computed per
row and stored per band or strip (``store_at``), so each row computes only the new rows of its members
in a buffer folded to the stencil's window. Each candidate gets its parallel loops and the placement of
its members of least modelled cost (:func:`best_placement`, by the rules of :mod:`.cost`); the candidate
of least cost wins. :func:`best_placement` also places the members of register-tiled hosts. Nothing is
built or timed here.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.autoschedule import cost
from tesched.autoschedule.machine import Machine
from tesched.autoschedule.pipeline import StageInfo
from tesched.autoschedule.plan import StagePlan
from tesched.autoschedule.state import DecideState
from tesched.poly.analysis import Region

ROW_BANDS = (1, 2, 4, 8, 16, 32, 64)
SLIDING_BANDS = (16, 32, 64, 128)
SLIDING_STRIPS = (256,)
SLIDING_MAX_MEMBERS = 3
"""Sliding windows are considered for hosts with at most this many members, all pointwise: the dependence
check of a window costs isl set differences per member (``auto_schedule`` must decide within a second),
and a reduction computed in a window would lose the loops of its own (rfactor, register tiles)."""


@dataclass(frozen=True)
class Placement:
    """Where the members of a host go: computed at outer loop ``level``, stored at ``store`` (None: where
    computed), with the modelled ``seconds`` and, per member, its box per iteration and redundancy."""

    seconds: float
    level: int
    store: int | None
    regions: dict[str, Region]
    redundancy: dict[str, float]


def _loops(plan: StagePlan, extents: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Axes with a band loop, axes with an outer tile loop (in order), and each axis's extent in a band."""
    band = list(plan.band) or list(extents)
    tile = list(plan.tile) or list(extents)
    bands = [a for a, (b, e) in enumerate(zip(band, extents)) if 1 < b < e]
    inside = [band[a] if a in bands else e for a, e in enumerate(extents)]
    outer = [a for a, (t, e) in enumerate(zip(tile, inside)) if not (t >= e and e > 1)]
    order = list(plan.outer_order) or list(range(len(extents)))
    outer.sort(key=lambda a: order.index(a) if a in order else len(order) + a)
    return bands, outer, inside


def level_tiles(plan: StagePlan, extents: list[int]) -> list[list[int]]:
    """The region one iteration of each outer loop covers (band loops first), as a tile."""
    bands, outer, inside = _loops(plan, extents)
    tile = list(plan.tile) or list(extents)
    out = []
    for level in range(len(bands) + len(outer)):
        cover = list(extents)
        for a in bands[:level + 1]:
            cover[a] = inside[a]
        if level >= len(bands):
            cover = list(inside)
            for a in outer[:level - len(bands) + 1]:
                cover[a] = max(1, min(tile[a], inside[a]))
        out.append(cover)
    return out


def level_trips(plan: StagePlan, extents: list[int]) -> list[int]:
    """Iterations of each outer loop (band loops first)."""
    bands, outer, inside = _loops(plan, extents)
    tile = list(plan.tile) or list(extents)
    return ([-(-extents[a] // inside[a]) for a in bands] +
            [-(-inside[a] // max(1, min(tile[a], inside[a]))) for a in outer])


def parallel_count(outer_trips: list[int], work: float, machine: Machine) -> int:
    """How many outer loops to fuse into the parallel loop (0: stay serial)."""
    if not cost.worth_parallel(work) or machine.threads < 2:
        return 0
    product = 1
    for n, trips in enumerate(outer_trips):
        product *= trips
        if product >= cost.PARALLEL_ITERATIONS_PER_THREAD * machine.threads:
            return n + 1
    return len(outer_trips) if product >= machine.threads else 0


def _product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def best_placement(state: DecideState, host: StageInfo, plan: StagePlan, extents: list[int],
                   members: list[int]) -> Placement | None:
    """The level (and storage level) of least modelled cost for ``members`` of ``host`` under ``plan``
    (its tiles, bands and parallel loops); None when the host has no outer loop."""
    tiles = level_tiles(plan, extents)
    trips = level_trips(plan, extents)
    if not tiles or not members:
        return None
    anchor = state.anchor.get(host.index)
    infos = [state.pipe[m] for m in sorted(members, reverse=True)]
    ops = ([state.pipe[anchor].op] if anchor is not None else []) + [i.op for i in infos]
    first = max(plan.parallel - 1, 0)
    sliding = len(infos) <= SLIDING_MAX_MEMBERS and all(i.kind == "pointwise" for i in infos)
    regions = {level: state.regions(host.op, tiles[level], ops) for level in range(first, len(tiles))}
    best: Placement | None = None
    for level in range(first, len(tiles)):
        slides = list(range(first, level)) if sliding else []
        for store in [None] + slides:
            seconds, footprint, nbytes, redundancy = 0.0, 0, 0.0, {}
            for info in infos:
                box = regions[level][info.name]
                computed = regions[store if store is not None else level][info.name]
                extents_ = box.extents if store is None else cost.folded_extents(box.extents, computed.extents)
                redundancy[info.name] = computed.redundancy
                seconds += cost.compute_seconds(info.work * computed.redundancy, state.machine,
                                                plan.vectorize, plan.parallel > 0)
                seconds += cost.compute_seconds(cost.ITERATION_OPS * _product(trips[:level + 1]),
                                                state.machine, False, plan.parallel > 0)
                footprint += _product(list(extents_)) * info.itemsize
                nbytes += info.points * computed.redundancy * info.itemsize
            seconds += cost.buffer_seconds(nbytes, footprint, state.machine)
            if best is None or seconds < best.seconds:
                best = Placement(seconds, level, store, regions[level], redundancy)
    return best


def place_members(state: DecideState, host: StageInfo, plan: StagePlan, placement: Placement | None,
                  members: list[int]) -> set[int]:
    """Record ``placement`` in the plans of ``members``; returns those whose recompute is too much (to be
    stored whole instead), readers first: a member read by another one returned is not."""
    if placement is None:
        return set(members)
    demoted = set()
    for m in members:
        info = state.pipe[m]
        region = placement.regions[info.name]
        redundancy = placement.redundancy[info.name]
        if redundancy > cost.MAX_REDUNDANCY:
            demoted.add(m)
            continue
        vector, reduce_outer = (state.machine.vectorizes(region.extents[-1], info.itemsize), False) \
            if info.kind == "pointwise" else _reduction_lanes(state, info, region.extents[-1])
        where = f"at outer loop {placement.level} of {host.name}"
        if placement.store is not None:
            where += (f", stored at outer loop {placement.store} (a sliding window: each iteration computes "
                      f"only the part earlier ones did not)")
        state.plans[m] = state.plans[m].with_(
            f"{where}: a {'x'.join(map(str, region.extents))} region per iteration, {redundancy:.3f}x its "
            f"points computed (exact count, halos included)",
            level=placement.level, store_level=placement.store, vectorize=vector, reduce_outer=reduce_outer)
        if reduce_outer:
            state.plans[m] = state.plans[m].with_(
                f"its reduce loops outside its innermost axis, which is vectorized (each lane accumulates its "
                f"own element in place; the innermost reduction is too short or strided to vectorize)")
    return {m for m in demoted if not _reads_into(state, m, demoted - {m})}


def _reads_into(state: DecideState, stage: int, others: set[int]) -> bool:
    """Whether one of ``others`` reads ``stage`` (directly or through stages between): then only the
    reader is stored whole first, and ``stage`` is placed again against it."""
    seen, todo = set(), list(state.pipe[stage].readers)
    while todo:
        k = todo.pop()
        if k in others:
            return True
        if k not in seen:
            seen.add(k)
            todo += state.pipe[k].readers
    return False


def _contiguous_along(state: DecideState, info: StageInfo, loop: int) -> bool:
    """Whether every read of ``info`` moves by 0 or 1 element per step of its loop ``loop`` (axes, then
    reduce axes)."""
    return all(r.strides[loop] in (0, 1) for r in state.reads(info.op))


def _reduction_lanes(state: DecideState, info: StageInfo, row: int) -> tuple[bool, bool]:
    """``(vectorize, reduce_outer)`` of a reduction computed at a tile, whose innermost axis spans ``row``
    elements there: its innermost reduce loop vectorized (one partial result per lane) when it is a full
    vector long and its reads are contiguous along it; else, as Halide's schedules do, its reduce loops
    moved outside its innermost axis, which is vectorized when long enough and read contiguously."""
    machine = state.machine
    last_reduce = len(info.op.axis) + len(info.op.reduce_axis) - 1
    inner = info.op.reduce_axis[-1].constant_extent or 0
    if inner >= machine.lanes(info.itemsize) and _contiguous_along(state, info, last_reduce):
        return True, False
    if machine.vectorizes(row, info.itemsize) and _contiguous_along(state, info, len(info.op.axis) - 1):
        return True, True
    return _contiguous_along(state, info, last_reduce), False


def banded(state: DecideState, host: StageInfo, plan: StagePlan, extents: list[int]
           ) -> tuple[StagePlan, Placement | None]:
    """The loops of ``host`` (no register tile): rows, bands or sliding windows, parallel loops, and the
    placement of its members."""
    machine = state.machine
    ndim = len(extents)
    members = state.members.get(host.index, [])
    if ndim == 0:
        return plan.with_("a single value: no loops to arrange"), None
    vectorize = machine.vectorizes(extents[-1], host.itemsize)
    how = "vectorized" if vectorize else "serial"
    if ndim == 1:
        chunk = min(extents[0], 1024 if extents[0] >= 1 << 16 else extents[0])
        plan = plan.with_(f"one loop, {how}", tile=(chunk,), vectorize=vectorize)
        return with_parallel(state, host, plan, extents, members)
    base = [1] * (ndim - 1) + [extents[-1]]
    if not members:
        plan = plan.with_(f"rows of {extents[-1]}, {how if vectorize else 'too short to vectorize'}",
                          tile=tuple(base), vectorize=vectorize)
        return with_parallel(state, host, plan, extents, members)
    candidates: list[tuple[StagePlan, str]] = []
    for rows in ROW_BANDS:
        if rows > extents[-2]:
            continue
        tile = list(base)
        tile[-2] = rows
        candidates.append((plan.with_(tile=tuple(tile), vectorize=vectorize),
                           f"bands of {rows} rows of {extents[-1]}"))
    slides = len(members) <= SLIDING_MAX_MEMBERS and all(state.pipe[m].kind == "pointwise" for m in members)
    for rows in SLIDING_BANDS if slides else ():
        for strip in (extents[-1],) + SLIDING_STRIPS:
            if rows >= extents[-2] or strip > extents[-1] or (strip < extents[-1] and strip * 2 > extents[-1]):
                continue
            band = list(extents)
            band[-2], band[-1] = rows, strip
            tile = list(base)
            tile[-1] = strip
            text = f"bands of {rows} rows" + (f" in strips of {strip} columns" if strip < extents[-1] else
                                               f" of {extents[-1]}")
            candidates.append((plan.with_(tile=tuple(tile), band=tuple(band), vectorize=vectorize), text))
    best: tuple[float, StagePlan, Placement, str] | None = None
    for candidate, text in candidates:
        candidate, placement = with_parallel(state, host, candidate, extents, members)
        if placement is None:
            continue            # no outer loop to compute the members in
        rows = host.points // max(candidate.tile[-1], 1) * (1 + len(members))
        seconds = cost.compute_seconds(host.work, machine, vectorize, candidate.parallel > 0)
        seconds += cost.compute_seconds(cost.ROW_OPS * rows, machine, False, candidate.parallel > 0)
        seconds += placement.seconds
        if best is None or seconds < best[0]:
            best = (seconds, candidate, placement, text)
    if best is None:
        return with_parallel(state, host, plan.with_(f"rows of {extents[-1]}, {how}", tile=tuple(base),
                                                     vectorize=vectorize), extents, members)
    _, chosen, placement, text = best
    if placement.store is not None:
        text += ", a loop per row"
    return chosen.with_(f"{text} (least modelled cost for the stages computed in them), {how}"), placement


def with_parallel(state: DecideState, host: StageInfo, plan: StagePlan, extents: list[int],
                   members: list[int]) -> tuple[StagePlan, Placement | None]:
    """``plan`` with its parallel loops, and the best placement of ``members`` under it."""
    work = host.work + sum(state.pipe[m].work for m in members)
    anchor = state.anchor.get(host.index)
    work += state.pipe[anchor].work if anchor is not None else 0
    trips = level_trips(plan, extents)
    par = parallel_count(trips, work, state.machine)
    if par:
        plan = plan.with_(parallel=par)
    return plan, best_placement(state, host, plan, extents, members)
