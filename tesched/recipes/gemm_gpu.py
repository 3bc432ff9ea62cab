"""C = A @ B scheduled for a GPU: operands staged in shared memory (TVM's first GPU GEMM steps), then a
register tile per thread (the structure of TVM's "optimize GEMM on GPU").

:func:`shared_tiles`: each ``tile x tile`` block of C is a work-group with a thread per element (``gpu_tile``); the reduction is
walked ``ktile`` at a time (``k.outer``, serial, outside the thread loops), and per step the block copies the
``tile x ktile`` panel of A and the ``ktile x tile`` panel of B it reads into shared memory
(``cache_read(..., "shared")`` computed at ``k.outer``, one element per thread) before its threads use them;
the kernel printer puts the barriers between the copies and their readers and before the next step
overwrites them. Each thread accumulates its element of C in global memory.

:func:`register_tiles`: a block of ``threads x threads`` threads computes a ``threads * regs`` square
tile of C, each thread a ``regs x regs`` tile of accumulators in registers (``cache_write(C, "local")``
computed at the block loop, its loops and C's split by ``regs`` and bound to the same thread indices: the
kernel printer gives each thread the private array of its elements). The reduction's ``k.outer`` loop runs
outside the thread loops; per step the block's threads copy the panels of A and B into shared memory
together (each copy loop split by ``threads`` and bound), and each thread then does ``ktile * regs * regs``
multiply-adds from shared memory into its registers. C is written once, from the registers. This module
builds the schedules; it runs nothing.
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


def _product(m: int, n: int, k: int) -> tuple[ts.Tensor, ts.Tensor, ts.Tensor, ts.IterVar]:
    """``A``, ``B``, ``C = A @ B`` and its reduce axis."""
    A = ts.placeholder((m, k), name="A")
    B = ts.placeholder((k, n), name="B")
    r = ts.reduce_axis((0, k), name="k")
    return A, B, ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C"), r


def shared_tiles(m: int, n: int, k: int, tile: int = 16, ktile: int = 16) -> SharedGemm:
    """``A (m x k) @ B (k x n)`` in ``tile x tile`` blocks, A and B staged in shared memory ``ktile`` at a time."""
    A, B, C, r = _product(m, n, k)
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


@dataclass
class RegisterGemm:
    """The schedule, its arguments ``(A, B, C)``, the shared caches of A and B, and the register tile."""

    schedule: ts.Schedule
    args: list[ts.Tensor]
    caches: list[ts.Tensor]
    registers: ts.Tensor


def register_tiles(m: int, n: int, k: int, threads: int = 8, regs: int = 4, ktile: int = 8) -> RegisterGemm:
    """``A (m x k) @ B (k x n)``: blocks of ``threads x threads`` threads, each thread a ``regs x regs`` tile
    of C accumulated in registers, A and B staged in shared memory ``ktile`` at a time."""
    A, B, C, r = _product(m, n, k)
    s = ts.create_schedule(C.op)
    caches = [s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])]
    CL = s.cache_write(C, "local")
    ty, tx = ts.thread_axis("threadIdx.y"), ts.thread_axis("threadIdx.x")
    by, ti = s[C].split(C.op.axis[0], factor=threads * regs)
    bx, tj = s[C].split(C.op.axis[1], factor=threads * regs)
    ti, ri = s[C].split(ti, factor=regs)
    tj, rj = s[C].split(tj, factor=regs)
    s[C].reorder(by, bx, ti, tj, ri, rj)
    for loop, axis in ((by, "blockIdx.y"), (bx, "blockIdx.x")):
        s[C].bind(loop, ts.thread_axis(axis))
    s[C].bind(ti, ty)
    s[C].bind(tj, tx)
    s[CL].compute_at(s[C], bx)
    ci, ri = s[CL].split(s[CL].op.axis[0], factor=regs)
    cj, rj = s[CL].split(s[CL].op.axis[1], factor=regs)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=ktile)
    s[CL].reorder(ko, ci, cj, ki, ri, rj)
    s[CL].bind(ci, ty)
    s[CL].bind(cj, tx)
    for cache in caches:
        s[cache].compute_at(s[CL], ko)
        ro, rin = s[cache].split(s[cache].op.axis[0], factor=threads)
        co, cin = s[cache].split(s[cache].op.axis[1], factor=threads)
        s[cache].reorder(ro, co, rin, cin)
        s[cache].bind(rin, ty)
        s[cache].bind(cin, tx)
    return RegisterGemm(s, [A, B, C], caches, CL)
