"""Neighbours of a plan for the search: random mutations of one decision, and tile-size steps.

Mutations change one stage's decision at a time within the same vocabulary ``auto_schedule`` uses:
tile and band sizes (doubled, halved, set to a divisor or to the whole axis), the number of parallel
loops, the outer loop order, the level of a stage computed at a tile and the level its buffer is stored
at (a sliding window, or none), placement (inline / at a tile / stored whole), register-tile unrolling,
packing, rfactor lanes. :func:`sliding_neighbours` turns a host's row bands into sliding windows. Every function is deterministic for a
given ``random.Random``. Legality is not checked here (the search checks every candidate).
"""
from __future__ import annotations

import random

from tesched.autoschedule.plan import Plan, StagePlan
from tesched.schedule.schedule import Schedule


def _extents(sch: Schedule, index: int) -> list[int]:
    return [int(d) for d in sch.stages[index].op.output(0).shape]


def _step(value: int, extent: int, rng: random.Random) -> int:
    choices = {max(1, value // 2), min(extent, value * 2), extent, 1}
    divisors = [d for d in range(2, min(extent, 64) + 1) if extent % d == 0]
    if divisors:
        choices.add(rng.choice(divisors))
    choices.discard(value)
    return rng.choice(sorted(choices)) if choices else value


def tile_neighbours(sch: Schedule, plan: Plan) -> list[Plan]:
    """Every plan one tile step (x2, /2) away from ``plan`` on one axis of one host: coordinate descent."""
    out = []
    for p in plan.stages:
        if p.placement != "root" or not p.tile:
            continue
        extents = _extents(sch, p.index)
        for axis, value in enumerate(p.tile):
            for new in (value * 2, value // 2):
                if 1 <= new <= extents[axis] and new != value:
                    tile = list(p.tile)
                    tile[axis] = new
                    out.append(plan.replace_stage(p.with_(f"tuned: tile {axis} = {new}", tile=tuple(tile))))
    return out


def sliding_neighbours(sch: Schedule, plan: Plan) -> list[Plan]:
    """For each host with stages computed at its first outer loop (row bands) and no band yet: the same
    bands with a loop per row, those stages computed per row and stored per band (a sliding window)."""
    out = []
    for host in plan.stages:
        members = [p for p in plan.stages if p.placement == "at" and p.host == host.index and p.level == 0
                   and p.store_level is None and not p.rfactor and not p.cache_write]
        if host.placement != "root" or host.band or len(host.tile) < 2 or not members:
            continue
        extents = _extents(sch, host.index)
        rows = host.tile[-2]
        if not 1 < rows < extents[-2] or any(t != 1 for t in host.tile[:-2]):
            continue
        band = tuple(extents[:-2]) + (rows, extents[-1])
        tile = host.tile[:-2] + (1, host.tile[-1])
        new = plan.replace_stage(host.with_(f"tuned: bands of {rows} rows, one loop per row", band=band, tile=tile,
                                            parallel=min(host.parallel, 1)))
        for m in members:
            new = new.replace_stage(m.with_("tuned: a sliding window per band", level=len(host.tile) - 1,
                                            store_level=0))
        out.append(new)
    return out


def mutate(sch: Schedule, plan: Plan, rng: random.Random) -> Plan:
    """``plan`` with one decision of one stage changed at random."""
    stages = [p for p in plan.stages if p.placement != "keep"]
    if not stages:
        return plan
    p = rng.choice(stages)
    extents = _extents(sch, p.index)
    options = []
    if p.placement == "root":
        options += ["tile", "parallel", "order", "band"]
    if p.placement == "at":
        options += ["level", "store", "to_root"]
    if p.placement == "inline":
        options += ["to_root"]
    if p.reduce_outer:
        options += ["k_unroll", "pack"]
    if p.rfactor:
        options += ["rfactor"]
    if p.placement in ("root", "at") and not p.cache_write and not p.reduce_outer:
        options += ["vectorize"]
    if not options:
        return plan
    choice = rng.choice(options)
    new = _apply(sch, plan, p, choice, extents, rng)
    return plan.replace_stage(new.with_(f"tuned: {choice}"))


def _apply(sch: Schedule, plan: Plan, p: StagePlan, choice: str, extents: list[int], rng: random.Random) -> StagePlan:
    if choice == "tile":
        tile = list(p.tile) or list(extents)
        axis = rng.randrange(len(tile))
        tile[axis] = _step(tile[axis], extents[axis], rng)
        return p.with_(tile=tuple(tile))
    if choice == "band":
        band = list(p.band) or list(extents)
        axis = rng.randrange(len(band))
        band[axis] = _step(band[axis], extents[axis], rng)
        return p.with_(band=tuple(band))
    if choice == "parallel":
        return p.with_(parallel=rng.choice([k for k in range(0, 4) if k != p.parallel]))
    if choice == "order":
        order = list(p.outer_order) or list(range(len(extents)))
        i, j = rng.sample(range(len(order)), 2) if len(order) > 1 else (0, 0)
        order[i], order[j] = order[j], order[i]
        return p.with_(outer_order=tuple(order))
    if choice == "level":
        level = rng.choice([k for k in (-1, 0, 1, 2) if k != p.level])
        keep = p.store_level is not None and 0 <= level and p.store_level <= level
        return p.with_(level=level, store_level=p.store_level if keep else None)
    if choice == "store":
        top = p.level if p.level >= 0 else 2
        return p.with_(store_level=rng.choice([None] + [k for k in range(top) if k != p.store_level]))
    if choice == "to_root":
        return StagePlan(p.index, p.stage, "root", tile=tuple([1] * (len(extents) - 1) + [extents[-1]]), vectorize=True, parallel=1, reasons=p.reasons)
    if choice == "k_unroll":
        return p.with_(k_unroll=rng.choice([k for k in (1, 2, 3, 4, 8) if k != p.k_unroll]))
    if choice == "pack":
        if p.pack:
            return p.with_(pack=())
        inputs = [k for k, st in enumerate(sch.stages) if st.op.output(0) in sch.stages[p.index].op.input_tensors
                  and not hasattr(st.op, "body")]
        return p.with_(pack=(rng.choice(inputs),)) if inputs else p
    if choice == "rfactor":
        return p.with_(rfactor=rng.choice([k for k in (4, 8, 16, 32) if k != p.rfactor]))
    return p.with_(vectorize=not p.vectorize)
