"""Two reductions in one GPU kernel without a global synchronisation (``auto_schedule``'s GPU path): the
first (a convolution, the *producer*) computed per block in shared memory, its halo included, and read
from there by the second (a convolution of it, the *reader*): Halide's overlapped tiles.

A stored reduction is chained into the kernel of the reduction that reads it (:func:`chain_reader`) when

- that reduction is the only stage reading it (through inlined stages: a relu, a padding), and reads it
  through a window of its two tiled loops (``y + ry``, a stencil), with no tiled loop elsewhere;
- both can be tiled (constant sizes, one output), the producer is no output, and the reader has a loop
  outside its tiled two (the channels) that its tiles of channels can run over inside the block;
- the producer's region per block (all of it the block reads: every channel, the tile and its halo) and the
  reader's staged inputs per step fit the device's shared memory, the tile shrunk as far as needed, its
  rows and columns first (:func:`chain_tile`), and the halo makes the block compute each of the
  producer's points at most :data:`MAX_RECOMPUTED` times; else the producer stays a kernel of its own. The
  kernel has more than one block (its tiles of channels run in a loop inside the block).

The block then computes the producer's region at its innermost block loop, one thread per point (a region
larger than the block's threads in turns), each point accumulated in a register and stored to shared
memory (:func:`compute_producer`); after a barrier, the reader's tiles of channels are a serial loop inside
the block, each thread's register tile reading the producer from shared memory
(:func:`tesched.nn.gpu_tiles.tile_reduction` with ``read_shared``). Neighbouring blocks recompute the
halo: no block waits for another. ``lower()`` prints how many times the producer's points are computed.
This module decides and schedules; it builds nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

from tesched.nn.gpu_tiles import (REGISTERS, BlockTile, GpuLimits, choose_tile, extents, inputs_of,
                                   reads_through_inlined, reuse, split_threads, staged_bytes, tileable,
                                   tiled_axes)
from tesched.nn.schedule import stored_readers
from tesched.poly.analysis import inlined_body
from tesched.schedule.kinds import AttachType
from tesched.schedule.schedule import Schedule, Stage
from tesched.te.dtype import itemsize
from tesched.te.expr import Expr
from tesched.te.tensor import ComputeOp, IterVar, Tensor, TensorRead
from tesched.te.visit import collect, walk


MAX_RECOMPUTED = 2.0
"""The most times a tile may compute each point of the producer (its halo over its own points); beyond,
two kernels do less work."""
MIN_THREADS = 64
"""Threads per block the tile keeps, shrinking its rows and columns for the producer's region, before it
shrinks the reduction step and the channels (two warps)."""


@dataclass(frozen=True)
class Chain:
    """A producer computed per block of its reader's kernel, the reader's tile, and the producer's region
    per block (bytes, an upper bound)."""

    producer: Tensor
    tile: BlockTile
    region_bytes: int

    @property
    def region(self) -> int:
        """Elements of the producer's region per block (an upper bound)."""
        return self.region_bytes // itemsize(self.producer.dtype)

    def recomputed(self) -> float:
        """The region per block over the producer's points under the block's tile: how many times each
        point is computed (at most; less at the image's edges)."""
        *rest, h, w = (int(d) for d in self.producer.shape)
        return self.region / max(1, prod(rest) * min(self.tile.block[0], h) * min(self.tile.block[1], w))

    def describe(self, reader: str) -> str:
        """One line for people: the producer's region per block and how much of it is recomputed."""
        return (f"{self.producer.op.name}: computed per block in shared memory, halo included ({self.region} "
                f"elements, {self.recomputed():.2f}x the block's own points: neighbouring blocks recompute the "
                f"halo and none waits for another), each point accumulated in a register; {reader} reads it "
                "from there")


def _body(s: Schedule, op: ComputeOp) -> Expr:
    return inlined_body(op, [st.op for st in s.stages if st.attach_type is AttachType.INLINE])


def _through_window(body: Expr, producer: Tensor, tiled: list[IterVar], reduce: list[IterVar]) -> bool:
    """Whether every read of ``producer`` in ``body`` indexes each tiled loop in one index, alone or in a
    sum with a reduce axis (a window), and some read has a window."""
    reads = [r for r in collect(body, TensorRead) if r.tensor.op is producer.op]
    windows = False
    for r in reads:
        for v in tiled:
            where = [e for e in r.indices if any(x is v for x in walk(e))]
            if len(where) != 1:
                return False
            inside = {id(x) for x in walk(where[0])}
            windows |= any(id(a) in inside for a in reduce)
    return bool(reads) and windows


def chain_reader(s: Schedule, st: Stage) -> Stage | None:
    """The reduction ``st`` (a stored reduction, not an output) can be computed per block of: the only
    stage reading it, through a window of its tiled loops (see the module doc); or None."""
    op = st.op
    if st.is_output or not isinstance(op, ComputeOp) or not op.reduce_axis or not tileable(op) or len(op.axis) < 2:
        return None
    readers = stored_readers(s, st)
    if len(readers) != 1 or not isinstance(readers[0].op, ComputeOp):
        return None
    reader = readers[0].op
    if not (reader.reduce_axis and tileable(reader) and len(reader.axis) >= 3):
        return None
    ok = _through_window(_body(s, reader), op.output(0), tiled_axes(reader), list(reader.reduce_axis))
    return readers[0] if ok else None


def chain_tile(s: Schedule, stage: Stage, producer: Tensor, limits: GpuLimits) -> Chain | None:
    """``producer`` computed per block of the kernel of ``stage`` (its reader, :func:`chain_reader`), with
    the tile fitted so that the producer's region and the reader's staged inputs per step fit ``limits``;
    None if no tile fits (or recomputes too much)."""
    reader = stage.op
    assert isinstance(reader, ComputeOp), f"{reader.name} is a reduction"
    body = _body(s, reader)
    staged = [t for t in inputs_of(reader) if reuse(reader, t, tiled_axes(reader)) is not None
              and not reads_through_inlined(s, t, producer)]
    extent = int(reader.axis[-3].constant_extent or 1)
    channels = next((c for c in (REGISTERS, 2) if extent % c == 0), 1)
    tile = _several_blocks(reader, choose_tile(extents(reader), int(reader.reduce_axis[0].constant_extent or 1),
                                               limits, channels=channels))
    if tile is None:
        return None

    def total(t: BlockTile) -> int:
        return staged_bytes(reader, staged, t) + staged_bytes(reader, [producer], t, body, whole=True)
    while total(tile) > limits.shared_bytes:
        smaller = _smaller(tile)
        if smaller is None:
            return None
        tile = smaller
    chain = Chain(producer, tile, staged_bytes(reader, [producer], tile, body, whole=True))
    return chain if chain.recomputed() <= MAX_RECOMPUTED else None


def _smaller(tile: BlockTile) -> BlockTile | None:
    """The next smaller tile when the producer's region does not fit: the register tile, then the threads
    down to :data:`MIN_THREADS`, the reduction step, the channels, the rest of the threads; None at one
    thread."""
    (ty, tx), (ry, rx) = tile.threads, tile.regs
    if ry * rx > 1:
        return replace(tile, regs=(ry // 2, rx) if ry >= rx else (ry, rx // 2))
    if ty * tx > MIN_THREADS:
        return replace(tile, threads=(ty // 2, tx) if ty >= tx else (ty, tx // 2))
    if tile.ktile > 1:
        return tile.with_ktile(tile.ktile // 2)
    if tile.channels > 1:
        return replace(tile, channels=tile.channels // 2)
    if ty * tx > 1:
        return replace(tile, threads=(ty // 2, tx) if ty >= tx else (ty, tx // 2))
    return None


def _several_blocks(reader: ComputeOp, tile: BlockTile) -> BlockTile | None:
    """``tile`` halved until the kernel has more than one block (its tiles of channels run inside a block,
    so a kernel of one block would have no block loop to run them in), or None if it cannot have."""
    outside = prod(int(a.constant_extent or 1) for a in reader.axis[:-3])
    while outside * prod(-(-e // b) for e, b in zip(extents(reader), tile.block)) < 2:
        (ty, tx), (ry, rx) = tile.threads, tile.regs
        if ry * rx > 1:
            tile = replace(tile, regs=(ry // 2, rx) if ry >= rx else (ry, rx // 2))
        elif ty * tx > 1:
            tile = replace(tile, threads=(ty // 2, tx) if ty >= tx else (ty, tx // 2))
        else:
            return None
    return tile


def compute_producer(s: Schedule, producer: Tensor, host: Tensor, block_loop: IterVar, tile: BlockTile) -> None:
    """``producer`` computed per block of ``host`` (at ``block_loop``) in shared memory, its last two loops
    spread over the block's threads, each point accumulated in a register write cache."""
    acc = s.cache_write(producer, "local")
    stage = s[producer]
    stage.compute_at(s[host], block_loop)
    stage.memory_scope = "shared"
    split_threads(stage, stage.op.axis[-2:], tile.threads)
    s[acc].compute_at(stage, stage.leaf_iter_vars[-1])
    s[acc].memory_scope = "local"
