"""Model phase: the regions ``Stage.prefetch`` brings into cache, and the statements that do it.

``s[B].prefetch(T, var, offset)`` asks that each iteration of loop ``var`` of B prefetch what iteration
``var + offset`` will read of T. The region is exact: the loop values map (isl) to B's instances, those to
the elements of T they read; shifting the loop value by ``offset`` gives, per iteration, the elements read
``offset`` iterations later, and its per-dimension minimum and maximum (functions of the loop values)
bound the box prefetched. The box's domain is the set of iterations whose later iteration exists, so
nothing is prefetched past the loop's end. Each prefetch becomes a statement over the iterations of the
loops up to ``var``, placed first in the body of ``var`` (:mod:`.tree`); its body (:mod:`.emit`) loops over
the box, one ``__builtin_prefetch`` per cache line.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from tesched.errors import ScheduleError
from tesched.poly.affine import NotAffine
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.te.tensor import PlaceholderOp, Tensor

CACHE_LINE_BYTES = 64


@dataclass(eq=False)
class PrefetchPlan:
    """One prefetch: its statement, the loop level it runs at, the tensor, and per dimension the box's
    bounds and the iterations where it is defined, as functions of the loop values."""

    statement: Statement
    level: int
    tensor: Tensor
    low: list[isl.PwAff]
    high: list[isl.PwAff]
    where: isl.Set          # loop values whose iteration ``offset`` later exists
    every: isl.Set          # all loop values of the loops up to ``level``


def plan_prefetches(model: PolyModel) -> None:
    """Make the prefetch statements of every stage (raises ScheduleError for a prefetch it cannot do)."""
    for sm in model.stages:
        sm.prefetches = [_plan(model, sm, k, *spec) for k, spec in enumerate(sm.stage.prefetches)]
    model.index_statements()


def _plan(model: PolyModel, sm: StageModel, number: int, tensor: Tensor, var, offset: int) -> PrefetchPlan:
    where = f"prefetch of {tensor.name} at {sm.name}.{var.name}"
    if var not in sm.stage.leaf_iter_vars:
        raise ScheduleError(f"{where}: {var.name} was split or fused after prefetch; prefetch at one of its "
                            f"current loops ({', '.join(v.name for v in sm.stage.leaf_iter_vars)})")
    level = sm.level_of(var)    # (a fuse over a symbolic extent: its innermost loop, see .fused)
    if sm.tensorized is not None and level >= sm.tensorized.position:
        raise ScheduleError(f"{where}: the loop is inside the loops replaced by the intrinsic")
    target = model.schedule.canonical(tensor)
    producer = model.by_op.get(id(target.op))
    if not isinstance(target.op, PlaceholderOp) and (producer is None or producer.parent is not None):
        raise ScheduleError(f"{where}: {tensor.name} is not stored whole (it is computed at a loop or "
                            "inlined); prefetch an input or a stage computed at the root")
    reads = model.reads_of(sm, target)
    if not reads:
        raise ScheduleError(f"{where}: {sm.name} does not read {tensor.name}")
    depth = sm.prefix_len + level + 1
    stmt = sm.main
    loops = model.loop_map(stmt, depth)
    region = None
    for indices in reads:
        try:
            access = model.access_map(stmt, "P", indices)
        except NotAffine as err:
            raise ScheduleError(f"{where}: {sm.name} reads it at non-affine indices ({err})") from None
        part = loops.reverse().apply_range(access)
        region = part if region is None else region.union(part)
    assert region is not None
    coords = [f"l{k}" for k in range(depth)]
    shifted = coords[:-1] + [f"{coords[-1]} + {offset}"]
    shift = isl.Map(f"{model.param_prefix}{{ [{', '.join(coords)}] -> [{', '.join(shifted)}] }}")
    # without the equalities and redundant constraints of the loops around it, isl's minimum of a region
    # deep in a nest took over 500,000 operations (a second); with them removed, under 50,000
    ahead = shift.apply_range(region).detect_equalities().remove_redundancies().coalesce()
    every = loops.range()
    name = f"S{sm.tag[1:]}_prefetch{number}"
    statement = Statement(name, StatementKind.PREFETCH, sm, coords, list(coords), list(sm.leaves[:level + 1]))
    statement.domain = every.set_tuple_name(name)
    n = ahead.dim(isl.dim_type.out)
    return PrefetchPlan(statement, level, target, [ahead.dim_min(d) for d in range(n)],
                        [ahead.dim_max(d) for d in range(n)], ahead.domain(), every)
