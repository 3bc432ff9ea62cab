"""Named checks of the lowering that are not dependence analysis (that is :mod:`tesched.poly.deps`).

``check_request``: a schedule, a list of tensors and a str name were given. ``check_arguments`` (before
anything is built): every input read and every output is an argument, once,
and arguments are stored in full. ``check_loop_nesting`` (on the loop IR): no parallel loop runs inside a
vectorized one. Each raises an error naming the tensor, stage or loop at fault.
"""
from __future__ import annotations

from typing import Sequence

from tesched.errors import ScheduleError
from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtVisitor
from tesched.ir.kinds import LoopKind
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule
from tesched.te.expr import Param
from tesched.te.realize import inferred_region
from tesched.te.tensor import ComputeOp, PlaceholderOp, Tensor


def check_request(sch: object, args: object, name: object) -> None:
    """What ``lower``/``build`` were given: a schedule, a list of tensors and a str name."""
    if not isinstance(sch, Schedule):
        raise TypeError(f"lower/build: expected a Schedule (ts.create_schedule), got {type(sch).__name__}")
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"lower/build: args must be a list of the kernel's tensors, got {type(args).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"lower/build: name must be a str, got {type(name).__name__} {name!r}")


def check_arguments(sch: Schedule, args: Sequence[object], params: Sequence[Param] = ()) -> None:
    """Every input read and every output must be an argument; arguments must be root stages; a runtime
    parameter is listed at most once."""
    for k, p in enumerate(params):
        if any(p is q for q in params[:k]):
            raise ValueError(f"param {p.name} appears twice in the arguments")
    seen: set[int] = set()
    for t in args:
        if not isinstance(t, Tensor):
            raise TypeError(f"lower/build arguments must be tensors or ts.param parameters, got {type(t).__name__}")
        if id(t) in seen:
            raise ValueError(f"tensor {t.name} appears twice in the arguments")
        seen.add(id(t))
        stage = sch[t]
        if inferred_region(stage.op) is not None:
            raise ScheduleError(f"{t.name} is an argument, but it was declared without a shape: its region is "
                                "inferred from its readers, and a kernel's arguments are its inputs and outputs, "
                                "which carry their sizes; give it a shape to pass it")
        if stage.attach_type is not AttachType.ROOT and isinstance(t.op, ComputeOp):
            where = ("inlined" if stage.attach_type is AttachType.INLINE
                     else f"computed at {getattr(stage.attach_stage, 'name', '?')}")
            raise ScheduleError(f"{t.name} is an argument, so it must be stored in full, but it is {where}; "
                                "use compute_root or drop it from the arguments")
    for stage in sch.stages:
        t = stage.op.output(0)
        if isinstance(stage.op, PlaceholderOp) and id(t) not in seen:
            raise ValueError(f"input {t.name} is read but is not among the arguments")
        outputs = [stage.op.output(k) for k in range(stage.op.num_outputs)]
        if stage.is_output and not any(id(o) in seen for o in outputs):   # the others may stay internal
            raise ValueError(f"output {t.name} is not among the arguments")


class _LoopNesting(StmtVisitor):
    def __init__(self) -> None:
        self.vector: ir.For | None = None

    def visit_For(self, s: ir.For) -> None:
        if s.kind is LoopKind.PARALLEL and self.vector is not None:
            raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is parallel but runs inside the "
                                f"vectorized loop {self.vector.var.name} of stage {self.vector.stage}; "
                                "vectorize an inner loop or parallelize an outer one")
        outer = self.vector
        if s.kind is LoopKind.VECTORIZED:
            self.vector = s
        self.visit_default(s)
        self.vector = outer


def check_loop_nesting(body: ir.Stmt) -> None:
    """A parallel loop cannot run inside a vectorized one (its iterations are SIMD lanes)."""
    _LoopNesting().visit(body)
