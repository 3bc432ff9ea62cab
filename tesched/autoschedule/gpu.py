"""``auto_schedule`` for a GPU target (``opencl``, ``cuda``): block and thread tiles, shared-memory staging,
and why, for any pipeline of constant sizes.

The decisions, in order (sizes and mechanics: :mod:`tesched.nn.gpu_tiles`):

1. Every stage without a reduction that is not an output is inlined into its readers (an epilogue, a
   padding), unless step 4 gives it a shared tile.
2. A reduction (the *anchor*) read by exactly one output, of its shape, elementwise, is fused with it:
   the output (the *host*) is tiled into blocks and threads, and the anchor computed per block, each
   thread's elements in registers, with the epilogue applied on the way out: one kernel. Any other
   reduction, and a reduction that is an output, gets a register write cache and is its own kernel.
3. An anchor's first reduce axis is walked ``ktile`` at a time; per step, every input the block's threads
   share (a tile loop it does not depend on, or a stencil's window) is copied into shared memory by all of
   them (``cache_read(.., "shared")``, halo included). The barriers come from the dependence test of the
   kernel printer.
4. An output without reduction is tiled one element per thread; a producer it reads at several offsets
   (a stencil, as a blur's first pass) is computed per block in shared memory, halo included, and so is
   an input read at several offsets by either.
5. What cannot be tiled (symbolic sizes, a reduction to a scalar, several outputs of one operation) is
   bound one thread per element (:mod:`tesched.nn.gpu_schedule`).

The tiles are sized so that the staged inputs fit the device's shared memory (by an upper bound of their
footprints, :func:`tesched.nn.gpu_tiles.fit_shared`), and the schedule is checked by lowering it and
printing its kernels against the device's limits; a schedule that fails falls back to unfused
reductions, then to one thread per element, and the failure is recorded. Nothing is built (no compiler
runs) or timed here.
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Sequence

from tesched.autoschedule.gpu_chain import Chain, chain_reader, chain_tile, compute_producer
from tesched.codegen.gpu import generate_gpu
from tesched.errors import ScheduleError
from tesched.lower.pipeline import check_schedule, lower, lower_for_target
from tesched.nn.gpu_schedule import bind_elements
from tesched.nn.gpu_tiles import (GpuLimits, TiledReduction, choose_tile, compute_shared, extents,
                                   limits_of, reads_pointwise, reduction_tile, reuse, tile_elements,
                                   tile_reduction, tileable, tiled_axes)
from tesched.nn.schedule import stored_readers
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage, create_schedule
from tesched.target import Target, as_target
from tesched.te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor


@dataclass
class GpuExplanation:
    """What the GPU ``auto_schedule`` decided: per kernel stage its tile and staging, with reasons."""

    target: str
    limits: GpuLimits
    kernels: list[list[str]]
    shared: list[int]
    seconds: float
    rejected: list[str] = field(default_factory=list)

    def text(self, outputs: Sequence[str]) -> str:
        lines = [f"auto_schedule for {', '.join(outputs)} on {self.target} ({self.limits.describe()}; "
                 f"decided in {self.seconds * 1e3:.0f} ms)",
                 f"{len(self.shared)} kernel(s), shared memory per block: "
                 + ", ".join(f"{b} bytes" for b in self.shared)]
        for block in self.kernels:
            lines.append(block[0])
            lines += [f"    - {line}" for line in block[1:]]
        if self.rejected:
            lines.append("rejected when checked, then simplified:")
            lines += [f"    - {r}" for r in self.rejected]
        return "\n".join(lines)


_explanations: "weakref.WeakKeyDictionary[Schedule, GpuExplanation]" = weakref.WeakKeyDictionary()


def gpu_explanation(sch: Schedule) -> str | None:
    """The explanation of a schedule made by :func:`gpu_auto_schedule`, or None."""
    info = _explanations.get(sch)
    return None if info is None else info.text([op.name for op in sch.outputs])


def gpu_target(target: object) -> Target | None:
    """``target`` as a GPU :class:`~tesched.target.Target` (None: the current target), or None if it
    is not one (a CPU target, or a cost-model Machine)."""
    if target is None or isinstance(target, (str, Target)):
        chosen = as_target(target)
        return chosen if chosen.backend != "c" else None
    return None


@dataclass(frozen=True)
class _Options:
    fuse: bool = True           # reductions fused with their elementwise output
    tiles: bool = True          # False: one thread per element everywhere


@dataclass(frozen=True)
class _Context:
    target: Target              # with the device's limits
    limits: GpuLimits
    options: _Options


def gpu_auto_schedule(ops: Sequence[Operation], target: Target) -> Schedule:
    """A GPU schedule of ``ops`` (see the module doc), checked against ``target``'s device limits."""
    start = time.perf_counter()
    limits = limits_of(target)
    checked = target.with_gpu_limits(limits.max_threads, limits.shared_bytes, 0)
    rejected: list[str] = []
    options = _Options()
    while True:
        sch = create_schedule(list(ops))
        try:
            notes = _schedule(sch, _Context(checked, limits, options))
            check_schedule(sch)
            shared = _shared_bytes(sch, checked)
            break
        except ScheduleError as err:
            if not options.tiles:
                raise
            options, note = _simpler(options, err)
            rejected.append(note)
    _explanations[sch] = GpuExplanation(target.name, limits, notes, shared, time.perf_counter() - start, rejected)
    return sch


def _simpler(options: _Options, err: ScheduleError) -> tuple[_Options, str]:
    """The next options to try after ``err``: unfused reductions, then one thread per element."""
    if options.fuse:
        return _Options(fuse=False), f"reductions stored whole instead of fused: {err}"
    return _Options(tiles=False), f"one thread per element instead of tiles: {err}"


def _shared_bytes(sch: Schedule, target: Target) -> list[int]:
    """Shared memory of each kernel of ``sch`` (its kernels printed, and so checked, for ``target``)."""
    args = [st.op.output(0) for st in sch.stages if isinstance(st.op, PlaceholderOp)]
    args += [op.output(k) for op in sch.outputs for k in range(op.num_outputs)]
    src = generate_gpu(lower_for_target(lower(sch, args), target), target)
    return [k.shared_bytes for k in src.kernels]


def _schedule(s: Schedule, ctx: _Context) -> list[list[str]]:
    """Apply the decisions of the module doc to ``s``; returns the explanation, a block per kernel stage."""
    computes = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    inlined = [st for st in computes if not st.is_output and not st.op.reduce_axis]
    for st in inlined:
        st.compute_inline()
    notes: list[list[str]] = []
    fused: dict[int, Stage] = {}                      # id(output op) -> the anchor fused into it
    chains: dict[int, Chain] = {}                     # id(reduction op) -> the producer computed per block
    stored: list[Stage] = []                          # reductions stored whole, each its own kernel
    fuse = ctx.options.fuse and ctx.options.tiles
    for st in reversed(computes):
        if st.is_output or not st.op.reduce_axis:
            continue
        reader = chain_reader(s, st) if fuse else None
        producers = {id(c.producer.op) for c in chains.values()}
        if reader is not None and id(reader.op) not in chains and id(reader.op) not in producers:
            chain = chain_tile(s, reader, st.op.output(0), ctx.limits)
            if chain is not None:
                chains[id(reader.op)] = chain
                continue
        readers = stored_readers(s, st)
        host = readers[0] if len(readers) == 1 else None
        if (fuse and host is not None and host.is_output and id(host.op) not in fused
                and tileable(host.op) and tileable(st.op) and reads_pointwise(s, host, st)):
            fused[id(host.op)] = st
        else:
            stored.append(st)
    for st in stored:
        notes.append(_kernel(s, st.op.output(0), None, ctx, chains.get(id(st.op))))
    for op in s.outputs:
        anchor = fused.get(id(op))
        notes.append(_kernel(s, op.output(0), anchor, ctx, chains.get(id((anchor or s[op]).op))))
    names = [st.op.name for st in inlined if st.attach_type is AttachType.INLINE]
    if names:
        notes.append(["inlined into their readers (elementwise, recomputed where read): " + ", ".join(names)])
    return notes


def _kernel(s: Schedule, t: Tensor, anchor: Stage | None, ctx: _Context, chain: Chain | None = None) -> list[str]:
    """Schedule the kernel whose outermost stage is ``t`` (an output, or a reduction stored whole), with
    ``anchor`` fused into it and ``chain``'s producer computed per block; returns its explanation."""
    op = s[t].op
    if not ctx.options.tiles or not tileable(op):
        bind_elements(s, t, ctx.target)
        return [f"{op.name}: one thread per element", "not tiled: " + _untiled(op, ctx.options)]
    assert isinstance(op, ComputeOp)
    if anchor is None and not op.reduce_axis:
        return _pointwise_kernel(s, t, ctx.limits)
    if anchor is None:
        anchor_t = s.cache_write(t, "local")
        head = f"{op.name}: a kernel; its reduction accumulated in a register write cache {anchor_t.op.name}"
    else:
        anchor_t = anchor.op.output(0)
        head = f"{op.name}: a kernel fused with the reduction {anchor.op.name} (its epilogue)"
    anchor_op = s[anchor_t].op
    assert isinstance(anchor_op, ComputeOp)
    first = anchor_op.reduce_axis[0]
    tile = reduction_tile(anchor_op, ctx.limits) if chain is None else chain.tile
    done = tile_reduction(s, t, anchor_t, tile, [chain.producer] if chain is not None else [])
    lines = [head + f", {tile.describe()} ({first.name})", _outer(op, tile.channels, chain is not None),
             *_staging(done, first.name, anchor_op.name)]
    if chain is not None:
        compute_producer(s, chain.producer, t, done.block_loop, tile)
        lines.append(chain.describe(anchor_op.name))
    return lines


def _untiled(op: Operation, options: _Options) -> str:
    if not options.tiles:
        return "the tiled schedules were rejected (below)"
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        return "an operation of several outputs"
    if not op.axis:
        return "a scalar" + (": its reduction spread over one block's threads" if op.reduce_axis else "")
    return "symbolic sizes"


def _outer(op: ComputeOp, channels: int = 1, inside: bool = False) -> str:
    tiled = tiled_axes(op)
    where = "blockIdx.y/x and threadIdx.y/x" if len(tiled) == 2 else "blockIdx.x and threadIdx.y/x"
    text = f"tiled loops {', '.join(a.name for a in tiled)} -> {where}"
    rest = [a.name for a in op.axis[:-2]]
    if inside:
        text += (f"; {rest[-1]} in tiles of {channels} per thread, a serial loop inside the block (the "
                 "producer's region serves each)")
        rest = rest[:-1]
    elif channels > 1:
        text += f"; {rest[-1]} in tiles of {channels} per thread (the staged window serves each)"
        rest[-1] += ".outer"
    return text + (f"; {', '.join(rest)} fused -> blockIdx.z" if rest else "")


def _staging(done: TiledReduction, axis: str, anchor: str) -> list[str]:
    lines = [f"{anchor}: each thread's elements in registers, computed per block"]
    lines += [f"{name}: staged in shared memory per step of {axis} ({cache.op.name}): {why}"
              for name, cache, why in done.staged]
    lines += [f"{name}: not staged: {why}" for name, why in done.unstaged]
    return lines


def _pointwise_kernel(s: Schedule, t: Tensor, limits: GpuLimits) -> list[str]:
    """An output without reduction, one element per thread; its stencil producers in shared memory."""
    op = s[t].op
    assert isinstance(op, ComputeOp)
    tile = choose_tile(extents(op), 0, limits, registers=False)
    tiled = tiled_axes(op)
    producers = [(p, why) for p in _reads(s, op) if (why := reuse(op, p, tiled)) is not None]
    block_loop = tile_elements(s, t, tile)
    lines = [f"{op.name}: a kernel, {tile.describe()}", _outer(op)]
    for p, why in producers:
        p_op = s[p].op
        if isinstance(p_op, ComputeOp) and not p_op.reduce_axis and s[p].attach_type is AttachType.INLINE \
                and tileable(p_op):
            for q in _reads(s, p_op):
                q_why = reuse(p_op, q, tiled_axes(p_op))
                if q_why is not None and _stored(s, q):
                    cache = s.cache_read(q, "shared", [p])
                    compute_shared(s, cache, t, block_loop, tile)
                    lines.append(f"{q.op.name}: staged in shared memory per block ({cache.op.name}), read by "
                                 f"{p_op.name}: {q_why}")
            compute_shared(s, p, t, block_loop, tile)
            lines.append(f"{p_op.name}: computed per block in shared memory, halo included: {why}")
        elif _stored(s, p):
            cache = s.cache_read(p, "shared", [t])
            compute_shared(s, cache, t, block_loop, tile)
            lines.append(f"{p.op.name}: staged in shared memory per block ({cache.op.name}): {why}")
    return lines


def _stored(s: Schedule, t: Tensor) -> bool:
    """Whether ``t`` is in global memory when its readers run (an input, or a stage stored whole)."""
    st = s[t]
    return not isinstance(st.op, ComputeOp) or st.attach_type is AttachType.ROOT


def _reads(s: Schedule, op: ComputeOp) -> list[Tensor]:
    return [t for t in op.input_tensors if t.op in [st.op for st in s.stages]]
