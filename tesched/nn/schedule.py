"""Default schedules of the operator library, for one op or for a fused group of ops.

:func:`default_schedule` takes the output tensor(s) of any computation built from :mod:`tesched.nn` ops and
returns a schedule in which

- every stage without a reduction that is not an output is inlined into its readers (``compute_inline``);
- every reduction (the *anchor*: conv2d, dense, a pool, a sum) read only by one output is computed inside
  that output's loop nest (``compute_at`` at a tile of the output), so an elementwise epilogue such as
  bias + relu runs in the anchor's loop nest: the fused kernel. Any other reduction is stored whole, and
  is computed the same way through a write cache (``cache_write``): the cache is the anchor and the stored
  tensor its host, so a conv computes alike with or without an epilogue;
- each anchor's loops are arranged by the schedule registered for its op (:func:`register_schedule`), or
  by :func:`schedule_reduction` when none is; every such schedule gets an anchor and a distinct host; a
  registered schedule may also own the reductions that produce its anchor (a pipeline of stages such as
  Winograd's transforms and products), which then get no schedule of their own;
- outputs that host no anchor get :func:`schedule_injective`; a scatter (``ts.scatter_add``, as in the
  gradient of a gather) stays at the root, since it writes anywhere in its tensor.

Schedules use only tesched primitives (split, fuse, reorder, compute_at, compute_inline, cache_read,
cache_write, rfactor, vectorize, parallel, unroll). This module chooses loops; it declares no computation.
"""
from __future__ import annotations

from typing import Callable, Sequence

import tesched as ts
from tesched.nn.hints import hint
from tesched.nn.pattern import op_of
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage
from tesched.te.scatter import ScatterOp
from tesched.te.tensor import ComputeOp, IterVar, Tensor

AnchorSchedule = Callable[[Schedule, Tensor, Tensor], None]
"""``fn(s, anchor, host)``: arrange ``anchor``'s loops and compute it inside the loops of ``host``, the
stage that reads it (its fused output, or the copy that stores it whole)."""

PARALLEL_MIN_WORK = 1 << 18
"""Below this many scalar operations a loop nest runs on one thread: starting a parallel region costs
microseconds, and much more when other processes hold the cores."""

_ANCHOR_SCHEDULES: dict[str, AnchorSchedule] = {}
_OWNED_STAGES: set[str] = set()


def register_schedule(op: str, producers: Sequence[str] = ()) -> Callable[[AnchorSchedule], AnchorSchedule]:
    """Decorator: ``fn`` schedules the reduction stages that op ``op`` declares, and the reduction stages
    of the ops named in ``producers`` that feed them (:func:`default_schedule` leaves those alone)."""
    def register(fn: AnchorSchedule) -> AnchorSchedule:
        _ANCHOR_SCHEDULES[op] = fn
        _OWNED_STAGES.update(producers)
        return fn
    return register


def inlined_schedule(outputs: Tensor | Sequence[Tensor]) -> tuple[Schedule, list[Tensor], list[Stage]]:
    """A schedule of ``outputs`` whose intermediate elementwise stages are inlined, the outputs as a list,
    and its compute stages (the start of every default schedule, CPU or GPU)."""
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    s = ts.create_schedule([t.op for t in outs])
    computes = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    for st in computes:
        if not st.is_output and not st.op.reduce_axis:
            st.compute_inline()
    return s, outs, computes


def default_schedule(outputs: Tensor | Sequence[Tensor]) -> Schedule:
    """A schedule computing ``outputs`` with epilogues fused into their anchors (see the module doc)."""
    s, outs, computes = inlined_schedule(outputs)
    hosts: set[int] = set()
    for st in reversed(computes):  # consumers first, so the anchor nearest an output gets it
        if isinstance(st.op, ScatterOp):
            continue                   # a scatter writes anywhere in its tensor: computed at the root
        if st.op.reduce_axis and op_of(st.op.output(0)) not in _OWNED_STAGES:
            host = _host_of(s, st, hosts)
            hosts.add(id(host.op))
            anchor = s.cache_write(host, "local") if host.op is st.op else st.op.output(0)
            _ANCHOR_SCHEDULES.get(op_of(anchor) or "", schedule_reduction)(s, anchor, host)
    for out in outs:
        if id(out.op) not in hosts:
            schedule_injective(s, out)
    return s


def _host_of(s: Schedule, st: Stage, hosts: set[int]) -> Tensor:
    """The output ``st`` can be computed inside: its only reader once inlined stages are looked through."""
    if st.is_output:
        return st.op.output(0)
    readers = stored_readers(s, st)
    if len(readers) == 1 and readers[0].is_output and id(readers[0].op) not in hosts:
        return readers[0].op.output(0)
    return st.op.output(0)


def stored_readers(s: Schedule, st: Stage) -> list[Stage]:
    """The stages that read ``st``'s output, looking through inlined stages."""
    found: list[Stage] = []
    frontier = [st.op]
    while frontier:
        op = frontier.pop()
        for reader in s.stages:
            if any(t.op is op for t in reader.op.input_tensors):
                if reader.attach_type is AttachType.INLINE:
                    frontier.append(reader.op)
                elif reader not in found:
                    found.append(reader)
    return found


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` that is at most ``at_most`` (at least 1)."""
    return next(d for d in range(min(n, at_most), 0, -1) if n % d == 0)


def element_count(t: Tensor) -> int:
    """The elements of ``t`` (symbolic sizes at their hints)."""
    count = 1
    for d in t.shape:
        count *= hint(d)
    return count


def reduction_work(red: Tensor) -> int:
    """Multiply-adds (or comparisons) a reduction performs: output elements times reduction extent."""
    work = element_count(red)
    for r in red.op.reduce_axis:
        work *= static_extent(r)
    return work


def static_extent(axis: IterVar) -> int:
    """The extent of an axis of a library op: its constant, or for a symbolic size its hint
    (:mod:`tesched.nn.hints`: tiles chosen by it stay legal for any size)."""
    return hint(axis.range.extent)


def parallel_outer(stage: Stage, axes: Sequence[IterVar], work: int) -> IterVar:
    """Fuse ``axes`` (consecutive outer loops, at least one) into one, parallel when the nest does at
    least :data:`PARALLEL_MIN_WORK` scalar operations."""
    assert axes, f"parallel_outer: no loops of stage {stage.op.name} to fuse"
    outer = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    if work >= PARALLEL_MIN_WORK:
        stage.parallel(outer)
    return outer


def schedule_injective(s: Schedule, out: Tensor) -> None:
    """The two outermost axes fused (and parallel when large), the innermost axis vectorized."""
    stage = s[out]
    axes = list(stage.op.axis)
    if not axes:
        return
    if len(axes) == 1 and hint(out.shape[0]) >= PARALLEL_MIN_WORK:
        outer, inner = stage.split(axes[0], 1024)
        stage.parallel(outer)
        stage.vectorize(inner)
        return
    if len(axes) > 1:
        parallel_outer(stage, axes[:min(2, len(axes) - 1)], element_count(out))
    stage.vectorize(axes[-1])


def stored_whole(s: Schedule, red: Tensor, host: Tensor) -> tuple[Tensor, Tensor]:
    """``(red, host)`` when ``host`` has ``red``'s shape; else ``host`` (a reader of another shape, such as
    a slice of a matrix product's columns, which would compute ``red`` element by element in its loops)
    gets :func:`schedule_injective` and ``red`` is stored whole through a write cache: returns ``(cache,
    red)``, the cache to compute inside the loops of the stored ``red``."""
    if host.shape == red.shape:
        return red, host
    schedule_injective(s, host)
    return s.cache_write(red, "local"), red


_ROW = 16
"""The row :func:`schedule_reduction` splits a one-dimensional host into."""


def schedule_reduction(s: Schedule, red: Tensor, host: Tensor) -> None:
    """Any reduction: computed per row of ``host`` (all loops but the innermost, fused and parallel when
    the work is large), the row vectorized. A reduction with fewer elements than ``host`` has rows (batch
    statistics, one per channel, read by every pixel) would be computed again by every row that reads an
    element: it is stored whole first (``stored_whole``) and computed per row of its own."""
    if element_count(red) < _rows(host):
        red, host = stored_whole(s, red, host)
    hstage = s[host]
    axes = list(hstage.op.axis)
    if len(axes) > 1:
        row = parallel_outer(hstage, axes[:-1], reduction_work(red))
        hstage.vectorize(axes[-1])
    elif axes:
        row, inner = hstage.split(axes[0], _ROW)
        hstage.vectorize(inner)
    else:
        return
    s[red].compute_at(hstage, row)


def _rows(host: Tensor) -> int:
    """How many rows :func:`schedule_reduction` computes ``host`` in."""
    if len(host.shape) > 1:
        return element_count(host) // hint(host.shape[-1])
    return -(-element_count(host) // _ROW) if host.shape else 1


def schedule_channel_planes(s: Schedule, red: Tensor, host: Tensor, window_input: Tensor | None) -> None:
    """NCHW sliding windows that stay in their channel (depthwise conv, pools): one channel plane per
    iteration of the parallel (n, c) loop of ``host``, and per output row of the plane the reduction
    computed with the window loops outside the vectorized row, so the row's accumulators stay in
    registers; ``window_input`` (a padding stage, if any) is computed per plane."""
    if host.shape != red.shape:
        schedule_reduction(s, red, host)
        return
    hstage, rstage = s[host], s[red]
    rn, rc, rh, rw = rstage.op.axis
    rstage.reorder(rn, rc, rh, *rstage.op.reduce_axis, rw)
    rstage.vectorize(rw)
    n, c, h, w = hstage.op.axis
    plane = parallel_outer(hstage, [n, c], reduction_work(red))
    hstage.vectorize(w)
    rstage.compute_at(hstage, h)
    if window_input is not None:
        s[window_input].compute_at(hstage, plane)
        s[window_input].vectorize(s[window_input].op.axis[-1])
