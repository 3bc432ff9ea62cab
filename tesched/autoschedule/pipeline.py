"""The pipeline an automatic schedule is made for: its stages in order, what each one is and who reads it.

A pipeline is everything the outputs read, as ``create_schedule`` orders it (inputs first). Each compute
stage is classified: ``pointwise`` (no reduction), ``reduction``, ``scatter`` (``ts.scatter``: its loops are
the points it scatters, its writes go anywhere in its tensor), or ``opaque`` when the cost model cannot
reason about it (a tensorized stage, a stage the user already scheduled, an operation that is not a
compute, symbolic sizes, a scan and the stages of its step, which run inside its time loop); an opaque stage keeps the schedule it has. This module only describes; it
decides nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tesched.poly.analysis import NotModelable, constant_shape
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage
from tesched.te.expr import Call, Expr, Select
from tesched.te.extern import ExternCall
from tesched.te.extern_op import ExternOp
from tesched.te.functions import PURE_CALLS
from tesched.te.reduction import Reduce
from tesched.te.scan import ScanOp
from tesched.te.scatter import ScatterOp
from tesched.te.update import UpdateOp
from tesched.te.tensor import ComputeOp, Operation, PlaceholderOp, TensorRead
from tesched.te.visit import collect, walk

CALL_COST = 12
"""Scalar operations one call of ``exp``/``log``/``pow``... is counted as."""


@dataclass(eq=False)
class StageInfo:
    """One stage of the pipeline, as the cost model sees it."""

    index: int
    stage: Stage
    kind: str                                   # input | pointwise | reduction | scatter | opaque
    why_opaque: str = ""
    scan: str = ""                              # the scan whose step this stage is, its loops free to arrange
    readers: list[int] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)
    ops: int = 0                                # scalar operations per point (loads included)
    guarded_load: bool = False                  # a select whose branch reads memory (padding)
    points: int = 0
    reduce_extent: int = 1
    itemsize: int = 4

    @property
    def name(self) -> str:
        return self.stage.op.name

    @property
    def op(self) -> ComputeOp:
        """The stage's operation (a compute: inputs have no plan)."""
        op = self.stage.op
        assert isinstance(op, ComputeOp), f"{op.name} is an input"
        return op

    @property
    def is_output(self) -> bool:
        return self.stage.is_output

    @property
    def work(self) -> int:
        """Scalar operations to compute the whole tensor once."""
        return self.points * self.reduce_extent * max(self.ops, 1)


def loops_arranged_by_user(stage: Stage) -> str:
    """Why ``stage``'s loops already carry a schedule (empty if they do not)."""
    if stage.tensorize_spec is not None:
        return "it is tensorized"
    if stage.relations or stage.iter_var_attrs:
        return "its loops were already split, fused, reordered or annotated"
    if stage.leaf_iter_vars != stage.all_iter_vars:
        return "its loops were reordered"
    return ""


def scheduled_by_user(stage: Stage) -> str:
    """Why ``stage`` already carries a schedule (empty if it does not)."""
    loops = loops_arranged_by_user(stage)
    if loops:
        return loops
    if stage.attach_type is not AttachType.ROOT:
        return f"it was already placed ({stage.attach_type})"
    return ""


def operation_count(body: Expr) -> int:
    """Scalar operations per evaluation of ``body``: loads, arithmetic, calls (see :data:`CALL_COST`)."""
    parts = body.children() if isinstance(body, Reduce) else (body,)
    count = 0
    for part in parts:
        for node in walk(part):
            if isinstance(node, TensorRead):
                count += 1
            elif isinstance(node, Call):
                count += CALL_COST
            elif node.children() and not isinstance(node, TensorRead):
                count += 1
    return count


def _has_guarded_load(body: Expr) -> bool:
    for sel in collect(body, Select):
        if collect(sel.true_value, TensorRead) or collect(sel.false_value, TensorRead):
            return True
    return False


def _opaque_reason(stage: Stage, steps: dict[int, str]) -> str:
    op = stage.op
    if isinstance(op, ScanOp):
        return "it is a scan: its time loop runs in order, with its step computed inside it"
    if id(op) in steps:
        return loops_arranged_by_user(stage) or f"it is a step of scan {steps[id(op)]}, computed at its time loop"
    if not isinstance(op, ComputeOp):
        return f"{type(op).__name__} is not a compute the cost model knows"
    if isinstance(op, ExternOp):
        return f"it is an extern stage, one call of C function {op.function}"
    if isinstance(op, UpdateOp) or any(isinstance(st.op, UpdateOp) and st.op.base is op
                                       for st in stage.schedule.stages):
        return "it is a definition of a tensor with updates, which the cost model does not model"
    user = scheduled_by_user(stage)
    if user:
        return user
    unknown = sorted({c.name for c in collect(op.body, Call) if c.name not in PURE_CALLS
                      and not isinstance(c, ExternCall)})
    if unknown:
        return f"it calls external functions ({', '.join(unknown)})"
    try:
        constant_shape(op.output(0))
    except NotModelable as err:
        return str(err)
    for r in op.reduce_axis:
        if r.constant_extent is None:
            return f"reduce axis {r.name} has a symbolic extent"
    return ""


class Pipeline:
    """The stages of ``schedule`` with their kinds, readers and costs."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        self.stages: list[StageInfo] = []
        position = {id(st): k for k, st in enumerate(schedule.stages)}
        steps = {id(o): st.op.name for st in schedule.stages if isinstance(st.op, ScanOp)
                 for o in st.op.step_operations()}
        for k, st in enumerate(schedule.stages):
            info = StageInfo(k, st, "input")
            if not isinstance(st.op, PlaceholderOp):
                info.why_opaque = _opaque_reason(st, steps)
                if type(st.op) is ComputeOp and not loops_arranged_by_user(st):
                    info.scan = steps.get(id(st.op), "")
                if info.why_opaque:
                    info.kind = "opaque"
                else:
                    op = st.op
                    assert isinstance(op, ComputeOp)
                    info.kind = ("scatter" if isinstance(op, ScatterOp) else
                                 "reduction" if op.reduce_axis else "pointwise")
                    info.ops = operation_count(op.body)
                    info.guarded_load = _has_guarded_load(op.body)
                    info.points = _product(constant_shape(op.output(0)))
                    info.reduce_extent = _product([r.constant_extent or 0 for r in op.reduce_axis])
            info.itemsize = _itemsize(st.op.output(0).dtype)
            self.stages.append(info)
        for st in schedule.stages:
            for producer in schedule.producers(st):
                self.stages[position[id(producer)]].readers.append(position[id(st)])
                self.stages[position[id(st)]].producers.append(position[id(producer)])
        self._index = {id(st.op): k for k, st in enumerate(schedule.stages)}

    def __getitem__(self, index: int) -> StageInfo:
        return self.stages[index]

    def index_of(self, op: Operation) -> int:
        """The position of ``op``'s stage."""
        return self._index[id(op)]

    def computes(self) -> list[StageInfo]:
        return [s for s in self.stages if s.kind != "input"]


def _product(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _itemsize(dtype: str) -> int:
    return {"bool": 1, "int32": 4, "int64": 8, "float32": 4, "float64": 8}.get(dtype, 4)
