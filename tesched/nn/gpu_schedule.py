"""Default GPU schedules of the operator library: every stage bound to blocks and threads, a thread per
output element, for one op or a fused group of ops.

:func:`gpu_default_schedule` takes the output tensor(s) of a computation built from :mod:`tesched.nn` ops
and returns a schedule for a GPU target (``opencl`` or ``cuda``) in which

- every stage without a reduction that is not an output is inlined into its readers, as on the CPU;
- a reduction (the *anchor*: conv2d, dense, a pool, a sum) read only by one output of its shape is
  computed in that output's thread loop: each thread computes its element of the anchor in a register
  (its reduction loops serial) and applies the elementwise epilogue to it: one kernel per group;
- any other reduction is stored whole in device memory (its own kernel, bound like an output);
- an output's (or a stored reduction's) innermost loop is split by :func:`threads_for`, the inner part
  bound to ``threadIdx.x`` and the outer to ``blockIdx.x``; the next loop outwards to ``blockIdx.y``, and
  the loops outside it, fused, to ``blockIdx.z`` (a fused loop of constant extents: the regions of the
  stages computed inside stay exact, one element per thread);
- a reduction to a scalar (no data-parallel loop) is a cross-thread reduction over one block.

The choices are simple and always legal; they are not tuned (no shared-memory staging: see
:mod:`tesched.recipes.gemm_gpu` for a GEMM that has it). This module chooses loops; it declares no
computation.
"""
from __future__ import annotations

from typing import Sequence

import tesched as ts
from tesched.nn.schedule import inlined_schedule, stored_readers
from tesched.schedule.schedule import Schedule
from tesched.target import Target
from tesched.te.tensor import IterVar, Tensor

THREADS = 64
"""Threads per block of a default GPU schedule: two warps, a fraction of any device's limit."""


def threads_for(elements: int, target: Target) -> int:
    """Threads per block for a loop of ``elements`` iterations: :data:`THREADS` (within ``target``'s
    limit), or fewer when there are fewer elements."""
    return max(1, min(elements, THREADS, target.gpu_max_threads))


def gpu_default_schedule(outputs: Tensor | Sequence[Tensor], target: Target) -> Schedule:
    """A GPU schedule computing ``outputs``, epilogues fused with their anchors (see the module doc)."""
    s, outs, computes = inlined_schedule(outputs)
    hosts: dict[int, IterVar] = {}
    for st in reversed(computes):       # consumers first: a reduction's host is bound before it is placed
        if st.is_output or not st.op.reduce_axis:
            continue
        readers = stored_readers(s, st)
        host = readers[0].op.output(0) if len(readers) == 1 else None
        if host is not None and readers[0].is_output and host.shape == st.op.output(0).shape and host.shape:
            if id(host.op) not in hosts:
                hosts[id(host.op)] = bind_threads(s, host, target)
            st.compute_at(s[host], hosts[id(host.op)])
        else:
            bind_elements(s, st.op.output(0), target)
    for out in outs:
        if id(out.op) not in hosts:
            bind_elements(s, out, target)
    return s


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
