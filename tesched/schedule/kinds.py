"""The small vocabularies of a schedule: what kind each loop is (:class:`LoopKind`, defined with the loop IR
in :mod:`tesched.ir.kinds` and re-exported here), which GPU index a loop is bound to (:class:`ThreadAxis`),
and where a stage is computed."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tesched.ir.kinds import LoopKind

__all__ = ["AttachType", "LoopKind", "ThreadAxis", "THREAD_TAGS", "thread_axis"]


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
