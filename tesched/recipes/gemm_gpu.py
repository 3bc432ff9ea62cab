"""C = A @ B scheduled for a GPU with its operands staged in shared memory (TVM's first GPU GEMM steps).

Each ``tile x tile`` block of C is a work-group with a thread per element (``gpu_tile``); the reduction is
walked ``ktile`` at a time (``k.outer``, serial, outside the thread loops), and per step the block copies the
``tile x ktile`` panel of A and the ``ktile x tile`` panel of B it reads into shared memory
(``cache_read(..., "shared")`` computed at ``k.outer``, one element per thread) before its threads use them;
the kernel printer puts the barriers between the copies and their readers and before the next step
overwrites them. Each thread accumulates its element of C in global memory (no register tile yet). This
module builds the schedule; it runs nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import tesched as ts


@dataclass
class SharedGemm:
    """The schedule, its arguments ``(A, B, C)``, the two shared caches and C's loops
    ``(i.outer, j.outer, i.inner, j.inner, k.outer)``."""

    schedule: ts.Schedule
    args: list[ts.Tensor]
    caches: list[ts.Tensor]
    loops: tuple


def shared_tiles(m: int, n: int, k: int, tile: int = 16, ktile: int = 16) -> SharedGemm:
    """``A (m x k) @ B (k x n)`` in ``tile x tile`` blocks, A and B staged in shared memory ``ktile`` at a time."""
    A = ts.placeholder((m, k), name="A")
    B = ts.placeholder((k, n), name="B")
    r = ts.reduce_axis((0, k), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = ts.create_schedule(C.op)
    caches = [s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])]
    bi, bj, ti, tj = s[C].gpu_tile(C.op.axis[0], C.op.axis[1], tile, tile)
    ko, ki = s[C].split(r, factor=ktile)
    s[C].reorder(ko, ti, tj, ki)
    for cache in caches:
        s[cache].compute_at(s[C], ko)
        s[cache].bind(s[cache].op.axis[0], ts.thread_axis("threadIdx.y"))
        s[cache].bind(s[cache].op.axis[1], ts.thread_axis("threadIdx.x"))
    return SharedGemm(s, [A, B, C], caches, (bi, bj, ti, tj, ko))
