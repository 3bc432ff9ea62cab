"""Memory planning for an executable: the intermediate buffers of a run share one arena, reused by liveness.

A buffer is live from the step that writes it to the last step that reads it. Steps are visited in
order; at each, the buffers it writes take the smallest free block that fits (or grow the arena), then
the buffers it read for the last time are freed (and merged with free neighbours). A step's output never
shares memory with its inputs, since those are freed only after it. Offsets are aligned to
:data:`ALIGNMENT` bytes. This module computes offsets; it allocates nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

ALIGNMENT = 64
"""Bytes every buffer's offset is a multiple of (a cache line, and the widest SIMD load)."""


@dataclass(frozen=True)
class Buffer:
    """An intermediate value: ``nbytes`` long, written by step ``first`` and last read by step ``last``."""

    nbytes: int
    first: int
    last: int


@dataclass
class MemoryPlan:
    """Where each buffer lives in the arena: ``offsets[k]`` for ``buffers[k]``; ``peak_bytes`` is the
    arena's size, ``unshared_bytes`` what the buffers would take without reuse."""

    buffers: list[Buffer]
    offsets: list[int]
    peak_bytes: int
    unshared_bytes: int = field(default=0)

    def __str__(self) -> str:
        saved = 1 - self.peak_bytes / self.unshared_bytes if self.unshared_bytes else 0.0
        return (f"{len(self.buffers)} intermediate buffers in {self.peak_bytes} bytes "
                f"({self.unshared_bytes} without reuse, {saved:.0%} saved)")


def _aligned(n: int) -> int:
    return -(-max(n, 1) // ALIGNMENT) * ALIGNMENT


def plan_memory(buffers: Sequence[Buffer]) -> MemoryPlan:
    """Offsets for ``buffers`` so that two buffers live at the same step never overlap.

    Parameters
    ----------
    buffers
        The intermediate values, with the steps that write and last read them.

    Returns
    -------
    MemoryPlan
        The offsets, the arena's size and the size without reuse.

    Example
    -------
    >>> plan_memory([Buffer(100, 0, 1), Buffer(100, 1, 2), Buffer(100, 2, 3)]).offsets
    [0, 128, 0]
    """
    for b in buffers:
        if b.last < b.first or b.nbytes < 0:
            raise ValueError(f"plan_memory: buffer {b} is read before it is written or has a negative size")
    sizes = [_aligned(b.nbytes) for b in buffers]
    offsets = [0] * len(buffers)
    free: list[tuple[int, int]] = []  # (offset, size), sorted by offset
    end = 0
    steps = sorted({b.first for b in buffers} | {b.last for b in buffers})
    for step in steps:
        for k, b in enumerate(buffers):
            if b.first == step:
                offsets[k], end = _take(free, sizes[k], end)
        for k, b in enumerate(buffers):
            if b.last == step:
                _give(free, offsets[k], sizes[k])
    return MemoryPlan(list(buffers), offsets, end, sum(sizes))


def _take(free: list[tuple[int, int]], size: int, end: int) -> tuple[int, int]:
    """The offset of a block of ``size`` (the smallest free one that fits, else at the arena's end), and
    the arena's new end."""
    fits = [(block, k) for k, block in enumerate(free) if block[1] >= size]
    if fits:
        (offset, block_size), k = min(fits, key=lambda f: (f[0][1], f[0][0]))
        if block_size == size:
            free.pop(k)
        else:
            free[k] = (offset + size, block_size - size)
        return offset, end
    if free and free[-1][0] + free[-1][1] == end:
        offset, _ = free.pop()  # extend the free block at the end of the arena
        return offset, offset + size
    return end, end + size


def _give(free: list[tuple[int, int]], offset: int, size: int) -> None:
    """Return a block to the free list, merged with adjacent free blocks."""
    free.append((offset, size))
    free.sort()
    merged: list[tuple[int, int]] = []
    for block in free:
        if merged and merged[-1][0] + merged[-1][1] == block[0]:
            merged[-1] = (merged[-1][0], merged[-1][1] + block[1])
        else:
            merged.append(block)
    free[:] = merged
