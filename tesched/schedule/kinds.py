"""The small vocabularies of a schedule: what kind each loop is, and where a stage is computed."""
from __future__ import annotations

from enum import StrEnum


class LoopKind(StrEnum):
    """How a loop runs: in order, across threads (``parallel``), as SIMD lanes (``vectorize``), or
    copied out (``unroll``)."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"


class AttachType(StrEnum):
    """Where a stage is computed: in full before its readers (``root``), substituted into its readers
    (``inline``), or inside a loop of another stage (``scope``, from ``compute_at``)."""

    ROOT = "root"
    INLINE = "inline"
    SCOPE = "scope"
