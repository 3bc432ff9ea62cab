"""A schedule: the stages of every operation the outputs depend on, in dependence order.

``create_schedule(outputs)`` makes one :class:`~.stage.Stage` per operation (inputs first); ``s[T]`` finds
a tensor's stage. A scan's state placeholder has no stage of its own: it is the scan's tensor, and the
stages between it and the scan start computed at the scan's time loop. The dataflow primitives (``cache_read``, ``cache_write``, ``rfactor``, in
:mod:`.dataflow`) add stages. A schedule does not check itself: the lowering does (``ts.check_schedule(s)``
runs its legality checks on demand), so it does not depend on its lowering. A pipeline with computes
declared without a shape is rebuilt over their inferred regions first, by the function the lowering
registers with ``set_region_inference``; ``s[T]`` of a declared operation finds its rebuilt stage.
"""
from __future__ import annotations

from typing import Callable, Sequence, overload

from tesched.errors import ScheduleError
from tesched.schedule.dataflow import cache_read, cache_write, rfactor
from tesched.schedule.stage import Fuse, Split, Stage, as_op
from tesched.te.scan import ScanOp
from tesched.te.inferred import InferredOp
from tesched.te.tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor
from tesched.te.update import Func

__all__ = ["Fuse", "Schedule", "Split", "Stage", "create_schedule"]

_region_inference: Callable[[list[Operation]], list[tuple[Operation, Operation]]] | None = None


def set_region_inference(infer: Callable[[list[Operation]], list[tuple[Operation, Operation]]]) -> None:
    """Register the function that rebuilds a schedule's pipeline over the inferred regions of its computes
    declared without a shape: (declared, rebuilt) operation pairs (done by :mod:`tesched.lower`)."""
    global _region_inference
    _region_inference = infer


def dependence_order(outputs: Sequence[Operation]) -> list[Operation]:
    """Every operation the outputs depend on, each after those it reads."""
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def realize_declared(outputs: Sequence[Operation]) -> list[tuple[Operation, Operation]]:
    """The operations of a pipeline declared with computes without a shape, each with its operation rebuilt
    over the inferred regions (the registered inference); empty when the outputs depend on none."""
    if not any(isinstance(op, InferredOp) for op in dependence_order(outputs)):
        return []
    assert _region_inference is not None, "no region inference registered: import tesched"
    return _region_inference(list(outputs))


class Schedule:
    """The schedule of every operation that the outputs depend on."""

    def __init__(self, outputs: Sequence[Operation]):
        # the declared operations of a pipeline rebuilt over inferred regions, each with its rebuilt one
        self.declared = realize_declared(outputs)
        rebuilt = {id(old): new for old, new in self.declared}
        self.outputs = [rebuilt.get(id(op), op) for op in outputs]
        order = dependence_order(self.outputs)
        scans = [op for op in order if isinstance(op, ScanOp)]
        states = {id(state.op) for op in scans for state in op.states}
        self.stages = [Stage(op, self) for op in order if id(op) not in states]
        self.stage_map = {id(st.op): st for st in self.stages}
        for op in self.outputs:
            self.stage_map[id(op)].is_output = True
        for old, new in self.declared:
            self.stage_map[id(old)] = self.stage_map[id(new)]
        for scan in scans:
            self._place_scan(scan)

    def _place_scan(self, scan: ScanOp) -> None:
        """A scan's state is its own tensor (reads of the placeholder read the scan's stage), and the
        stages between the state and the scan run inside the scan's time loop (TVM's scan group)."""
        stage = self.stage_map[id(scan)]
        for state in scan.states:
            self.stage_map[id(state.op)] = stage
        for st in self.stages:
            if st is not stage and isinstance(st.op, ComputeOp) and self.reads_transitively(st.op, scan) \
                    and self.reads_transitively(scan, st.op):
                st.compute_at(stage, scan.scan_axis)

    def __getitem__(self, key: "Operation | Tensor | Stage | Func") -> Stage:
        if isinstance(key, Stage) and key.schedule is self:
            return key
        if isinstance(key, Func):       # Halide's ``f``: its pure definition (``s[f].update(k)``: the updates)
            key = key.op
        op = as_op(key.op if isinstance(key, Stage) else key)
        try:
            return self.stage_map[id(op)]
        except KeyError:
            raise ScheduleError(f"{op.name} is not part of this schedule (it is not an input of the outputs "
                                f"{', '.join(o.name for o in self.outputs)})") from None

    def __repr__(self) -> str:
        """The outputs, then every stage in order with its placement and loops (see ``Stage``'s repr)."""
        stages = "".join(f"\n  {stage!r}" for stage in self.stages)
        return f"Schedule(outputs: {', '.join(op.name for op in self.outputs)};{stages})"

    def stage_of_tensor(self, tensor: Tensor) -> Stage | None:
        """The stage producing ``tensor``, or None when it is not part of this schedule."""
        return self.stage_map.get(id(tensor.op))

    def producers(self, stage: Stage) -> list[Stage]:
        """The stages whose outputs ``stage`` reads."""
        out: list[Stage] = []
        for t in stage.op.input_tensors:
            st = self.stage_of_tensor(t)
            if st is not None and st not in out:
                out.append(st)
        return out

    def reads_transitively(self, consumer: Operation, producer: Operation) -> bool:
        """Whether ``consumer`` reads ``producer``'s output, directly or through other stages."""
        target = self[producer]
        stack, seen = [self[consumer]], set()
        while stack:
            for st in self.producers(stack.pop()):
                if st is target:
                    return True
                if id(st) not in seen:
                    seen.add(id(st))
                    stack.append(st)
        return False

    def insert_stage(self, op: ComputeOp, before: Stage | None = None, after: Stage | None = None) -> Stage:
        """Add a stage for ``op`` just before ``before`` or just after ``after`` (dataflow primitives)."""
        stage = Stage(op, self)
        if before is not None:
            pos = self.stages.index(before)
        else:
            assert after is not None, "insert_stage needs before= or after="
            pos = self.stages.index(after) + 1
        self.stages.insert(pos, stage)
        self.stage_map[id(op)] = stage
        return stage

    def cache_read(self, tensor: Tensor, scope: str, readers: Sequence) -> Tensor:
        """A copy of ``tensor`` that ``readers`` read instead (see :mod:`tesched.schedule.dataflow`)."""
        return cache_read(self, tensor, scope, readers if isinstance(readers, (list, tuple)) else [readers])

    @overload
    def cache_write(self, tensor: Tensor, scope: str) -> Tensor: ...

    @overload
    def cache_write(self, tensor: Sequence[Tensor], scope: str) -> tuple[Tensor, ...]: ...

    def cache_write(self, tensor: Tensor | Sequence[Tensor], scope: str) -> Tensor | tuple[Tensor, ...]:
        """Compute ``tensor`` into a cache stage, whose output is returned; the outputs of a multi-output
        compute go together, as a list, and come back as a tuple (see :mod:`tesched.schedule.dataflow`)."""
        return cache_write(self, tensor, scope)

    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor | list[Tensor]:
        """Turn reduce loop ``axis`` into a data-parallel axis of a new stage (see :mod:`tesched.schedule.dataflow`).

        Returns the partial stage's output, or, of a tuple reduction (``ts.argmax``, a ``comm_reducer`` of
        several values), the list of its outputs (one partial tensor per component), as TVM does; the final
        stage combines every component's partials."""
        return rfactor(self, tensor, axis, factor_axis)

    def canonical(self, tensor: Tensor) -> Tensor:
        """The tensor a stage currently produces, for a tensor the user declared."""
        st = self.stage_of_tensor(tensor)
        if st is None:
            return tensor
        if isinstance(st.op, ScanOp) and any(s is tensor for s in st.op.states):
            return st.op.output(st.op.state_index(tensor))      # a state placeholder: its scan's output
        return st.op.output(tensor.value_index)


def create_schedule(ops: Operation | Tensor | Sequence[Operation | Tensor]) -> Schedule:
    """A schedule for the given output operations (or tensors); every stage starts at the root."""
    items: list = list(ops) if isinstance(ops, (list, tuple)) else [ops]
    if not items:
        raise ScheduleError("create_schedule: no outputs given; pass the output tensor(s), e.g. "
                            "create_schedule(C.op)")
    out = [as_op(o, "create_schedule") for o in items]
    for op in out:
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(f"create_schedule: {op.name} is a placeholder, not a computation")
    return Schedule(out)
