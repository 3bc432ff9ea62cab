"""The small vocabularies of a schedule: what kind each loop is, which GPU index a loop is bound to
(:class:`ThreadAxis`), and where a stage is computed."""
from __future__ import annotations

from dataclasses import dataclass
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


THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True)
class ThreadAxis:
    """A GPU index a loop can be bound to (TVM's ``te.thread_axis``): ``blockIdx.x`` (OpenCL's
    ``get_group_id(0)``) to ``threadIdx.z`` (``get_local_id(2)``)."""

    tag: str

    def __post_init__(self) -> None:
        if self.tag not in THREAD_TAGS:
            raise ValueError(f"thread_axis: unknown GPU index {self.tag!r}; the indices are {', '.join(THREAD_TAGS)}")

    @property
    def kind(self) -> LoopKind:
        """``GPU_BLOCK`` for a ``blockIdx``, ``GPU_THREAD`` for a ``threadIdx``."""
        return LoopKind.GPU_BLOCK if self.tag.startswith("block") else LoopKind.GPU_THREAD

    @property
    def dim(self) -> int:
        """0, 1 or 2 for x, y, z."""
        return "xyz".index(self.tag[-1])


def thread_axis(tag: str) -> ThreadAxis:
    """The GPU index ``tag`` (``"blockIdx.x"`` ... ``"threadIdx.z"``) to give ``Stage.bind``.

    Example
    -------
    >>> bx, tx = ts.thread_axis("blockIdx.x"), ts.thread_axis("threadIdx.x")
    >>> xo, xi = s[C].split(C.op.axis[0], factor=64)
    >>> s[C].bind(xo, bx); s[C].bind(xi, tx)
    """
    if not isinstance(tag, str):
        raise TypeError(f"thread_axis: expected a str such as 'threadIdx.x', got {type(tag).__name__}")
    return ThreadAxis(tag)


class AttachType(StrEnum):
    """Where a stage is computed: in full before its readers (``root``), substituted into its readers
    (``inline``), or inside a loop of another stage (``scope``, from ``compute_at``)."""

    ROOT = "root"
    INLINE = "inline"
    SCOPE = "scope"
