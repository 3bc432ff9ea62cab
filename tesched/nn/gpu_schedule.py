"""Default GPU schedules of the operator library: every stage bound to blocks and threads, for one op or
a fused group of ops.

:func:`gpu_default_schedule` takes the output tensor(s) of a computation built from :mod:`tesched.nn` ops
and returns a schedule for a GPU target (``opencl`` or ``cuda``) in which

- every stage without a reduction that is not an output is inlined into its readers, as on the CPU;
- a reduction (the *anchor*: conv2d, dense, a pool, a sum) read only by one output of its shape is
  computed with that output: one kernel per group, the elementwise epilogue applied to each element of
  the anchor in a register;
- an anchor whose block's threads share an input (dense's operands, a convolution's window and weights:
  :func:`tesched.nn.gpu_tiles.worth_staging`) is tiled as :mod:`tesched.nn.gpu_tiles`
  does: blocks of up to 16 x 16 threads, each a register tile, the shared inputs staged in shared memory
  per step of the reduction, sized within the target's limits (its presets, not a device's);
- any other anchor is computed in its output's thread loop, one element per thread, its reduction loops
  serial; an output's (or a stored reduction's) innermost loop is split by :func:`threads_for`, the inner
  part bound to ``threadIdx.x`` and the outer to ``blockIdx.x``; the next loop outwards to ``blockIdx.y``,
  and the loops outside it, fused, to ``blockIdx.z``;
- any other reduction is stored whole in device memory (its own kernel, bound like an output);
- a reduction to a scalar (no data-parallel loop) is a cross-thread reduction over one block.

The choices are simple and always legal; they are not tuned (``ts.auto_schedule(.., target="opencl")``
sizes tiles for the device and explains them). This module chooses loops; it declares no computation.
"""
from __future__ import annotations

from typing import Sequence

import tesched as ts
from tesched.nn.gpu_tiles import (GpuLimits, preset_limits, reads_pointwise, reduction_tile,
                                   tile_reduction, worth_staging)
from tesched.nn.schedule import inlined_schedule, stored_readers
from tesched.schedule.schedule import Schedule, Stage
from tesched.target import Target
from tesched.te.tensor import ComputeOp, IterVar, Tensor

THREADS = 64
"""Threads per block of a default GPU schedule: two warps, a fraction of any device's limit."""


def threads_for(elements: int, target: Target) -> int:
    """Threads per block for a loop of ``elements`` iterations: :data:`THREADS` (within ``target``'s
    limit), or fewer when there are fewer elements."""
    return max(1, min(elements, THREADS, target.gpu_max_threads))


def gpu_default_schedule(outputs: Tensor | Sequence[Tensor], target: Target, shared: bool = True) -> Schedule:
    """A GPU schedule computing ``outputs``, epilogues fused with their anchors (see the module doc);
    without ``shared``, no tiles: one thread per element everywhere."""
    s, outs, computes = inlined_schedule(outputs)
    limits = preset_limits(target)
    anchors: dict[int, list[Stage]] = {}
    for st in computes:
        readers = stored_readers(s, st) if st.op.reduce_axis and not st.is_output else []
        if len(readers) == 1 and readers[0].is_output and readers[0].op.output(0).shape == st.op.output(0).shape \
                and st.op.output(0).shape:
            anchors.setdefault(id(readers[0].op), []).append(st)
        elif st.op.reduce_axis and not st.is_output:
            bind_or_tile(s, st.op.output(0), limits, target, shared)
    for out in outs:
        found = anchors.get(id(out.op), [])
        anchor = found[0].op if len(found) == 1 and shared else None
        if isinstance(anchor, ComputeOp) and worth_staging(anchor) and reads_pointwise(s, s[out], found[0]):
            tile_reduction(s, out, anchor.output(0), reduction_tile(anchor, limits))
        elif found:
            thread = bind_threads(s, out, target)
            for st in found:
                st.compute_at(s[out], thread)
        else:
            bind_or_tile(s, out, limits, target, shared)
    return s


def bind_or_tile(s: Schedule, t: Tensor, limits: GpuLimits, target: Target, shared: bool = True) -> None:
    """``t`` (an output or a stored reduction) in tiles staged through shared memory if ``shared`` and it is
    a reduction whose block's threads share an input, else a thread per element (:func:`bind_elements`)."""
    if shared and worth_staging(s[t].op):
        op = s[t].op
        assert isinstance(op, ComputeOp)
        tile_reduction(s, t, s.cache_write(t, "local"), reduction_tile(op, limits))
    else:
        bind_elements(s, t, target)


def bind_elements(s: Schedule, t: Tensor, target: Target) -> None:
    """A thread per element of ``t`` (:func:`bind_threads`); a scalar's reduction spread over one block's
    threads (a cross-thread reduction); a scalar without one is computed by one thread."""
    stage = s[t]
    if stage.op.axis:
        bind_threads(s, t, target)
        return
    reduce_axes = list(stage.op.reduce_axis)
    if not reduce_axes:
        return
    extent = 1
    for r in reduce_axes:
        extent *= int(r.constant_extent or 1)
    fused = stage.fuse(*reduce_axes) if len(reduce_axes) > 1 else reduce_axes[0]
    serial, lanes = stage.split(fused, factor=threads_for(extent, target))
    stage.reorder(lanes, serial)
    stage.bind(lanes, ts.thread_axis("threadIdx.x"))


def bind_threads(s: Schedule, t: Tensor, target: Target) -> IterVar:
    """``t``'s innermost loop split, its inner part bound to ``threadIdx.x`` and its outer to
    ``blockIdx.x``, the next loop to ``blockIdx.y`` and the rest, fused, to ``blockIdx.z``; returns the
    thread loop (``t`` has at least one data-parallel loop)."""
    stage = s[t]
    axes = list(stage.op.axis)
    block, thread = stage.split(axes[-1], factor=threads_for(int(t.shape[-1]), target))
    outer = axes[:-2] if len(axes) > 2 else []
    rows = [stage.fuse(*outer) if len(outer) > 1 else outer[0]] if outer else []
    rows += axes[-2:-1]
    stage.reorder(*rows, block, thread)
    for loop, tag in zip([block, *reversed(rows)], ("blockIdx.x", "blockIdx.y", "blockIdx.z")):
        stage.bind(loop, ts.thread_axis(tag))
    stage.bind(thread, ts.thread_axis("threadIdx.x"))
    return thread
