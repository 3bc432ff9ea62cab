"""The graph op of an external call, and how the executor runs one.

:func:`external_op` makes the op a partitioned graph calls in place of a matched subgraph: it is named
``external.<function>`` (so the text form shows ``%3 = external.my_conv_add_relu(%0, %w, %b)``), has the
``opaque`` pattern (the default fusion rules keep it alone), takes its type from the function's declared
signature, and keeps the subgraph it replaces, which serves as its NumPy semantics (``interpret``,
``fold_constant``). :func:`compile_external_group` turns a primitive function made by ``fuse_ops`` around
such a call into an :class:`ExternalCall` the executor calls like a kernel. Finding the subgraphs is
:mod:`.partition`'s job; the C side is :mod:`.external`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

import tesched as ts
from tesched.graph.external import ExternalFunction, ExternalFunctionError, ExternalKernel, ExternalLibrary
from tesched.graph.interpret import evaluate
from tesched.graph.ir import Call, Function
from tesched.graph.op import Op
from tesched.graph.types import TensorType
from tesched.graph.visit import post_order
from tesched.nn.pattern import Pattern
from tesched.te.tensor import Tensor


@dataclass(frozen=True, eq=False, repr=False)
class ExternalOp(Op):
    """A call of ``function`` from ``library``; ``replaced`` is the subgraph it stands for, as a function
    of the call's arguments."""

    library: ExternalLibrary
    function: ExternalFunction
    replaced: Function


def external_op(library: ExternalLibrary, function: ExternalFunction, replaced: Function) -> ExternalOp:
    """The op calling ``function`` in place of ``replaced``."""

    def declare(inputs: Sequence[Tensor], attrs: Mapping[str, Any]) -> Tensor:
        types = [TensorType(tuple(int(d) for d in t.shape), t.dtype) for t in inputs]
        out = replaced.body.tensor_type
        function.bind(types, out)
        return ts.placeholder(out.shape, out.dtype, name="out")

    def run_replaced(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
        return evaluate(replaced.body, {id(p): a for p, a in zip(replaced.params, args)})

    return ExternalOp(f"external.{function.name}", Pattern.OPAQUE, declare, run_replaced, len(function.inputs),
                      library, function, replaced)


@dataclass(frozen=True)
class ExternalCall:
    """A fused group that is one external call: the executor passes the group's inputs at
    ``arg_positions`` (a value used twice is passed twice), then the output, then the kernel's sizes."""

    name: str
    function: Function
    kernel: ExternalKernel
    arg_positions: tuple[int, ...]
    library: ExternalLibrary


def compile_external_group(fn: Function) -> ExternalCall | None:
    """The external call primitive function ``fn`` consists of; ``None`` when it holds no external call.
    Raises :class:`ExternalFunctionError` when fusion put an external call together with other ops."""
    calls = [n for n in post_order(fn.body) if isinstance(n, Call)]
    external = [c for c in calls if isinstance(c.op, ExternalOp)]
    if not external:
        return None
    body = fn.body
    if len(calls) != 1 or not isinstance(body, Call):
        names = ", ".join(c.op_name for c in calls)
        raise ExternalFunctionError(f"{fn.name}: the fusion rules put {external[0].op_name} in one group with other "
                                    f"ops ({names}); an external call must be a group of its own, so do not let "
                                    "opaque ops fuse")
    op = body.op
    assert isinstance(op, ExternalOp), "the group's one call is external"
    positions = tuple(next(k for k, p in enumerate(fn.params) if p is a) for a in body.args)
    kernel = ExternalKernel(op.library, op.function, [a.tensor_type for a in body.args], body.tensor_type)
    return ExternalCall(op.name, fn, kernel, positions, op.library)
