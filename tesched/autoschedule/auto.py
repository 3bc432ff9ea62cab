"""``auto_schedule`` and ``explain_schedule``: an analytical schedule for any pipeline, and its reasons.

``auto_schedule(outputs)`` describes the pipeline (:mod:`.pipeline`), decides a :class:`~.plan.Plan` with
the cost model (:mod:`.decide`, :mod:`.cost`), applies it, and checks the result with the dependence
analysis (``Schedule.check``). Given an existing schedule instead of tensors, stages the user already
scheduled (tensorized, split, placed...) keep their schedule. If a decision fails the check, its stage
falls back to being stored whole and the failure is recorded, so every emitted schedule is legal. The
plan and its reasons stay attached to the schedule for ``explain_schedule`` and ``tune``. Nothing is
built or timed here.
"""
from __future__ import annotations

import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Sequence

from tesched.autoschedule.decide import decide
from tesched.autoschedule.gpu import gpu_auto_schedule, gpu_explanation, gpu_target
from tesched.autoschedule.machine import Machine, resolve
from tesched.autoschedule.pipeline import Pipeline
from tesched.autoschedule.plan import Plan, StagePlan, apply_plan
from tesched.errors import ScheduleError
from tesched.lower.pipeline import check_schedule
from tesched.schedule.schedule import Schedule, create_schedule
from tesched.te.tensor import Operation, Tensor

Outputs = Tensor | Operation | Sequence[Tensor | Operation] | Schedule


@dataclass
class Explanation:
    """What ``auto_schedule`` decided for a schedule: the plan, the machine, checks and timings."""

    plan: Plan
    machine: Machine
    seconds: float
    rejected: list[str] = field(default_factory=list)
    source: str = "auto_schedule"


_explanations: "weakref.WeakKeyDictionary[Schedule, Explanation]" = weakref.WeakKeyDictionary()


def as_outputs(outputs: Outputs) -> list[Operation]:
    """The output operations of a tensor, an operation, a list of them, or a schedule."""
    if isinstance(outputs, Schedule):
        return list(outputs.outputs)
    items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    ops = []
    for item in items:
        if isinstance(item, Tensor):
            ops.append(item.op)
        elif isinstance(item, Operation):
            ops.append(item)
        else:
            raise TypeError(f"auto_schedule: outputs must be tensors (or a schedule), got {type(item).__name__}")
    if not ops:
        raise ValueError("auto_schedule: no outputs given")
    return ops


def record(sch: Schedule, explanation: Explanation) -> None:
    """Attach ``explanation`` to ``sch`` (what ``explain_schedule`` prints)."""
    _explanations[sch] = explanation


def explanation_of(sch: Schedule) -> Explanation | None:
    return _explanations.get(sch)


def checked_schedule(outputs: Outputs, plan: Plan) -> Schedule:
    """``plan`` applied to a fresh schedule of ``outputs`` (or to the given schedule) and checked."""
    sch = outputs if isinstance(outputs, Schedule) else create_schedule(as_outputs(outputs))
    apply_plan(sch, plan)
    check_schedule(sch)
    return sch


def auto_schedule(outputs: Outputs, target: object = None) -> Schedule:
    """A schedule for ``outputs`` chosen by the cost model, without measuring anything.

    Parameters
    ----------
    outputs
        A tensor or a list of tensors (they share one schedule), or an existing schedule whose
        already-scheduled stages are kept as they are.
    target
        None or ``"host"`` for this machine, or a :class:`~tesched.autoschedule.machine.Machine`; or a GPU
        target (``"opencl"``, ``"cuda"``): block and thread tiles and shared-memory staging
        (:mod:`tesched.autoschedule.gpu`).

    Returns
    -------
    Schedule
        A legal schedule (checked by the dependence analysis); ``explain_schedule`` prints its decisions.

    Example
    -------
    >>> s = ts.auto_schedule(blur_y)
    >>> f = ts.build(s, [image, blur_y])
    >>> print(ts.explain_schedule(s))
    """
    gpu = gpu_target(target)
    if gpu is not None:
        if isinstance(outputs, Schedule):
            raise ScheduleError(f"auto_schedule for {gpu.name} takes the output tensors, not a schedule")
        return gpu_auto_schedule(as_outputs(outputs), gpu)
    start = time.perf_counter()
    machine = resolve(target)
    ops = as_outputs(outputs)
    base = outputs if isinstance(outputs, Schedule) else create_schedule(ops)
    plan = decide(Pipeline(base), machine)
    rejected: list[str] = []
    while True:
        candidate = base if isinstance(outputs, Schedule) else create_schedule(ops)
        try:
            apply_plan(candidate, plan)
            check_schedule(candidate)
            break
        except (ScheduleError, ValueError) as err:
            if isinstance(outputs, Schedule):
                raise ScheduleError(f"auto_schedule could not schedule the given schedule in place: {err}") from err
            plan, note = _fallback(plan, err)
            rejected.append(note)
    record(candidate, Explanation(plan, machine, time.perf_counter() - start, rejected))
    return candidate


def _fallback(plan: Plan, err: Exception) -> tuple[Plan, str]:
    """The plan with one stage simplified (stored whole, loops as declared): the first stage the error
    names that has decisions to drop, else the last stage that has; the other stages keep theirs."""
    elaborate = [p for p in reversed(plan.stages)
                 if p.placement == "at" or p.pack or p.rfactor or p.cache_write or p.tile]
    found = [(m.start(), k) for k, p in enumerate(elaborate)
             if (m := re.search(rf"(?<![\w.]){re.escape(p.stage)}(?!\w)", str(err))) is not None]
    named = [elaborate[k] for _, k in sorted(found)]         # the first one named: the error's subject
    for p in named[:1] or elaborate[:1]:
        simple = StagePlan(p.index, p.stage, "root", reasons=p.reasons + (
            f"simplified: the schedule first chosen failed the legality check ({err})",))
        return plan.replace_stage(simple), f"{p.stage}: {err}"
    raise ScheduleError(f"auto_schedule: no legal schedule found: {err}") from err


def left_as_declared(plan: Plan, sch: Schedule) -> list[tuple[str, str]]:
    """The stages of ``plan`` (applied to ``sch``) whose loops stay as declared, with why: kept as the
    user scheduled them, not modelled, simplified after a failed check, or stored whole with no loop
    split, reordered, fused, parallel, vectorized or unrolled and no stage computed in them (too small or
    too short for any)."""
    shapes = {st.op.name: st.op.output(0).shape for st in sch.stages if st.op.num_outputs}
    hosts = {p.host for p in plan.stages if p.placement == "at"}
    out = []
    for p in plan.stages:
        if p.placement in ("inline", "at") or p.index in hosts or _arranged(p, shapes.get(p.stage, ())):
            continue                        # (a kept stage's loops may be arranged too: a scan's step)
        why = next((r for r in p.reasons if r.startswith(("kept as scheduled", "loops left as declared",
                                                            "simplified"))), None)
        out.append((p.stage, why or (p.reasons[-1] if p.reasons else "no loop arranged")))
    return out


def _arranged(p: StagePlan, shape: Sequence[object]) -> bool:
    """Whether a stored or kept stage's plan changes its loops (the stage of ``shape``)."""
    extents = [d if isinstance(d, int) else None for d in shape]
    splits = any(1 < t and (e is None or t < e) for t, e in zip(p.tile, extents)) or any(
        1 < b and (e is None or b < e) for b, e in zip(p.band, extents))
    tile = list(p.tile) or [1] * len(extents)
    inner = [a for a, (t, e) in enumerate(zip(tile, extents)) if e is not None and t >= e > 1]
    outer = [a for a in range(len(tile)) if a not in inner]
    reordered = (bool(p.outer_order) and list(p.outer_order) != sorted(p.outer_order)) or any(
        a < b for a in inner for b in outer)       # loops: the outer axes, then the inner ones
    return bool(splits or reordered or p.parallel or p.vectorize or p.unroll_axis is not None or p.reduce_outer
                or p.k_unroll > 1 or p.rfactor or p.cache_write or p.pack or p.scatter)


def explain_schedule(sch: Schedule) -> str:
    """Every decision of an automatic (or tuned) schedule with its reason.

    Parameters
    ----------
    sch
        A schedule returned by ``auto_schedule``, ``tune`` or ``build(..., tuned=...)``.

    Returns
    -------
    str
        First the stages left as declared (kept as scheduled, not modelled, simplified after a failed
        legality check, or with no loop worth arranging) and why; then one block per stage: where it is
        computed, its loops, and why (footprints, reuse, cost).
    """
    if not isinstance(sch, Schedule):
        raise TypeError(f"explain_schedule takes a Schedule, got {type(sch).__name__}")
    gpu = gpu_explanation(sch)
    if gpu is not None:
        return gpu
    info = explanation_of(sch)
    if info is None:
        return "this schedule was not made by auto_schedule or tune: it has no recorded decisions"
    lines = [f"{info.source} for {', '.join(op.name for op in sch.outputs)} on {info.machine.describe()} "
             f"(decided in {info.seconds * 1e3:.0f} ms)"]
    declared = left_as_declared(info.plan, sch)
    lines.append(f"left as declared: {len(declared)} stage(s)" + (":" if declared else ""))
    lines += [f"    - {stage}: {why}" for stage, why in declared]
    for p in info.plan.stages:
        lines.append(f"{p.stage}: {_summary(p, info.plan)}")
        lines += [f"    - {r}" for r in p.reasons]
    if info.rejected:
        lines.append("rejected by the dependence check, then simplified:")
        lines += [f"    - {r}" for r in info.rejected]
    return "\n".join(lines)


def _summary(p: StagePlan, plan: Plan) -> str:
    if p.placement == "keep" and not (p.vectorize or p.rfactor or p.parallel):
        return "kept as scheduled"
    if p.placement == "inline":
        return "inlined"
    parts = []
    if p.placement == "at":
        assert p.host is not None, "a stage computed at another names it"
        host = plan.by_index()[p.host].stage
        parts.append(f"computed at {'the innermost tile loop' if p.level < 0 else f'outer loop {p.level}'} of {host}")
        if p.store_level is not None:
            parts.append(f"stored at outer loop {p.store_level} (sliding window)")
    elif p.placement == "keep":
        parts.append("at its scan's time loop")
    else:
        parts.append("stored whole" + (f", tiles {list(p.tile)}" if p.tile else ""))
    for flag, text in ((p.parallel, f"parallel x{p.parallel}"), (p.vectorize, "vectorized"),
                       (p.cache_write, "write cache"), (p.reduce_outer, "register tile"),
                       (p.rfactor, f"rfactor {p.rfactor}"), (p.scatter == "private", f"{p.copies} private copies"),
                       (p.scatter == "atomic", "atomic updates"), (p.pack, "packed panel"), (p.band, f"bands {list(p.band)}")):
        if flag:
            parts.append(text)
    return ", ".join(parts)
