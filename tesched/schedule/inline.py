"""The ``compute_inline`` pass: substitute inlined stages' expressions into their readers.

Returns, for every compute stage that is not itself inlined, its body with reads of inlined stages replaced by their (recursively
inlined) expressions at the read's indices, and every other read pointed at the tensor its stage
currently produces (after ``cache_read``/``cache_write``/``rfactor``). Reads of one inlined stage at
structurally equal indices become the *same* expression object, so a body is a DAG whose size is linear
in the depth of an inlined chain (``B[i] * B[i]`` does not copy ``B``'s expression twice); code
generation binds each shared subexpression once (Halide's ``let``). Indices are compared in the
``canonical`` form the caller gives (the lowering passes linear forms, so ``(i + 2) + 2`` is ``i + 4``):
a stencil chain ``f(i) = g(i) + g(i + 2)`` of depth ``d`` then expands to ``O(d**2)`` shared reads instead
of ``2**d`` copies. An inlined stage is expanded from its own declaration at each distinct read, so the
reads inside it are shared too. Works on declarations only; no loops, no isl.
"""
from __future__ import annotations

from typing import Callable

from tesched.schedule.kinds import AttachType
from tesched.schedule.stage import StageGraph
from tesched.te.expr import Expr
from tesched.te.reduction import MultiValue
from tesched.te.tensor import ComputeOp, TensorRead
from tesched.te.visit import rewrite, structural_key, tree_size


def inline_bodies(sch: StageGraph, canonical: Callable[[Expr], Expr] = lambda e: e) -> dict[int, Expr]:
    """``{id(op): body}`` for every compute operation of ``sch`` that is not inlined, with inlined stages
    substituted; reads are shared when their indices have the same ``canonical`` form."""
    bodies: dict[int, Expr] = {}
    inlined = {id(st.op) for st in sch.stages if st.attach_type is AttachType.INLINE}
    shared: dict[tuple, Expr] = {}     # (op, structural indices) -> the one expression for that read
    seen: dict[int, tuple[Expr, Expr]] = {}   # id(read of a declaration) -> (the read, kept alive; its value)

    def expand(env: dict[int, Expr]) -> Callable[[Expr], Expr | None]:
        """For :func:`rewrite`: the axes in ``env`` replaced by their (expanded) values, every read expanded
        (one frame per level of a chain: a chain of depth 300 stays within Python's recursion limit)."""
        def visit(e: Expr) -> Expr | None:
            if id(e) in env:
                return env[id(e)]
            if not isinstance(e, TensorRead):
                return None
            if not env and id(e) in seen:     # a read met again (in another reader, or another path)
                return seen[id(e)][1]
            tensor = sch.canonical(e.tensor)
            indices = [rewrite(i, visit) for i in e.indices]
            forms = [canonical(i) for i in indices]
            key = (id(tensor.op), tensor.value_index, tuple(structural_key(f) for f in forms))
            if key not in shared:
                if id(tensor.op) in inlined:
                    assert isinstance(tensor.op, ComputeOp)
                    value = tensor.op.body
                    if isinstance(value, MultiValue):   # one output of a multi-output compute
                        value = value.values[tensor.value_index]
                    # the smaller of each index and its canonical form: indices do not grow along the chain
                    # (``((i + 2) + 2) + 2`` is ``i + 6``), and stay as written where shorter (``7 - i``)
                    smaller = [f if tree_size(f) < tree_size(i) else i for i, f in zip(indices, forms)]
                    shared[key] = rewrite(value, expand({id(a): x for a, x in zip(tensor.op.axis, smaller)}))
                else:
                    shared[key] = TensorRead(tensor, tuple(indices))
            if not env:
                seen[id(e)] = (e, shared[key])
            return shared[key]
        return visit

    for st in sch.stages:  # producers come first; an inlined stage has no body of its own
        if isinstance(st.op, ComputeOp) and id(st.op) not in inlined:
            bodies[id(st.op)] = rewrite(st.op.body, expand({}))
    return bodies
