"""What kind each loop of the loop IR is (:class:`LoopKind`): serial, parallel, vectorized, unrolled, or bound
to a GPU block or thread index. Schedules set it (``Stage.parallel``, ``vectorize``, ``bind``...; the
schedule re-exports it as ``tesched.schedule.kinds.LoopKind``), the IR's ``For`` carries it and the code
generators read it. Nothing else lives here, so the schedule can name it without loading the IR's nodes.
"""
from __future__ import annotations

from enum import StrEnum


class LoopKind(StrEnum):
    """How a loop runs: in order, across threads (``parallel``), as SIMD lanes (``vectorize``), or
    copied out (``unroll``)."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    GPU_BLOCK = "gpu_block"       # bound to blockIdx.{x,y,z}: one work-group per iteration
    GPU_THREAD = "gpu_thread"     # bound to threadIdx.{x,y,z}: one work-item of the group per iteration

    @property
    def bound(self) -> bool:
        """Whether the loop is bound to a GPU index (its iterations run at once, one per block or thread)."""
        return self in (LoopKind.GPU_BLOCK, LoopKind.GPU_THREAD)
