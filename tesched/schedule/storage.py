"""Where a stage's storage lives and which region it realizes: ``store_at``/``store_root`` and ``bound``.

Halide separates the loop level where a stage is *computed* (``compute_at``) from the level where its
buffer is *allocated* (``store_at``, ``store_root``). With storage hoisted above the computation, the
iterations of the loops in between share one buffer, so values computed in earlier iterations are reused
instead of recomputed (a sliding window; see :mod:`tesched.poly.domains`), and the buffer may be folded
into a circular buffer (:mod:`tesched.poly.buffers`). ``bound``/``bound_extent`` fix the region of one
axis a stage realizes. This module only records and validates; the lowering does the rest.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, SupportsIndex

from tesched.errors import ScheduleError
from tesched.schedule.kinds import AttachType
from tesched.te.tensor import IterType, IterVar

if TYPE_CHECKING:
    from tesched.schedule.stage import Stage


@dataclass(frozen=True)
class AxisBound:
    """The region a stage realizes along one axis: ``[min, min + extent)``; ``min`` None means the
    region starts where the stage's readers need it to (``bound_extent``)."""

    min: int | None
    extent: int

    def describe(self) -> str:
        """``[min, min + extent)``, or ``extent e`` when the start is free."""
        return f"extent {self.extent}" if self.min is None else f"[{self.min}, {self.min + self.extent})"


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise ScheduleError(f"{what} must be an int, got {value!r}")
    return operator.index(value)


def record_store(stage: "Stage", parent: "Stage | None", scope: IterVar | None) -> None:
    """Record ``stage.store_at(parent, scope)`` (or ``store_root`` when ``parent`` is None) after
    checking the arguments; whether it encloses the ``compute_at`` level is checked when lowering."""
    stage._compute_only("store_at" if parent is not None else "store_root")
    if parent is None:
        stage.store_type, stage.store_stage, stage.store_ivar = AttachType.ROOT, None, None
        return
    stage._check_placement("store_at", parent, scope)
    assert isinstance(scope, IterVar)
    stage.store_type, stage.store_stage, stage.store_ivar = AttachType.SCOPE, parent, scope


def record_bound(stage: "Stage", axis: IterVar, min_value: object, extent: object, primitive: str) -> None:
    """Record ``bound``/``bound_extent`` of ``axis`` on ``stage``: an axis of its own (not a reduce
    axis), a positive extent, and a region inside the tensor's shape when that dimension is a constant."""
    stage._compute_only(primitive)
    axes = list(getattr(stage.op, "axis", []))
    name = getattr(axis, "name", axis)
    if not isinstance(axis, IterVar) or not any(a is axis for a in axes):
        reduce = isinstance(axis, IterVar) and axis.iter_type == IterType.COMM_REDUCE
        why = "a reduction axis cannot be bounded" if reduce else "it is not an axis of the stage"
        raise ScheduleError(f"{primitive} on stage {stage.name}: {name!r}: {why} (its axes are: "
                            f"{', '.join(a.name for a in axes)})")
    size = _integer(extent, f"{primitive} of {stage.name}.{name}: extent")
    if size <= 0:
        raise ScheduleError(f"{primitive} of {stage.name}.{name}: extent must be positive, got {size}")
    start = None if min_value is None else _integer(min_value, f"{primitive} of {stage.name}.{name}: min")
    bound = AxisBound(start, size)
    dim = axes.index(axis)
    shape = stage.op.output(0).shape[dim]
    low = axis.dom.min if axis.dom is not None else 0
    if isinstance(shape, int) and isinstance(low, int):
        first = low if start is None else start
        if first < low or first + size > low + shape:
            raise ScheduleError(f"{primitive} of {stage.name}.{name}: the region {bound.describe()} "
                                f"exceeds the tensor's dimension {dim}, [{low}, {low + shape})")
        if stage.is_output and (first != low or size != shape):
            raise ScheduleError(f"{primitive} of {stage.name}.{name}: {stage.name} is an output, whose "
                                f"whole dimension {dim}, [{low}, {low + shape}), is requested; it exceeds "
                                f"the bound {bound.describe()}")
    stage.bounds[axis] = bound
