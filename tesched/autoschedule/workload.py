"""The identity of a workload: a hash of the pipeline's declarations, stable across processes.

Two pipelines with the same stages (names, shapes, dtypes, expressions) in the same order get the same
hash, so a tuning record made for one applies to the other. Nothing else (arguments, schedules) enters.
"""
from __future__ import annotations

import hashlib

from tesched.schedule.schedule import Schedule
from tesched.te.tensor import ComputeOp


def workload_text(sch: Schedule) -> str:
    """One line per stage: name, shape, dtype and body (inputs: name, shape, dtype)."""
    lines = []
    for st in sch.stages:
        t = st.origin_op.output(0)
        body = repr(st.origin_op.body) if isinstance(st.origin_op, ComputeOp) else "input"
        lines.append(f"{t.name}{list(t.shape)}:{t.dtype} = {body}")
    return "\n".join(lines)


def workload_hash(sch: Schedule) -> str:
    """SHA-256 (hex, 24 characters) of :func:`workload_text`."""
    return hashlib.sha256(workload_text(sch).encode()).hexdigest()[:24]
