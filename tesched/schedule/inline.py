"""The ``compute_inline`` pass: substitute inlined stages' expressions into their readers.

Returns, for every compute stage, its body with reads of inlined stages replaced by their (recursively
inlined) expressions at the read's indices, and every other read pointed at the tensor its stage
currently produces (after ``cache_read``/``cache_write``/``rfactor``). Works on declarations only; no loops, no isl.
"""
from __future__ import annotations

from tesched.schedule.kinds import AttachType
from tesched.schedule.stage import StageGraph
from tesched.te.expr import Expr
from tesched.te.tensor import ComputeOp, TensorRead
from tesched.te.visit import rewrite, substitute


def inline_bodies(sch: StageGraph) -> dict[int, Expr]:
    """``{id(op): body}`` for every compute operation of ``sch``, with inlined stages substituted."""
    bodies: dict[int, Expr] = {}
    inlined = {id(st.op) for st in sch.stages if st.attach_type is AttachType.INLINE}

    def expand(e: Expr) -> Expr | None:
        if isinstance(e, TensorRead):
            tensor = sch.canonical(e.tensor)
            indices = [rewrite(i, expand) for i in e.indices]
            if id(tensor.op) in inlined:
                assert isinstance(tensor.op, ComputeOp)
                return substitute(bodies[id(tensor.op)], dict(zip(tensor.op.axis, indices)))
            return TensorRead(tensor, tuple(indices))
        return None

    for st in sch.stages:  # producers come first
        if isinstance(st.op, ComputeOp):
            bodies[id(st.op)] = rewrite(st.op.body, expand)
    return bodies
