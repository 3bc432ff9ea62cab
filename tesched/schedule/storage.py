"""Where a stage's storage lives and which region it realizes: ``store_at``/``store_root`` and ``bound``.

Halide separates the loop level where a stage is *computed* (``compute_at``) from the level where its
buffer is *allocated* (``store_at``, ``store_root``). With storage hoisted above the computation, the
iterations of the loops in between share one buffer, so values computed in earlier iterations are reused
instead of recomputed (a sliding window; see :mod:`tesched.poly.domains`), and the buffer may be folded
into a circular buffer (:mod:`tesched.poly.buffers`). ``bound``/``bound_extent`` fix the region of one
axis a stage realizes. This module holds what ``bound`` records and its validation; the primitives are
methods of :class:`~.stage.Stage`, and the lowering does the rest.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import SupportsIndex

from tesched.errors import ScheduleError
from tesched.te.tensor import IterType, IterVar, Operation


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


def checked_bound(stage: str, op: Operation, is_output: bool, axis: object, min_value: object, extent: object,
                  primitive: str) -> AxisBound:
    """The bound ``primitive`` (``bound``/``bound_extent``) records for ``axis`` of stage ``stage``
    (computing ``op``), after checking it: an axis of its own (not a reduce axis), a positive extent, and
    a region inside the tensor's shape when that dimension is a constant (the whole of it for an output)."""
    axes = list(getattr(op, "axis", []))
    name = getattr(axis, "name", axis)
    if not isinstance(axis, IterVar) or not any(a is axis for a in axes):
        reduce = isinstance(axis, IterVar) and axis.iter_type == IterType.COMM_REDUCE
        why = "a reduction axis cannot be bounded" if reduce else "it is not an axis of the stage"
        raise ScheduleError(f"{primitive} on stage {stage}: {name!r}: {why} (its axes are: "
                            f"{', '.join(a.name for a in axes)})")
    size = _integer(extent, f"{primitive} of {stage}.{name}: extent")
    if size <= 0:
        raise ScheduleError(f"{primitive} of {stage}.{name}: extent must be positive, got {size}")
    start = None if min_value is None else _integer(min_value, f"{primitive} of {stage}.{name}: min")
    bound = AxisBound(start, size)
    dim = next(k for k, a in enumerate(axes) if a is axis)
    shape = op.output(0).shape[dim]
    low = axis.dom.min if axis.dom is not None else 0
    if isinstance(shape, int) and isinstance(low, int):
        first = low if start is None else start
        if first < low or first + size > low + shape:
            raise ScheduleError(f"{primitive} of {stage}.{name}: the region {bound.describe()} "
                                f"exceeds the tensor's dimension {dim}, [{low}, {low + shape})")
        if is_output and (first != low or size != shape):
            raise ScheduleError(f"{primitive} of {stage}.{name}: {stage} is an output, whose "
                                f"whole dimension {dim}, [{low}, {low + shape}), is requested; it exceeds "
                                f"the bound {bound.describe()}")
    return bound
