"""Tensor intrinsic declarations: ``decl_tensor_intrin``, ``CIntrinsic`` and ``TensorIntrin``.

An intrinsic is a small computation (``decl_tensor_intrin(op, CIntrinsic(...))``) and the C functions that
implement it. ``s[T].tensorize(axis, intrin)`` asks that the loops of T from ``axis`` inward be replaced by
one call; the structural match of a loop nest against the declaration happens when lowering
(:mod:`tesched.poly.tensorize`). This module only declares: no loops, no isl, no C generation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tesched.te.reduction import Reduce
from tesched.te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor, TensorRead
from tesched.te.visit import walk

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class CIntrinsic:
    """C implementation of an intrinsic: ``source`` defines the functions named by the other fields."""

    source: str
    body: str | None = None
    reset: str | None = None
    update: str | None = None

    def __post_init__(self) -> None:
        for role in ("body", "reset", "update"):
            name = getattr(self, role)
            if name is not None and not _IDENT.match(name):
                raise ValueError(f"CIntrinsic {role}={name!r} is not a C identifier")
        if self.body is None and (self.reset is None or self.update is None):
            raise ValueError("CIntrinsic needs body=, or both reset= and update=")


class TensorIntrin:
    """A declared intrinsic: its computation (``op``), its inputs and its C implementation."""

    def __init__(self, op: Operation, impl: CIntrinsic, name: str):
        if not isinstance(op, ComputeOp):
            raise TypeError("decl_tensor_intrin: op must be the operation of a ts.compute")
        if not isinstance(impl, CIntrinsic):
            raise TypeError("decl_tensor_intrin: impl must be a ts.CIntrinsic")
        self.op, self.impl, self.name = op, impl, name
        self.inputs: list[Tensor] = []
        self.stages: list[ComputeOp] = []

        def visit(o: Operation) -> None:
            if isinstance(o, PlaceholderOp):
                if all(t is not o.output(0) for t in self.inputs):
                    self.inputs.append(o.output(0))
                return
            if not isinstance(o, ComputeOp) or o in self.stages:
                return
            for read in [n for n in walk(o.body) if isinstance(n, TensorRead)]:
                visit(read.tensor.op)
            self.stages.append(o)

        visit(op)
        self.reduces_in_pipeline = any(isinstance(s.body, Reduce) for s in self.stages)
        self.has_epilogue = self.reduces_in_pipeline and not isinstance(op.body, Reduce)

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name!r})"


def decl_tensor_intrin(op: Operation | Tensor, impl: CIntrinsic, name: str | None = None) -> TensorIntrin:
    """Declare a tensor intrinsic computing ``op`` (TVM's name)."""
    if isinstance(op, Tensor):
        op = op.op
    return TensorIntrin(op, impl, name or op.name)
