"""Reverse-mode differentiation of tensor-expression pipelines: ``ts.gradient`` (TVM's ``te.gradient``).

``gradient(output, inputs, head)`` walks the stages that ``output`` depends on from the output back to the
inputs. Each stage ``C`` with adjoint ``dC`` contributes, for every tensor ``U`` it reads, ``dC[v] *
d body / d U[f(v)]`` at the element ``f(v)`` it read (:mod:`tesched.autodiff.derivative`). The adjoint
``dU`` is an ordinary compute over ``U``'s shape that adds those contributions up:

- an affine read is inverted into gather form (:mod:`tesched.autodiff.inverse`): ``dU[j]`` sums over the
  loops of ``C`` that the equation ``f(v) = j`` leaves free, under the conditions that keep the solved
  loops in range. A convolution's input gradient is the transposed convolution, parallel over ``j``;
- a read at a data-dependent or clamped index (a gather, a boundary condition) becomes a
  ``ts.scatter_add`` of the contributions, read by ``dU``.

A sum reduction passes ``dC`` to every reduced point (under its ``where``); ``max``/``min`` reductions
share it evenly between the points equal to the result, as PyTorch's ``amax`` does. Each adjoint is a
tensor named ``<tensor>.grad`` that can be scheduled, auto-scheduled, inlined or built together with the
forward stages like any other.

A scan is differentiated through time (:mod:`tesched.autodiff.scan_adjoint`): its adjoint is a scan run
backwards over the steps.

A sum scatter (``ts.scatter_add``: a histogram, a bilateral grid's splat) passes each point the adjoint of the
element it added to, read at its index: a gather, parallel over the points.

Not differentiated (a :class:`~tesched.errors.GradientError` names the stage): max and min scatters, update
definitions, products, user-defined reducers and tuple reductions (``argmax`` has no gradient), and integer
inputs.
"""
from __future__ import annotations

import warnings
from typing import Sequence

from tesched.autodiff.contributions import (Contribution, Head, Key, adjoint, check_differentiable, contributions,
                                            reader, whole)
from tesched.autodiff.scan_adjoint import scan_contributions
from tesched.errors import GradientError
from tesched.te import dtype as dt
from tesched.schedule.schedule import realize_declared
from tesched.te.expr import Const
from tesched.te.scan import ScanOp
from tesched.te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor, compute


def _stages(output: Tensor) -> list[Operation]:
    """The operations ``output`` depends on, consumers before producers (reverse topological order)."""
    order: list[Operation] = []
    state: dict[int, bool] = {}
    stack: list[tuple[Operation, bool]] = [(output.op, False)]
    while stack:
        op, done = stack.pop()
        if done:
            if not state.get(id(op)):
                state[id(op)] = True
                order.append(op)
            continue
        if id(op) in state:
            continue
        state[id(op)] = False
        stack.append((op, True))
        stack.extend((t.op, False) for t in op.input_tensors if id(t.op) not in state)
    return order[::-1]


def _depends(ops: list[Operation], wanted: set[int]) -> set[int]:
    """Ids of the operations that read, directly or not, an operation in ``wanted`` (``wanted`` included)."""
    reaches = set(wanted)
    for op in reversed(ops):           # producers first
        if any(id(t.op) in reaches for t in op.input_tensors):
            reaches.add(id(op))
    return reaches


def _ones(dtype: str) -> Head:
    """The adjoint of an output with no ``head``: one everywhere."""
    return lambda point: Const(1.0, dtype)


def _zeros(tensor: Tensor) -> Tensor:
    return compute(tensor.shape, lambda *i: Const(0.0, tensor.dtype), name=f"{tensor.name}.grad")


def _realized(output: Tensor, wanted: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
    """``output`` and ``wanted`` in the pipeline rebuilt over the inferred regions of its computes declared
    without a shape (bounds inference), so their adjoints have shapes; unchanged without one."""
    rebuilt = {id(old): new for old, new in realize_declared([output.op])}

    def of(t: Tensor) -> Tensor:
        return rebuilt[id(t.op)].output(t.value_index) if id(t.op) in rebuilt else t
    return of(output), [of(t) for t in wanted]


def _check_head(output: Tensor, head: Tensor | None) -> None:
    if head is None:
        return
    if not isinstance(head, Tensor):
        raise TypeError(f"ts.gradient: head must be a Tensor of {output.name}'s shape, got {type(head).__name__}")
    same = len(head.shape) == len(output.shape) and all(
        a is b or (isinstance(a, int) and isinstance(b, int) and a == b) for a, b in zip(head.shape, output.shape))
    if not same:
        raise GradientError(f"ts.gradient: head {head.name} has shape {head.shape}, the output {output.name} has "
                            f"shape {output.shape}")


def walk(ops: list[Operation], heads: dict[Key, Head], relevant: set[int],
         suffix: str = ".grad") -> tuple[dict[Key, list[Contribution]], dict[Key, Tensor]]:
    """Propagate the adjoints ``heads`` (by ``(id(op), output index)``) back through ``ops``, consumers first.

    An output of an operation in ``ops`` that receives contributions gets its adjoint stage (named
    ``<tensor><suffix>``, adding up its head too when it has one), returned in the second dict; contributions to tensors whose operation is not in
    ``ops`` are returned, not added up, in the first. ``heads`` gains every adjoint made.
    """
    walked = {id(op) for op in ops}
    pending: dict[Key, list[Contribution]] = {}
    results: dict[Key, Tensor] = {}
    for op in ops:
        if id(op) not in relevant:
            continue
        for k in range(op.num_outputs):
            key = (id(op), k)
            if key in pending:
                found_here = pending.pop(key)
                if key in heads:         # a scan's step: an update that another update of its step reads
                    found_here.insert(0, whole(op.output(k), heads[key], op.name))
                made = adjoint(op.output(k), found_here, suffix)
                heads[key] = reader(made)
                results[key] = made
        op_heads = [heads.get((id(op), k)) for k in range(op.num_outputs)]
        if isinstance(op, PlaceholderOp) or all(h is None for h in op_heads):
            continue
        if isinstance(op, ScanOp):
            found = scan_contributions(op, op_heads, relevant, walk)
        else:
            check_differentiable(op)
            assert isinstance(op, ComputeOp)
            found = contributions(op, op_heads, relevant)
        for tensor, c in found:
            pending.setdefault((id(tensor.op), tensor.value_index), []).append(c)
    outside = {key: cs for key, cs in pending.items() if key[0] not in walked}
    return outside, results


def gradient(output: Tensor, inputs: Tensor | Sequence[Tensor], head: Tensor | None = None) -> list[Tensor]:
    """The gradients of ``output`` with respect to each of ``inputs`` (TVM's ``te.gradient``).

    Parameters
    ----------
    output : Tensor
        A floating tensor computed from ``inputs``.
    inputs : Tensor or sequence of Tensor
        Placeholders or intermediate tensors of the pipeline (floating).
    head : Tensor, optional
        The adjoint of ``output`` (the gradient of a loss with respect to it), of ``output``'s shape; ones
        by default, so the result is the gradient of ``sum(output)``.

    Returns
    -------
    list of Tensor
        One tensor per input, of its shape and dtype, named ``<input>.grad``; ordinary tensors to schedule
        and build (with the forward stages they read, or alone).

    Raises
    ------
    GradientError
        For an integer input or output, a ``head`` of another shape, or a stage with no gradient (a
        max or min scatter, a product or argmax reduction, a function with no derivative); the message names it.

    Example
    -------
    >>> x = ts.placeholder((n,), name="x"); w = ts.placeholder((3,), name="w")
    >>> r = ts.reduce_axis((0, 3), name="r")
    >>> y = ts.compute((n - 2,), lambda i: ts.sum(x[i + r] * w[r], axis=r), name="y")
    >>> dx, dw = ts.gradient(y, [x, w])
    """
    wanted = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not isinstance(output, Tensor):
        raise TypeError(f"ts.gradient: output must be a Tensor, got {type(output).__name__}")
    for t in [output, *wanted]:
        if not isinstance(t, Tensor):
            raise TypeError(f"ts.gradient: inputs must be Tensors, got {type(t).__name__}")
        if not dt.is_float(t.dtype):
            raise GradientError(f"ts.gradient: {t.name} is {t.dtype}; only floating tensors have gradients")
    output, wanted = _realized(output, wanted)
    _check_head(output, head)
    ops = _stages(output)
    relevant = _depends(ops, {id(t.op) for t in wanted})
    heads: dict[Key, Head] = {
        (id(output.op), output.value_index): reader(head) if head is not None else _ones(output.dtype)}
    _, results = walk(ops, heads, relevant)
    grads = []
    for t in wanted:
        key = (id(t.op), t.value_index)
        if key == (id(output.op), output.value_index):
            grads.append(head if head is not None else compute(
                t.shape, lambda *i: Const(1.0, t.dtype), name=f"{t.name}.grad"))
        elif key in results:
            grads.append(results[key])
        else:
            warnings.warn(f"ts.gradient: {output.name} does not depend on {t.name}; its gradient is zero",
                          stacklevel=2)
            grads.append(_zeros(t))
    return grads
