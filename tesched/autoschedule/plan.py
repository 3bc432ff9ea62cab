"""Schedules as data: one :class:`StagePlan` per stage of the pipeline, and how to apply them.

A :class:`Plan` is what ``auto_schedule`` decides and what ``tune`` mutates and stores. Each stage plan
names its stage by position (``create_schedule`` order, inputs included) and says:

- ``placement``: ``inline``, ``root`` (a *host*: stored whole, its own loop nest), ``at`` (computed per
  iteration of a tile loop of stage ``host``: ``compute_at``) or ``keep`` (the placement it has is kept:
  a stage the user scheduled, or a scan's step, computed at the time loop; the loop decisions below
  then arrange its own loops, ``parallel`` 1 making its axis 1, the first after the time step, parallel);
- for hosts, ``tile`` (extent per data-parallel axis: 1 keeps the axis an outer loop, the full extent
  keeps it inner, anything between splits it), giving loops ``outer axes..., inner axes...``, the outer
  ones in ``outer_order`` (data-axis positions; default: axis order); ``band`` (optional, extent per
  axis) first cuts the axes into bands whose loops go outermost (two-level tiling: bands for fusion and
  caches, tiles for registers); ``parallel``: how many outer loops are fused into one parallel loop;
  for ``at`` stages, ``level``: which outer loop of the host (bands first) they are computed in (-1: the
  innermost, where write caches and partial reductions always go) and ``store_level`` (None: the buffer
  lives in the loop it is computed in; else the outer loop of the host, at or outside ``level``, that
  holds it: ``store_at``, so the iterations of the loops in between share it as a sliding window, each
  computing only what the earlier ones have not, in a buffer folded to the window where isl proves it
  safe);
- for any computed stage, ``vectorize`` (innermost loop), ``unroll_axis`` (a data-parallel axis whose loop
  is unrolled), ``reduce_outer`` (reduce loops moved outside the unrolled/vectorized loops: a register
  tile), ``k_unroll`` (innermost reduce loop split and its inner part unrolled), ``rfactor`` (the
  innermost reduce axis split into that many lanes computed as a vectorized partial reduction) and
  ``cache_write`` (a reduction computed in a write cache at its own tile: the register tile of an output),
  ``pack`` (inputs, by stage position, copied per outer loop ``pack_level`` of the host into a contiguous
  local panel the stage reads instead: ``cache_read`` packing);
- for a scatter (``ts.scatter``, a root stage), ``scatter``: ``private`` (its outermost loop split into
  ``copies`` parts, each scattering into its own copy of the tensor, in parallel: an ``rfactor``; the
  copies are summed after), ``atomic`` (that loop parallel, the updates atomic additions) or ``disjoint``
  (its loops in ``outer_order``, the first parallel: its iterations write disjoint elements); empty: serial.

Every field is a JSON value, so a plan is stored and compared as text. ``reasons`` explain a decision and
are not part of the schedule (two plans with equal fields but different reasons are the same schedule).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Sequence

from tesched.schedule.schedule import Schedule, Stage
from tesched.te.scatter import ScatterOp
from tesched.te.tensor import IterVar

PLACEMENTS = ("inline", "root", "at", "keep")
SCATTERS = ("", "private", "atomic", "disjoint")
_TUPLES = ("tile", "band", "outer_order", "pack", "reasons")


@dataclass(frozen=True)
class StagePlan:
    """The decisions for one stage (see the module docstring)."""

    index: int
    stage: str
    placement: str = "root"
    host: int | None = None
    level: int = -1
    store_level: int | None = None
    tile: tuple[int, ...] = ()
    band: tuple[int, ...] = ()
    outer_order: tuple[int, ...] = ()
    parallel: int = 0
    vectorize: bool = False
    unroll_axis: int | None = None
    reduce_outer: bool = False
    k_unroll: int = 1
    rfactor: int = 0
    cache_write: bool = False
    pack: tuple[int, ...] = ()
    pack_level: int = 0
    scatter: str = ""
    copies: int = 0
    reasons: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"stage {self.stage}: placement {self.placement!r} is not one of {PLACEMENTS}")
        if self.placement == "at" and self.host is None:
            raise ValueError(f"stage {self.stage}: placement 'at' needs a host stage")
        if self.scatter not in SCATTERS or (self.scatter == "private" and self.copies < 2):
            raise ValueError(f"stage {self.stage}: scatter {self.scatter!r} with {self.copies} copies is not one of "
                             f"{SCATTERS} (private: at least 2 copies)")
        if self.store_level is not None and self.placement != "at":
            raise ValueError(f"stage {self.stage}: store_level {self.store_level} needs placement 'at' "
                             f"(it is {self.placement!r})")

    def with_(self, reason: str | None = None, **changes: Any) -> "StagePlan":
        """A copy with ``changes``; ``reason`` (if given) is appended to the reasons."""
        plan = replace(self, **changes)
        return replace(plan, reasons=plan.reasons + (reason,)) if reason else plan

    def decisions(self) -> dict[str, Any]:
        """The schedule fields only (no reasons)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("reasons", "stage")}


@dataclass(frozen=True)
class Plan:
    """A schedule as data: one :class:`StagePlan` per compute stage, in pipeline order."""

    stages: tuple[StagePlan, ...]

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-ready data (what tuning records store)."""
        return {"stages": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(p).items()}
                           for p in self.stages]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Plan":
        """The plan :meth:`to_json` wrote (a malformed record raises ``ValueError``)."""
        try:
            items = data["stages"]
            return cls(tuple(StagePlan(**{**d, **{k: tuple(d.get(k, ())) for k in _TUPLES}}) for d in items))
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a schedule plan: {err}") from None

    def key(self) -> str:
        """A canonical text of the decisions, equal for equal schedules."""
        return json.dumps([p.decisions() for p in self.stages], sort_keys=True)

    def by_index(self) -> dict[int, StagePlan]:
        """The stage plans keyed by stage index."""
        return {p.index: p for p in self.stages}

    def replace_stage(self, plan: StagePlan) -> "Plan":
        """A copy of this plan with the stage plan of ``plan.index`` replaced by ``plan``."""
        return Plan(tuple(plan if p.index == plan.index else p for p in self.stages))


@dataclass
class _HostLoops:
    """A host's loops: ``levels[k]`` is the loop that outer loop ``k`` became (after the parallel fuse)."""

    levels: list[IterVar]
    inner: list[IterVar]


def apply_plan(sch: Schedule, plan: Plan) -> Schedule:
    """Apply ``plan`` to ``sch`` (a fresh schedule of the same pipeline, or the one it was made for: stages
    with ``keep`` are not touched). Raises ``ScheduleError`` when a decision does not fit the stage."""
    stages = list(sch.stages)
    plans = plan.by_index()
    for p in plan.stages:
        if p.index >= len(stages) or stages[p.index].op.name != p.stage:
            raise ValueError(f"the plan does not match this pipeline: stage {p.index} is "
                             f"{stages[p.index].op.name if p.index < len(stages) else 'missing'}, "
                             f"the plan names {p.stage}")
    anchors: dict[int, Stage] = {}
    partials: dict[int, Stage] = {}
    for p in plan.stages:
        st = stages[p.index]
        if p.cache_write:
            anchors[p.index] = sch[sch.cache_write(st.op.output(0), "local")]
        elif p.rfactor:
            partials[p.index] = _rfactor(sch, st, p)
    packs: dict[int, list[Stage]] = {}
    for p in plan.stages:
        if p.pack:
            reader = anchors.get(p.index, stages[p.index])
            host = p.index if p.placement == "root" else p.host
            assert host is not None, "a stage computed at another names it"
            packs.setdefault(host, []).extend(
                sch[sch.cache_read(stages[k].op.output(0), "local", [reader])] for k in p.pack)
    for p in plan.stages:
        if p.placement == "inline":
            stages[p.index].compute_inline()
        if p.scatter:
            _scatter(sch, stages[p.index], p)
    loops: dict[int, _HostLoops] = {}
    for p in plan.stages:
        if p.placement == "root" and isinstance(stages[p.index].op, ScatterOp):
            loops[p.index] = _HostLoops([], [])     # its loops are its points: arranged by _scatter
        elif p.placement == "root":
            loops[p.index] = _arrange_host(stages[p.index], p)
            if p.index in anchors:
                _attach(anchors[p.index], stages[p.index], loops[p.index], p)
                _arrange_computed(anchors[p.index], p)
            if p.index in partials and loops[p.index].levels:
                _attach(partials[p.index], stages[p.index], loops[p.index], p)
    for host_index, copies in packs.items():
        for copy in copies:
            level = next(q.pack_level for q in plan.stages if q.pack and (q.index == host_index or q.host == host_index))
            _attach(copy, stages[host_index], loops[host_index], plans[host_index], level)
            copy.vectorize(copy.op.axis[-1])
    for p in plan.stages:
        if p.placement == "keep" and _arranged(p):        # a scan's step: its loops, at the time loop
            st = stages[p.index]
            _arrange_computed(st, p)
            if p.parallel:
                st.parallel(st.op.axis[1])
            if p.index in partials:
                partials[p.index].compute_at(st, st.op.axis[-1])
    for p in plan.stages:
        if p.placement == "at":
            host_plan = plans.get(p.host) if p.host is not None else None
            if p.host is None or host_plan is None or host_plan.placement != "root":
                raise ValueError(f"stage {p.stage} is computed at stage {p.host}, which is not a root stage")
            _attach(stages[p.index], stages[p.host], loops[p.host], host_plan, p.level)
            if p.store_level is not None:
                _store(stages[p.index], stages[p.host], loops[p.host], p)
            _arrange_computed(stages[p.index], p)
            if p.index in partials:
                _attach(partials[p.index], stages[p.host], loops[p.host], host_plan, p.level)
    return sch


def _arranged(p: StagePlan) -> bool:
    """Whether ``p`` chooses loops (a ``keep`` stage's are otherwise left as they are)."""
    return bool(p.vectorize or p.reduce_outer or p.rfactor or p.parallel or p.unroll_axis is not None)


def _rfactor(sch: Schedule, st: Stage, p: StagePlan) -> Stage:
    """Split the innermost reduce axis into ``p.rfactor`` lanes reduced in a partial stage (computed at
    each tile of ``st`` once ``st`` is arranged), its lanes vectorized and its ``unroll_axis`` unrolled."""
    last = st.op.reduce_axis[-1]
    _, lane = st.split(last, p.rfactor)
    outputs = sch.rfactor(st.op.output(0), lane, factor_axis=len(st.op.axis))
    partial = sch[outputs[0] if isinstance(outputs, list) else outputs]     # one stage for every component
    axes = list(partial.op.axis)
    partial.reorder(*axes[:-1], *partial.op.reduce_axis, axes[-1])
    partial.vectorize(axes[-1])
    if p.unroll_axis is not None and 0 <= p.unroll_axis < len(axes) - 1:
        partial.unroll(axes[p.unroll_axis])
    return partial


def _scatter(sch: Schedule, st: Stage, p: StagePlan) -> None:
    """A scatter's outermost loop in parallel: over ``p.copies`` private copies of its tensor (an rfactor
    of that loop's parts, the copies then summed), with atomic updates, or (``disjoint``) as it is, after
    its loops are put in ``p.outer_order``."""
    if p.placement != "root" or not st.op.reduce_axis:
        raise ValueError(f"stage {p.stage}: scatter {p.scatter!r} needs a root scatter stage")
    first = st.op.reduce_axis[0]
    if p.scatter == "disjoint":
        order = [st.op.reduce_axis[k] for k in p.outer_order]
        st.reorder(*order)
        st.parallel(order[0])
        return
    if p.scatter == "atomic":
        st.atomic().parallel(first)
        return
    part, _ = st.split(first, nparts=p.copies)
    out = sch.rfactor(st.op.output(0), part)
    partial = sch[out[0] if isinstance(out, list) else out]
    partial.parallel(partial.leaf_iter_vars[0])


def _constant_extent(axis: IterVar, p: StagePlan) -> int:
    extent = axis.constant_extent
    if extent is None:
        raise ValueError(f"stage {p.stage}: axis {axis.name} has extent {axis.range.extent}; a plan tiles "
                         "constant extents only")
    return extent


def _arrange_host(st: Stage, p: StagePlan) -> _HostLoops:
    axes = list(st.op.axis)
    extents = [_constant_extent(a, p) for a in axes]
    tile = list(p.tile) or extents
    band = list(p.band) or extents
    if len(tile) != len(axes) or len(band) != len(axes):
        raise ValueError(f"stage {p.stage}: tile {list(p.tile)} or band {list(p.band)} does not give one size "
                         f"per axis ({len(axes)} axes)")
    bands: list[IterVar] = []
    outer: list[tuple[int, IterVar]] = []
    inner: list[IterVar] = []
    for k, (a, b, t, extent) in enumerate(zip(axes, band, tile, extents)):
        rest = a
        if 1 < b < extent:
            band_loop, rest = st.split(a, b)
            bands.append(band_loop)
            extent = b
        if t >= extent and extent > 1:
            inner.append(rest)
        elif t <= 1:
            outer.append((k, rest))
        else:
            o, i = st.split(rest, t)
            outer.append((k, o))
            inner.append(i)
    order = list(p.outer_order) or list(range(len(axes)))
    outer.sort(key=lambda item: order.index(item[0]) if item[0] in order else len(order) + item[0])
    outer_loops = bands + [v for _, v in outer]
    reduce_loops = [v for v in st.leaf_iter_vars if v.iter_type.value == "comm_reduce"]
    st.reorder(*outer_loops, *inner, *reduce_loops)
    levels = list(outer_loops)
    if p.parallel and outer_loops:
        fused_count = min(p.parallel, len(outer_loops))
        par = st.fuse(*outer_loops[:fused_count]) if fused_count > 1 else outer_loops[0]
        st.parallel(par)
        levels = [par] * fused_count + levels[fused_count:]
    if inner and p.unroll_axis is not None and 0 <= p.unroll_axis < len(axes) and not (p.cache_write or p.rfactor):
        target = _inner_of(st, axes[p.unroll_axis], inner)
        if target is not None and target is not inner[-1]:
            st.unroll(target)
    if inner and p.vectorize and not reduce_loops:
        st.vectorize(inner[-1])
    elif p.vectorize and reduce_loops and not p.rfactor:
        st.vectorize(reduce_loops[-1])      # innermost reduction: one partial result per lane
    return _HostLoops(levels, inner)


def _inner_of(st: Stage, axis: IterVar, inner: Sequence[IterVar]) -> IterVar | None:
    derived = {id(v) for v in st.descendants(axis)}
    return next((v for v in inner if id(v) in derived), None)


def _attach(st: Stage, host: Stage, loops: _HostLoops, host_plan: StagePlan, level: int = -1) -> None:
    """Compute ``st`` at outer loop ``level`` of ``host`` (-1: the innermost, where anchors go)."""
    if not loops.levels:
        raise ValueError(f"stage {st.op.name} is computed at a tile of {host.op.name}, but {host.op.name} "
                         f"has no outer loop (tile {list(host_plan.tile)})")
    st.compute_at(host, loops.levels[_level_index(loops, level)])


def _level_index(loops: _HostLoops, level: int) -> int:
    return level if -len(loops.levels) <= level < len(loops.levels) else -1


def _store(st: Stage, host: Stage, loops: _HostLoops, p: StagePlan) -> None:
    """Allocate ``st``'s buffer at outer loop ``p.store_level`` of ``host`` (a sliding window down to the
    loop it is computed at); refused when that loop is inside the compute loop."""
    assert p.store_level is not None
    store, compute = _level_index(loops, p.store_level), _level_index(loops, p.level)
    if store % len(loops.levels) > compute % len(loops.levels):
        raise ValueError(f"stage {p.stage}: store_level {p.store_level} is inside the loop it is computed at "
                         f"(level {p.level})")
    st.store_at(host, loops.levels[store])


def _arrange_computed(st: Stage, p: StagePlan) -> None:
    """Loops of a stage computed at a tile (or an anchor): reduce loops outside when ``reduce_outer``, an
    unrolled axis, the innermost axis vectorized."""
    axes = list(st.op.axis)
    reduce_axes = list(st.op.reduce_axis)
    unrolled = axes[p.unroll_axis] if p.unroll_axis is not None and 0 <= p.unroll_axis < len(axes) - 1 else None
    if reduce_axes and p.reduce_outer and not p.rfactor:
        spatial = [a for a in axes[:-1] if a is not unrolled]
        k_loops = reduce_axes
        if p.k_unroll > 1:
            ko, ki = st.split(reduce_axes[-1], p.k_unroll)
            k_loops = reduce_axes[:-1] + [ko, ki]
            st.unroll(ki)
        st.reorder(*spatial, *k_loops, *([unrolled] if unrolled is not None else []), axes[-1])
        if unrolled is not None:
            st.unroll(unrolled)
    if p.vectorize and axes and (p.reduce_outer or not reduce_axes):
        st.vectorize(axes[-1])
    elif p.vectorize and reduce_axes and not p.rfactor:
        st.vectorize(reduce_axes[-1])       # innermost reduction: one partial result per lane
