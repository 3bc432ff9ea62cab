"""``compute_with`` in the model: a root stage whose outer loops are another root stage's.

``s[g].compute_with(s[f], x)`` fuses ``g``'s loops ``0..L`` with ``f``'s (``L`` the level of ``f``'s loop
``x``): the schedule tree (:mod:`.tree`) gives both stages' statements one band per fused level (each
statement's own loop value there), and per iteration of the innermost fused loop runs ``f``'s inner loops,
then ``g``'s. Nothing else changes: domains, buffers and accesses stay each stage's own, so the
dependence check (:mod:`.deps`) judges the fusion like any other schedule (a read before its write, a
parallel fused loop that carries a dependence).

:func:`resolve_compute_with` links each such stage to its host (``fused_into``, ``fused_level``) after
checking what the fusion needs: both computed at the root, fused loops data-parallel on both sides and
marked only on the host, no stage computed at a fused loop of ``g``, no chain of fusions.
"""
from __future__ import annotations

from tesched.errors import ScheduleError
from tesched.ir.kinds import LoopKind
from tesched.poly.model import PolyModel, StageModel
from tesched.te.tensor import IterType


def resolve_compute_with(model: PolyModel) -> None:
    """Set ``fused_into`` and ``fused_level`` of every stage computed with another, or raise ScheduleError."""
    for sm in model.stages:
        st = sm.stage
        if st.with_stage is None or st.with_ivar is None:
            continue
        what = f"compute_with of {sm.name} at {st.with_stage.name}.{st.with_ivar.name}"
        host = model.by_op.get(id(st.with_stage.op))
        if host is None:
            raise ScheduleError(f"{what}: {st.with_stage.name} is inlined, so it has no loops to share")
        if sm.parent is not None or host.parent is not None:
            raise ScheduleError(f"{what}: both stages must be computed at the root (compute_with fuses root loop "
                                "nests); compute_at places one inside the other instead")
        if host.stage.with_stage is not None:
            raise ScheduleError(f"{what}: {host.name} is itself computed with {host.stage.with_stage.name}; "
                                f"compute {sm.name} with {host.stage.with_stage.name}")
        if sm.target is not None or any(u.update_of is sm for u in model.stages) or \
                host.target is not None or any(u.update_of is host for u in model.stages):
            raise ScheduleError(f"{what}: scatters and tensors with update definitions keep their own loops")
        level = host.level_of(st.with_ivar)
        if level >= len(sm.leaves):
            raise ScheduleError(f"{what}: {sm.name} has {len(sm.leaves)} loop(s), fewer than the {level + 1} it "
                                "would share; fuse at an outer loop")
        for t in range(level + 1):
            _check_level(sm, host, t, what)
        inside = [p.name for p in model.stages if p.parent is sm and (p.level or 0) <= level]
        if inside:
            raise ScheduleError(f"{what}: {', '.join(inside)} is computed at a loop {sm.name} shares with "
                                f"{host.name}; compute it at an inner loop, or at {host.name}")
        sm.fused_into, sm.fused_level = host, level


def _check_level(sm: StageModel, host: StageModel, t: int, what: str) -> None:
    """Fused loop ``t``: data-parallel on both sides, marked on the host only, and not a loop the host
    leaves out (one iteration) while ``sm`` runs several."""
    mine, theirs = sm.leaves[t], host.leaves[t]
    for owner, v in ((sm, mine), (host, theirs)):
        if v.iter_type == IterType.COMM_REDUCE:
            raise ScheduleError(f"{what}: loop {v.name} of {owner.name} is a reduction loop; the fused loops "
                                "must be data-parallel")
    if sm.loop_kind(mine) is not LoopKind.SERIAL:
        raise ScheduleError(f"{what}: loop {mine.name} of {sm.name} is {sm.loop_kind(mine)}, but it runs as "
                            f"{host.name}'s loop {theirs.name}; mark that one")
    if host.leaf_extent.get(id(theirs)) == 1 and sm.leaf_extent.get(id(mine)) != 1:
        raise ScheduleError(f"{what}: {host.name}'s loop {theirs.name} has one iteration, {sm.name}'s loop "
                            f"{mine.name} more; fuse at a loop both run")
