"""Loops for the stages of a scan's step: they stay computed at the scan's time loop, one step at a time,
and only their own loops are arranged.

A step stage (``ScanOp.step_operations``: an RNN's matrix-vector product, its activation; the step of a
gradient through time) runs once per time step, so its placement is fixed (``keep``) but its loops are
not: left as declared, a 32 x 256 x 256 step is a scalar triple loop. :func:`step_plan` chooses, from the
strides of the stage's reads:

- a reduction whose inputs are contiguous (or invariant) along its innermost data axis: the reduce loops
  outside it and that axis vectorized, accumulating in place (``reduce_outer``);
- else, one whose innermost reduce axis is contiguous in its inputs: an ``rfactor`` of lanes of partial
  sums, vectorized, reduced at each output element;
- a stage without a reduction: its innermost axis vectorized when it is long enough for a vector.

The time loop itself stays serial (each step reads the one before). Within a step, a reduction doing
enough work per step (:func:`~tesched.autoschedule.cost.worth_parallel`) runs its first axis after the
time axis in parallel (``parallel`` 1): one parallel region per step. This module decides; :func:`~tesched.autoschedule.plan.apply_plan`
applies the decisions.
"""
from __future__ import annotations

from tesched.autoschedule import cost
from tesched.autoschedule.pipeline import StageInfo
from tesched.autoschedule.plan import StagePlan
from tesched.autoschedule.state import DecideState
from tesched.poly.analysis import NotModelable, constant_shape
from tesched.te.tensor import ComputeOp


def step_plan(state: DecideState, info: StageInfo) -> StagePlan:
    """The plan of step stage ``info`` (see the module docstring)."""
    where = f"computed at the time loop of scan {info.scan}, one step at a time"
    plan = StagePlan(info.index, info.name, "keep", reasons=(where,))
    op = info.op
    try:
        extents = list(constant_shape(op.output(0)))
    except NotModelable as err:
        return plan.with_(f"loops left as declared: {err}")
    lanes = state.machine.lanes(info.itemsize)
    if not extents or extents[-1] < 4:
        return plan.with_("loops left as declared: no axis long enough for a vector")
    reads = state.reads(op)
    vector_axis = len(extents) - 1
    if not op.reduce_axis:
        return plan.with_(f"its innermost axis ({op.axis[-1].name}) vectorized", vectorize=True)
    plan = _parallel_within_step(plan, op, extents)
    along_row = all(r.strides[vector_axis] in (0, 1) for r in reads)
    if along_row and extents[-1] >= lanes:
        reduce_extent = op.reduce_axis[-1].constant_extent or 1
        k_unroll = cost.k_unroll(reduce_extent)
        return plan.with_(f"reduce loops outside its innermost axis ({op.axis[-1].name}), which is vectorized: "
                          f"its inputs are contiguous along it; the innermost reduce loop unrolled by {k_unroll}",
                          reduce_outer=True, vectorize=True, k_unroll=k_unroll)
    last_reduce = len(op.axis) + len(op.reduce_axis) - 1
    reduce_extent = op.reduce_axis[-1].constant_extent or 1
    rf_lanes = cost.rfactor_lanes(reduce_extent, lanes)
    if rf_lanes and all(r.strides[last_reduce] in (0, 1) for r in reads):
        return plan.with_(f"rfactor: the reduction over {op.reduce_axis[-1].name} ({reduce_extent}) is contiguous "
                          f"in its inputs: {rf_lanes} lanes of partial sums, vectorized", rfactor=rf_lanes)
    return plan.with_("loops left as declared: its inputs are strided along its innermost axis and its reduction")


def _parallel_within_step(plan: StagePlan, op: ComputeOp, extents: list[int]) -> StagePlan:
    """``plan`` with its axis 1 parallel when the stage has one besides its row and does enough work per
    time step (its axis 0 is the time step: one per iteration of the scan's loop)."""
    if len(extents) < 3 or extents[1] < 2:
        return plan
    work = 1
    for e in extents[1:]:
        work *= e
    for r in op.reduce_axis:
        work *= r.constant_extent or 1
    if not cost.worth_parallel(work):
        return plan
    return plan.with_(f"its axis {op.axis[1].name} in parallel: {work} operations per time step", parallel=1)
