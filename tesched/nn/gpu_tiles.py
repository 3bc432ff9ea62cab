"""Block and thread tiles for GPU schedules: their sizes, from a device's limits, and their application to
a stage, the operands of a reduction staged in shared memory (used by the operator library's default GPU
schedules, :mod:`tesched.nn.gpu_schedule`, and by ``auto_schedule``'s GPU path, :mod:`tesched.autoschedule.gpu`).

- :func:`limits_of`: threads per block and shared memory per block of the device a GPU target runs on
  (OpenCL: the default device's, through pyopencl, when there is one; else the target's presets).
- :func:`choose_tile`: a :class:`BlockTile` for the last two data-parallel loops of a stage: threads per
  block (up to 16 x 16, within the limit), each thread's register tile (up to 4 x 4 accumulators: 4 along
  a loop of at least 128 iterations, 2 from 32), and the reduction step ``ktile`` (elements of the first
  reduce axis staged per step, 16 at most); :func:`reduction_tile` adds a tile of *channels* along the
  loop outside those two when an input does not depend on it (a convolution's output channels), and
  :func:`fit_shared` shrinks the tile until the staged inputs fit (by :func:`staged_bytes`, an upper
  bound of their footprints per block and step).
- :func:`reuse`: why an input of a reduction is worth staging in shared memory (the block's threads read
  overlapping elements of it: a loop of the tile it does not depend on, or a window, the halo of a
  stencil), or None.
- :func:`tile_reduction`: the *host* stage (an output, or the write-back of a reduction stored whole)
  tiled into blocks and threads, its *anchor* (the reduction) computed per block in registers, its
  reduction walked ``ktile`` at a time, the reused inputs copied into shared memory per step by all the
  block's threads (``cache_read(.., "shared")``, ``compute_at`` the step loop; the kernel printer adds
  the barriers the dependence test asks for). Given producers its caller computes per block in shared
  memory (``read_shared``: a convolution of a convolution, :mod:`tesched.autoschedule.gpu_chain`), the
  inputs reading them are not staged and the tiles of channels loop inside the block.
- :func:`tile_elements` and :func:`compute_shared`: a stage without reduction tiled the same way (one
  element per thread), and a producer of it computed per block in shared memory, halo included.

Sizes must be constant. This module chooses no stage to fuse or inline (its callers do) and checks
nothing: the schedule's legality (threads, shared bytes) is the kernel printer's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import tesched as ts
from tesched.arith.interval import VarRanges, bound
from tesched.errors import TeschedError
from tesched.poly.analysis import inlined_body
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage
from tesched.target import Target
from tesched.te.dtype import itemsize
from tesched.te.expr import Const, Expr
from tesched.te.tensor import ComputeOp, IterVar, Operation, Tensor, TensorRead, output_bodies
from tesched.te.visit import collect, structural_key, walk

THREADS = 16
"""Threads per block along each of the two tiled loops, at most (256 per block)."""
REGISTERS = 4
"""Accumulators per thread along each tiled loop, at most (a 4 x 4 register tile)."""
KTILE = 16
"""Iterations of the first reduce axis staged per step, at most."""


@dataclass(frozen=True)
class GpuLimits:
    """What a block may use on the device: threads and shared-memory bytes, and where they were read."""

    max_threads: int
    shared_bytes: int
    source: str

    def describe(self) -> str:
        """One line for people: the limits and where they were read."""
        return f"{self.source}: {self.max_threads} threads and {self.shared_bytes >> 10} KiB shared memory per block"


def limits_of(target: Target) -> GpuLimits:
    """The limits of ``target``'s device: for OpenCL, the default device's when pyopencl finds one."""
    if target.backend == "opencl":
        try:
            from tesched.driver.gpu import opencl_queue
            device = opencl_queue().device
            return GpuLimits(int(device.max_work_group_size), int(device.local_mem_size),
                             f"OpenCL device {device.name.strip()!r}")
        except (ImportError, TeschedError):
            pass
    return preset_limits(target)


def preset_limits(target: Target) -> GpuLimits:
    """The limits ``target`` states (its presets, or a device's it was given)."""
    return GpuLimits(target.gpu_max_threads, target.gpu_shared_bytes, f"{target.name} target")


@dataclass(frozen=True)
class BlockTile:
    """A block of ``threads[0] x threads[1]`` threads, each computing ``regs[0] x regs[1]`` elements of the
    two tiled loops for ``channels`` iterations of the loop outside them (a convolution's output channels),
    and the reduction staged ``ktile`` iterations of its first axis at a time (0: no reduction)."""

    threads: tuple[int, int]
    regs: tuple[int, int]
    ktile: int = 0
    channels: int = 1

    @property
    def block(self) -> tuple[int, int]:
        """Elements of the two tiled loops per block."""
        return self.threads[0] * self.regs[0], self.threads[1] * self.regs[1]

    def with_ktile(self, ktile: int) -> "BlockTile":
        """This tile with reduction steps of ``ktile``."""
        return replace(self, ktile=ktile)

    def describe(self) -> str:
        """One line for people: the block, its threads, each thread's register tile and the step."""
        (by, bx), (ty, tx), (ry, rx) = self.block, self.threads, self.regs
        c = f"{self.channels} x " if self.channels > 1 else ""
        text = f"block tile {c}{by} x {bx}: {ty} x {tx} threads, each a {c}{ry} x {rx} register tile"
        return text + (f", reduction in steps of {self.ktile}" if self.ktile else "")


def _registers(extent: int) -> int:
    return REGISTERS if extent >= 128 else 2 if extent >= 32 else 1


def choose_tile(extents: tuple[int, int], reduce_extent: int, limits: GpuLimits, registers: bool = True,
                channels: int = 1) -> BlockTile:
    """The tile of two loops of ``extents`` (the first may be 1: a one-dimensional tile, up to 256 threads
    along the second) within ``limits``; ``reduce_extent`` is the first reduce axis's (0: none); without
    ``registers``, one element per thread. With ``channels``, the register tile along the two loops shrinks
    until it holds at most 16 accumulators with them."""
    regs = [_registers(e) if registers else 1 for e in extents]
    while regs[0] * regs[1] * channels > REGISTERS * REGISTERS:
        k = 0 if regs[0] >= regs[1] else 1
        regs[k] //= 2
    most = (THREADS, THREADS) if extents[0] > 1 else (1, THREADS * THREADS)
    threads = [max(1, min(m, math.ceil(e / r))) for m, e, r in zip(most, extents, regs)]
    while threads[0] * threads[1] > max(1, limits.max_threads):
        k = 0 if threads[0] >= threads[1] else 1
        threads[k] = max(1, threads[k] // 2)
    return BlockTile((threads[0], threads[1]), (regs[0], regs[1]), min(KTILE, reduce_extent), channels)


def _reads(exprs: Sequence[Expr]) -> list[TensorRead]:
    return [r for e in exprs for r in collect(e, TensorRead)]


def tiled_axes(op: ComputeOp) -> list[IterVar]:
    """The loops a tile covers: the last two data-parallel axes (one if there is one)."""
    return list(op.axis[-2:])


def reuse(op: ComputeOp | Expr, tensor: Tensor, tiled: Sequence[IterVar]) -> str | None:
    """Why the threads of a block computing ``op`` (or an expression: a body with stages inlined) over
    ``tiled`` read overlapping elements of ``tensor`` (so that staging it in shared memory saves global
    traffic), or None."""
    exprs = output_bodies(op.body) if isinstance(op, ComputeOp) else [op]
    reads = [r for r in _reads(exprs) if r.tensor.op is tensor.op]
    if not reads:
        return None
    points = {tuple(structural_key(e) for e in r.indices) for r in reads}
    if len(points) > 1:
        return f"read at {len(points)} offsets (a stencil): staged with its halo"
    indices = reads[0].indices
    window = [v.name for v in tiled if not any(e is v for e in indices)
              and any(x is v for e in indices for x in walk(e))]
    broadcast = [v.name for v in tiled if not any(x is v for e in indices for x in walk(e))]
    if broadcast:
        return f"does not depend on {', '.join(broadcast)}: the block's threads along it read the same elements"
    if window:
        return f"read through windows of {', '.join(window)} (a stencil): staged with its halo"
    return None


def staged_bytes(op: ComputeOp, tensors: Sequence[Tensor], tile: BlockTile, body: Expr | None = None,
                 whole: bool = False) -> int:
    """Shared memory the copies of ``tensors`` take per step when ``op`` is tiled by ``tile``: per tensor,
    the box its reads span over one block and one step (an upper bound of the exact footprint). ``body``
    (``op``'s body with stages inlined) is where the reads are looked for; with ``whole``, over the whole
    reduction (a producer computed once per block)."""
    tiled = tiled_axes(op)
    spans = {id(axis): 1 for axis in op.axis}                     # iterations of each loop per block and step
    spans.update((id(axis), tile.channels) for axis in op.axis[-3:-2])
    spans.update((id(axis), b) for axis, b in zip(tiled, tile.block[-len(tiled):]))
    spans.update((id(r), max(1, tile.ktile) if k == 0 and not whole else int(r.constant_extent or 1))
                 for k, r in enumerate(op.reduce_axis))
    ranges = VarRanges()
    for axis in [*op.axis, *op.reduce_axis]:
        ranges = ranges.where(axis, 0, spans[id(axis)] - 1)
    exprs = output_bodies(op.body) if body is None else [body]
    total = 0
    for tensor in tensors:
        reads = [r for r in _reads(exprs) if r.tensor.op is tensor.op]
        size = itemsize(tensor.dtype)
        for d, extent in enumerate(tensor.shape):
            boxes = [bound(r.indices[d], ranges) for r in reads]
            low, high = min(b[0] for b in boxes), max(b[1] for b in boxes)
            size *= int(min(high - low + 1, extent)) if isinstance(extent, int) else int(high - low + 1)
        total += size
    return total


def extents(op: ComputeOp) -> tuple[int, int]:
    """The extents of ``op``'s tiled loops, as ``(1, n)`` when it has one."""
    sizes = [int(a.constant_extent or 1) for a in tiled_axes(op)]
    return (1, sizes[0]) if len(sizes) == 1 else (sizes[0], sizes[1])


def reduction_tile(op: ComputeOp, limits: GpuLimits) -> BlockTile:
    """The tile of reduction ``op``: :func:`choose_tile`, fitted by :func:`fit_shared`; the loop
    outside the tiled two is tiled by :data:`REGISTERS` channels (or 2) when they divide its extent (a
    thread's registers are whole channel tiles) and an input does not depend on it (a convolution's
    window, reused for each output channel)."""
    outer = op.axis[-3:-2]
    shared = [t for t in inputs_of(op) if outer and reuse(op, t, outer) is not None]
    extent = int(outer[0].constant_extent or 1) if outer else 1
    channels = next((c for c in (REGISTERS, 2) if shared and extent % c == 0), 1)
    tile = choose_tile(extents(op), int(op.reduce_axis[0].constant_extent or 1), limits, channels=channels)
    return fit_shared(op, tile, limits)


def worth_staging(op: Operation) -> bool:
    """Whether ``op`` is a reduction that can be tiled and whose block's threads share an input."""
    return (tileable(op) and isinstance(op, ComputeOp) and bool(op.reduce_axis)
            and any(reuse(op, t, tiled_axes(op)) is not None for t in inputs_of(op)))


def fit_shared(op: ComputeOp, tile: BlockTile, limits: GpuLimits) -> BlockTile:
    """``tile`` shrunk until the inputs of ``op`` worth staging fit in shared memory (by
    :func:`staged_bytes`, an upper bound): the reduction step halved, then the channel tile, then the
    register tile, then the threads."""
    staged = [t for t in inputs_of(op) if reuse(op, t, tiled_axes(op)) is not None]
    while staged_bytes(op, staged, tile) > limits.shared_bytes:
        (ty, tx), (ry, rx) = tile.threads, tile.regs
        if tile.ktile > 1:
            tile = tile.with_ktile(tile.ktile // 2)
        elif tile.channels > 1:
            tile = replace(tile, channels=tile.channels // 2)
        elif ry * rx > 1:
            tile = replace(tile, regs=(ry // 2, rx) if ry >= rx else (ry, rx // 2))
        elif ty * tx > 1:
            tile = replace(tile, threads=(ty // 2, tx) if ty >= tx else (ty, tx // 2))
        else:
            break
    return tile


def tileable(op: Operation) -> bool:
    """Whether ``op`` can be tiled here: one output, at least one data-parallel loop, constant sizes."""
    return (isinstance(op, ComputeOp) and op.num_outputs == 1 and bool(op.axis)
            and all(isinstance(d, int) for d in op.output(0).shape)
            and all(r.constant_extent is not None for r in op.reduce_axis))


def reads_pointwise(s: Schedule, host: Stage, anchor: Stage) -> bool:
    """Whether ``host`` (without reduction) reads ``anchor`` only at its own point, through the stages
    inlined into it: then ``anchor`` can be computed per block in registers and its epilogue fused. Along
    an axis of one iteration the point is index 0 (a broadcasting epilogue reads size-1 axes at 0)."""
    op = host.op
    if not isinstance(op, ComputeOp) or op.reduce_axis or op.output(0).shape != anchor.op.output(0).shape:
        return False
    inlined = [st.op for st in s.stages if st.attach_type is AttachType.INLINE]
    reads = [r for r in _reads([inlined_body(op, inlined)]) if r.tensor.op is anchor.op]
    return all(len(r.indices) == len(op.axis) and all(_at(e, a) for e, a in zip(r.indices, op.axis)) for r in reads)


def _at(index: Expr, axis: IterVar) -> bool:
    """Whether ``index`` is ``axis``'s value: the axis itself, or 0 along an axis of one iteration."""
    return index is axis or (isinstance(index, Const) and index.value == 0 and axis.constant_extent == 1)


@dataclass
class TiledReduction:
    """What :func:`tile_reduction` did: the host's block loop, the anchor's step loop, and per input of the
    anchor its shared copy and why (or why it stays in global memory)."""

    block_loop: IterVar
    staged: list[tuple[str, Tensor, str]]
    unstaged: list[tuple[str, str]]


def split_threads(stage: Stage, axes: Sequence[IterVar], threads: tuple[int, int]) -> None:
    """``axes`` (the last two, or one, of a stage computed per block) split by ``threads`` and the inner
    parts bound to ``threadIdx.y``/``threadIdx.x``; a single axis is spread over both thread indices."""
    ty, tx = ts.thread_axis("threadIdx.y"), ts.thread_axis("threadIdx.x")
    if len(axes) == 1:
        outer, inner = stage.split(axes[0], factor=threads[0] * threads[1])
        rows, cols = stage.split(inner, factor=threads[1])
        stage.reorder(outer, rows, cols)
        stage.bind(rows, ty)
        stage.bind(cols, tx)
        return
    oy, iy = stage.split(axes[-2], factor=threads[0])
    ox, ix = stage.split(axes[-1], factor=threads[1])
    stage.reorder(oy, ox, iy, ix)
    stage.bind(iy, ty)
    stage.bind(ix, tx)


def _block_and_threads(s: Schedule, t: Tensor, tile: BlockTile,
                       channels_inside: bool = False) -> tuple[IterVar, IterVar]:
    """``t``'s tiled loops split into block, thread and register loops, bound; the rest of its loops fused
    into ``blockIdx.z``, except, with ``channels_inside``, the tiles of channels: a serial loop inside the
    block. Returns the innermost block loop and the loop to compute the block's register tile at (the
    block loop, or that serial loop)."""
    stage = s[t]
    axes = list(stage.op.axis)
    tiled = axes[-2:]
    rest = axes[:-2]
    blocks: list[IterVar] = []
    threads: list[IterVar] = []
    regs: list[IterVar] = []
    serial: list[IterVar] = []
    if len(axes) > 2 and (tile.channels > 1 or channels_inside):
        outer, inner = stage.split(axes[-3], factor=tile.channels)
        rest, serial = ([*axes[:-3]], [outer]) if channels_inside else ([*axes[:-3], outer], [])
        regs.append(inner)
    for axis, b, r in zip(tiled, tile.block[-len(tiled):], tile.regs[-len(tiled):]):
        outer, inner = stage.split(axis, factor=b)
        thread, reg = stage.split(inner, factor=r)
        blocks.append(outer)
        threads.append(thread)
        regs.append(reg)
    outer_loops = [stage.fuse(*rest) if len(rest) > 1 else rest[0]] if rest else []
    stage.reorder(*outer_loops, *blocks, *serial, *threads, *regs)
    tags = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
    for loop, tag in zip([*reversed(blocks), *outer_loops], tags):
        stage.bind(loop, ts.thread_axis(tag))
    for loop, tag in zip(reversed(threads), ("threadIdx.x", "threadIdx.y")):
        stage.bind(loop, ts.thread_axis(tag))
    return blocks[-1], (serial or blocks)[-1]


def tile_reduction(s: Schedule, host: Tensor, anchor: Tensor, tile: BlockTile,
                   read_shared: Sequence[Tensor] = ()) -> TiledReduction:
    """``host`` tiled by ``tile``; ``anchor`` (a reduction of ``host``'s shape that ``host`` reads
    elementwise, or ``host``'s write cache) computed per block, each thread's elements in registers, its
    first reduce axis in steps of ``tile.ktile`` with its reused inputs staged in shared memory per step.
    ``read_shared``: producers the caller computes per block in shared memory (their region serves every
    tile of channels, which are then a serial loop inside the block); the inputs that read them (through
    inlined stages) are not staged."""
    block_loop, at = _block_and_threads(s, host, tile, channels_inside=bool(read_shared))
    stage = s[anchor]
    stage.compute_at(s[host], at)
    stage.memory_scope = "local"
    op = stage.op
    assert isinstance(op, ComputeOp) and op.reduce_axis, f"{op.name} is a reduction"
    tiled = tiled_axes(op)
    pairs = [stage.split(axis, factor=r) for axis, r in zip(tiled, tile.regs[-len(tiled):])]
    first, *others = op.reduce_axis
    ko, ki = stage.split(first, factor=max(1, tile.ktile))
    stage.reorder(*op.axis[:-3], ko, *(p[0] for p in pairs), ki, *others, *op.axis[-3:-2], *(p[1] for p in pairs))
    for (loop, _), tag in zip(reversed(pairs), ("threadIdx.x", "threadIdx.y")):
        stage.bind(loop, ts.thread_axis(tag))
    staged, unstaged = [], []
    for tensor in inputs_of(op):
        why = reuse(op, tensor, tiled)
        shared = [p.op.name for p in read_shared if reads_through_inlined(s, tensor, p)]
        if shared:
            unstaged.append((tensor.op.name, f"read from {shared[0]}, computed per block in shared memory"))
            continue
        if why is None:
            unstaged.append((tensor.op.name, "each thread reads its own elements: read from global memory"))
            continue
        cache = s.cache_read(tensor, "shared", [anchor])
        s[cache].compute_at(stage, ko)
        split_threads(s[cache], s[cache].op.axis[-2:], tile.threads)
        staged.append((tensor.op.name, cache, why))
    return TiledReduction(block_loop, staged, unstaged)


def reads_through_inlined(s: Schedule, t: Tensor, producer: Tensor) -> bool:
    """Whether ``t`` is ``producer`` or an inlined stage reading it (directly or through others)."""
    if t.op is producer.op:
        return True
    return s[t].attach_type is AttachType.INLINE and any(reads_through_inlined(s, u, producer)
                                                         for u in t.op.input_tensors)


def inputs_of(op: ComputeOp) -> list[Tensor]:
    """The tensors ``op`` reads, each once, in the order it reads them."""
    seen: dict[int, Tensor] = {}
    for read in _reads(output_bodies(op.body)):
        seen.setdefault(id(read.tensor.op), read.tensor)
    return list(seen.values())


def tile_elements(s: Schedule, t: Tensor, tile: BlockTile) -> IterVar:
    """``t`` (no reduction) tiled by ``tile``, ``tile.regs`` elements per thread; returns the block loop."""
    return _block_and_threads(s, t, tile)[0]


def compute_shared(s: Schedule, t: Tensor, host: Tensor, block_loop: IterVar, tile: BlockTile) -> None:
    """``t`` computed per block of ``host`` in shared memory (its region there, halo included), its last
    two loops spread over the block's threads."""
    stage = s[t]
    stage.compute_at(s[host], block_loop)
    stage.memory_scope = "shared"
    split_threads(stage, stage.op.axis[-2:], tile.threads)
