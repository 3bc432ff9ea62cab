"""The adjoint of a graph op with respect to one of its arguments, as a graph op derived from the op's
declaration: :func:`adjoint_call` makes the call that :func:`tesched.graph.gradient` adds to a graph.

The op ``<op>.grad`` (an :class:`AdjointOp`) takes the arguments of the forward call that its adjoint
reads, then the adjoint of the forward output (last); its attributes are the forward call's plus ``wrt``
(which argument) and ``absent`` (the position, shape and dtype of each forward argument it does not read,
or ``None``). Its declaration declares the forward op on copies of the arguments and differentiates it
with ``ts.gradient`` with respect to the copy of argument ``wrt``: only that argument's reads count, even
when another argument is computed from it inside the same fused group (each path is a separate adjoint,
added up by the graph). So no op needs a hand-written backward; ``reshape`` (whose index map is not
affine, so its derived adjoint would be a scatter) has the obvious one, a reshape of the adjoint.

The adjoint's pattern follows from its stages: none reduces (the forward's elementwise or broadcast
pattern, else ``injective``); one reduction (``out_elemwise_fusable`` when the forward op is, so an update
such as SGD's fuses into a weight gradient, else ``comm_reduce``); anything else (several reductions, a
scatter) is ``opaque``. The NumPy evaluation (for ``fold_constant`` and ``interpret``) builds the
adjoint's kernel with the default schedule: a derived adjoint has no other form. This module does not
walk graphs; :mod:`.gradient` does.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched.driver.kernel import Kernel
from tesched.errors import GradientError
from tesched.graph.ir import Call, Expr
from tesched.graph.op import Declare, Op, get_op
from tesched.graph.types import TensorType, Type
from tesched.nn.pattern import Pattern
from tesched.te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor

_OWN_ATTRS = ("wrt", "absent")
Absent = tuple[tuple[int, tuple[int, ...], str], ...]


def forward_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The forward call's attributes among an adjoint call's."""
    return {k: v for k, v in attrs.items() if k not in _OWN_ATTRS}


def _forward_arguments(given: Sequence[Any], absent: Absent | None, make: Any) -> list[Any]:
    """The forward arguments: ``given`` in order, with ``make(shape, dtype)`` at each absent position."""
    holes = {pos: (shape, dtype) for pos, shape, dtype in absent or ()}
    given_iter = iter(given)
    return [make(*holes[k]) if k in holes else next(given_iter) for k in range(len(given) + len(holes))]


def _declare(forward: Op, args: Sequence[Tensor], attrs: Mapping[str, Any], wrt: int, head: Tensor) -> Tensor:
    """The adjoint of ``forward``'s argument ``wrt`` (``ts.gradient`` of the declaration on copies)."""
    copies = [ts.compute(a.shape, lambda *i, a=a: a[i], name=f"{forward.name}.arg{k}") for k, a in enumerate(args)]
    out = forward.declare(copies, forward_attrs(attrs))
    if isinstance(out.op, PlaceholderOp):
        raise GradientError(f"{forward.name} declares no computation (an external function), so it has no "
                            "gradient to derive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # an argument the output does not read: its adjoint is zero
        (grad,) = ts.gradient(out, [copies[wrt]], head=head)
    return grad


def _stages(t: Tensor) -> list[Operation]:
    seen: dict[int, Operation] = {}
    stack = [t.op]
    while stack:
        op = stack.pop()
        if id(op) not in seen:
            seen[id(op)] = op
            stack.extend(x.op for x in op.input_tensors)
    return list(seen.values())


def _pattern(forward: Op, grad: Tensor) -> Pattern:
    stages = [op for op in _stages(grad) if not isinstance(op, PlaceholderOp)]
    if not all(isinstance(op, ComputeOp) for op in stages):
        return Pattern.OPAQUE
    reductions = sum(1 for op in stages if op.reduce_axis)
    if reductions == 0 and forward.pattern <= Pattern.BROADCAST:
        return forward.pattern                 # the adjoint of an elementwise (broadcast) op is one too
    if reductions == 0:                        # a reduction's adjoint broadcasts; a shuffle's shuffles back
        return Pattern.BROADCAST if forward.pattern == Pattern.COMM_REDUCE else Pattern.INJECTIVE
    if reductions == 1:
        return Pattern.OUT_ELEMWISE_FUSABLE if forward.pattern == Pattern.OUT_ELEMWISE_FUSABLE else Pattern.COMM_REDUCE
    return Pattern.OPAQUE


@dataclass(frozen=True, eq=False, repr=False)
class AdjointOp(Op):
    """``<forward>.grad``: the adjoint of ``forward`` with respect to the argument its calls name ``wrt``."""

    forward: Op

    def infer(self, arg_types: Sequence[Type], attrs: Mapping[str, Any]) -> TensorType:
        """The type of argument ``wrt`` of the forward call; the last argument must have the forward
        output's type."""
        if not arg_types:
            raise TypeError(f"{self.name} takes the forward arguments it reads and the output's adjoint")
        types = _forward_arguments(arg_types[:-1], attrs["absent"], TensorType)
        out = self.forward.infer(types, forward_attrs(attrs))
        if arg_types[-1] != out:
            raise TypeError(f"{self.name}: the adjoint of the output has type {arg_types[-1]}, the output {out}")
        wrt = types[attrs["wrt"]]
        assert isinstance(wrt, TensorType), "the forward op checked its arguments"
        return wrt


_ADJOINT_OPS: dict[tuple[str, Pattern], AdjointOp] = {}
_KERNELS: dict[str, tuple[Kernel, list[int]]] = {}


def _adjoint_declare(forward: Op) -> Declare:
    def declare(inputs: Sequence[Tensor], attrs: Mapping[str, Any]) -> Tensor:
        args = _forward_arguments(list(inputs[:-1]), attrs["absent"],
                                  lambda shape, dtype: ts.placeholder(shape, dtype, name="unread"))
        return _declare(forward, args, attrs, attrs["wrt"], inputs[-1])
    return declare


def _adjoint_op(forward: Op, pattern: Pattern) -> AdjointOp:
    key = (forward.name, pattern)
    op = _ADJOINT_OPS.get(key)
    if op is None:
        declare = _adjoint_declare(forward)

        def evaluate(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
            return _run(forward.name, declare, args, attrs)

        op = _ADJOINT_OPS[key] = AdjointOp(f"{forward.name}.grad", pattern, declare, evaluate, None, forward)
    return op


def _run(name: str, declare: Declare, args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    """The adjoint on ``args``, by its kernel (the default schedule), compiled once per types and attributes."""
    key = f"{name}{sorted(attrs.items())}{[(a.shape, a.dtype) for a in args]}"
    if key not in _KERNELS:
        placeholders = [ts.placeholder(a.shape, str(a.dtype), name=f"arg{k}") for k, a in enumerate(args)]
        grad = declare(placeholders, attrs)
        read = {id(op) for op in _stages(grad)}
        used = [k for k, p in enumerate(placeholders) if id(p.op) in read]
        _KERNELS[key] = (ts.build(nn.default_schedule([grad]), [placeholders[k] for k in used] + [grad]), used)
    kernel, used = _KERNELS[key]
    wrt_shape, wrt_dtype = _wrt_type(args, attrs)
    out = np.empty(wrt_shape, wrt_dtype)
    kernel(*[np.array(args[k], order="C") for k in used], out)
    return out


def _wrt_type(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> tuple[tuple[int, ...], str]:
    types = _forward_arguments([(a.shape, str(a.dtype)) for a in args[:-1]], attrs["absent"],
                               lambda shape, dtype: (shape, dtype))
    return types[attrs["wrt"]]


def adjoint_call(call: Call, wrt: int, head: Expr) -> Expr | None:
    """The adjoint of ``call``'s argument ``wrt`` given ``head``, the adjoint of its output; ``None`` when it
    is zero (the output does not read the argument). Raises :class:`GradientError` naming the op when its
    declaration has no gradient."""
    op = call.op
    assert isinstance(op, Op), "primitive functions are made after differentiation"
    arg_type = call.args[wrt].tensor_type
    if op.name == "reshape":
        return Call(get_op("reshape"), [head], {"newshape": arg_type.shape})
    placeholders = [ts.placeholder(a.tensor_type.shape, a.tensor_type.dtype, name=f"arg{k}")
                    for k, a in enumerate(call.args)]
    out_type = call.tensor_type
    head_ph = ts.placeholder(out_type.shape, out_type.dtype, name="head")
    try:
        grad = _declare(op, placeholders, call.attrs, wrt, head_ph)
    except GradientError as err:
        raise GradientError(f"G.gradient: {op.name} has no gradient with respect to its argument {wrt}: {err}") \
            from None
    read = {id(s) for s in _stages(grad)}
    if id(head_ph.op) not in read:
        return None
    given = [k for k, p in enumerate(placeholders) if id(p.op) in read]
    absent = tuple((k, p.shape, p.dtype) for k, p in enumerate(placeholders) if k not in given) or None
    adjoint = _adjoint_op(op, _pattern(op, grad))
    return Call(adjoint, [call.args[k] for k in given] + [head], {**call.attrs, "wrt": wrt, "absent": absent})
