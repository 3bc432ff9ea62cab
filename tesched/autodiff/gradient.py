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

Not differentiated (a :class:`~tesched.errors.GradientError` names the stage): scans, scatters, products,
user-defined reducers and tuple reductions (``argmax`` has no gradient), and integer inputs.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

from tesched.autodiff.derivative import partial
from tesched.autodiff.inverse import LoopVar, invert, loop_vars
from tesched.errors import GradientError
from tesched.te import dtype as dt
from tesched.te.expr import Const, Expr, Select, as_expr
from tesched.te.functions import all as all_of
from tesched.te.functions import if_then_else
from tesched.te.reducer import builtin
from tesched.te.reduction import Reduce
from tesched.te.scan import ScanOp
from tesched.te.scatter import ScatterOp, scatter_add
from tesched.te.tensor import (ComputeOp, IterType, IterVar, Operation, PlaceholderOp, Range, Tensor, TensorRead,
                                compute, reduce_axis)
from tesched.te.visit import collect, structural_key, substitute

_sum = builtin("sum")
Head = Callable[[Sequence[Expr]], Expr]


@dataclass(frozen=True)
class _Contribution:
    """What one stage adds to the adjoint of a tensor it reads: ``value`` (an expression of the stage's
    loops) at the element ``indices``, for the points where ``where`` holds."""

    stage: str
    indices: tuple[Expr, ...]
    value: Expr
    loops: list[LoopVar]
    where: Expr | None


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


def _check_differentiable(op: Operation) -> None:
    if isinstance(op, ScanOp):
        raise GradientError(f"stage {op.name} is a scan: ts.gradient does not differentiate scans yet; unroll the "
                            "recurrence into computes to differentiate it")
    if isinstance(op, ScatterOp):
        raise GradientError(f"stage {op.name} is a scatter: ts.gradient does not differentiate scatters yet")
    if not isinstance(op, ComputeOp):
        raise GradientError(f"stage {op.name} ({type(op).__name__}) has no gradient")


def _reads_by_element(body: Expr, relevant: set[int]) -> list[list[TensorRead]]:
    """The reads of floating tensors in ``relevant``, grouped by the element they load."""
    groups: dict[tuple, list[TensorRead]] = {}
    memo: dict[int, tuple] = {}
    for read in collect(body, TensorRead):
        if id(read.tensor.op) in relevant and dt.is_float(read.tensor.dtype):
            key = (id(read.tensor), read.tensor.value_index, structural_key(read, memo))
            groups.setdefault(key, []).append(read)
    return list(groups.values())


def _tie_share(op: ComputeOp, body: Reduce, output: Tensor) -> Expr:
    """For a max/min reduction, ``1 / count`` at the points equal to the result (``count`` of them), else 0."""
    axes = list(op.axis)
    reduced = [a for a in body.axis if isinstance(a, IterVar)]

    def count(*point: IterVar) -> Expr:
        fresh = [_reduce_like(a) for a in reduced]
        moved: dict = dict(zip(axes, point))
        moved.update(zip(reduced, fresh))
        equal = substitute(body.source, moved) == output[point]
        where = None if body.where is None else substitute(body.where, moved)
        return _sum(if_then_else(equal, Const(1.0, output.dtype), Const(0.0, output.dtype)), axis=fresh, where=where)

    ties = compute(output.shape, count, name=f"{op.name}.ties")
    point = tuple(axes)
    return if_then_else(body.source == output[point], 1.0 / ties[point], Const(0.0, output.dtype))


def _contributions(op: ComputeOp, heads: list[Head | None], relevant: set[int]) -> list[tuple[Tensor, _Contribution]]:
    """Every (read tensor, contribution) of stage ``op`` whose outputs have adjoints ``heads``."""
    out: list[tuple[Tensor, _Contribution]] = []
    axes = list(op.axis)
    for k, body in enumerate(op.bodies):
        head = heads[k]
        if head is None:
            continue
        seed = head(axes)
        where = None
        loops = loop_vars(axes)
        source = body
        if isinstance(body, Reduce):
            if body.reducer is not None or body.combiner not in ("sum", "max", "min") or len(body.sources) > 1:
                raise GradientError(f"stage {op.name}: a {body.combiner} reduction has no gradient (ts.gradient "
                                    "differentiates sum, max and min reductions)")
            loops = loops + loop_vars([a for a in body.axis if isinstance(a, IterVar)])
            where, source = body.where, body.source
            if body.combiner != "sum":
                seed = seed * _tie_share(op, body, op.output(k))
            if body.init is not None:
                out += _elementwise(op, body.init, seed if body.combiner == "sum" else None, axes, relevant)
        for group in _reads_by_element(source, relevant):
            d = partial(source, {id(r) for r in group})
            if d is not None:
                out.append((group[0].tensor, _Contribution(op.name, group[0].indices, seed * d, loops, where)))
    return out


def _elementwise(op: ComputeOp, init: Expr, seed: Expr | None, axes: list[IterVar],
                 relevant: set[int]) -> list[tuple[Tensor, _Contribution]]:
    """Contributions of a reduction's ``init`` (read once per output point)."""
    if seed is None:
        if _reads_by_element(init, relevant):
            raise GradientError(f"stage {op.name}: the init of a max/min reduction reads a differentiated tensor; "
                                "take the maximum with it in a separate stage")
        return []
    out = []
    for group in _reads_by_element(init, relevant):
        d = partial(init, {id(r) for r in group})
        if d is not None:
            out.append((group[0].tensor, _Contribution(op.name, group[0].indices, seed * d, loop_vars(axes), None)))
    return out


def _gathered(c: _Contribution, point: Sequence[IterVar]) -> Expr | None:
    """``c`` summed at element ``point`` in gather form, or None when its index is not affine."""
    bounds: dict[int, tuple[Expr, Expr]] = {id(a): (Const(0, "int32"), as_expr(a.range.extent) - 1) for a in point}
    inverse = invert(c.indices, c.loops, point, bounds)
    if inverse is None:
        return None
    mapping = {lp.var: inverse.mapping[id(lp.var)] for lp in c.loops}
    value = substitute(c.value, mapping)
    conditions = list(inverse.conditions)
    if c.where is not None:
        conditions.append(substitute(c.where, mapping))
    cond = None if not conditions else conditions[0] if len(conditions) == 1 else all_of(*conditions)
    if inverse.free:
        return _sum(value, axis=inverse.free, where=cond)
    return value if cond is None else Select(cond, value, Const(0.0, value.dtype))


def _reduce_like(var: IterVar) -> IterVar:
    """A new reduce axis over ``var``'s range."""
    return reduce_axis(Range(var.range.min, var.range.extent), f"{var.name}.adj")


def _scattered(c: _Contribution, tensor: Tensor, count: int) -> Tensor:
    """``c`` accumulated by a scatter over the stage's loops (indices that are not affine)."""
    ids = {id(lp.var) for lp in c.loops}
    if any(id(n) in ids for lp in c.loops for e in (lp.low, lp.extent) for n in collect(e, IterVar)):
        raise GradientError(f"stage {c.stage} reads {tensor.name} at a non-affine index inside a reduction whose "
                            "range depends on another loop; ts.gradient cannot invert this read")
    axes = {lp.var: _reduce_like(lp.var) for lp in c.loops}
    return scatter_add(tensor.shape, tuple(substitute(i, axes) for i in c.indices), substitute(c.value, axes),
                       list(axes.values()), where=None if c.where is None else substitute(c.where, axes),
                       dtype=tensor.dtype, name=f"{tensor.name}.grad.scatter{count}")


def _adjoint(tensor: Tensor, contributions: list[_Contribution]) -> Tensor:
    """The compute ``<tensor>.grad`` adding ``contributions`` up."""
    scatters: list[Tensor] = []
    gathers: list[_Contribution] = []
    for c in contributions:
        probe = [IterVar(Range(0, d), f"j{k}", IterType.DATA_PAR) for k, d in enumerate(tensor.shape)]
        if invert(c.indices, c.loops, probe, {}) is None:
            scatters.append(_scattered(c, tensor, len(scatters)))
        else:
            gathers.append(c)

    def body(*point: IterVar) -> Expr:
        total: Expr | None = None
        for c in gathers:
            term = _gathered(c, point)
            assert term is not None, "an affine read stays affine"
            total = term if total is None else total + term
        for s in scatters:
            total = s[point] if total is None else total + s[point]
        return Const(0.0, tensor.dtype) if total is None else total.astype(tensor.dtype)

    return compute(tensor.shape, body, name=f"{tensor.name}.grad")


def _reader(tensor: Tensor) -> Head:
    """The adjoint read from ``tensor`` at a point."""
    return lambda point: tensor[tuple(point)]


def _ones(dtype: str) -> Head:
    """The adjoint of an output with no ``head``: one everywhere."""
    return lambda point: Const(1.0, dtype)


def _zeros(tensor: Tensor) -> Tensor:
    return compute(tensor.shape, lambda *i: Const(0.0, tensor.dtype), name=f"{tensor.name}.grad")


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
        For an integer input or output, a ``head`` of another shape, or a stage with no gradient (a scan, a
        scatter, a product or argmax reduction, a function with no derivative); the message names it.

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
    _check_head(output, head)
    ops = _stages(output)
    relevant = _depends(ops, {id(t.op) for t in wanted})
    heads: dict[tuple[int, int], Head] = {
        (id(output.op), output.value_index): _reader(head) if head is not None else _ones(output.dtype)}
    pending: dict[tuple[int, int], list[_Contribution]] = {}
    results: dict[tuple[int, int], Tensor] = {}
    for op in ops:
        if id(op) not in relevant:
            continue
        for k in range(op.num_outputs):
            key = (id(op), k)
            if key in pending and key not in heads:
                adjoint = _adjoint(op.output(k), pending.pop(key))
                heads[key] = _reader(adjoint)
                results[key] = adjoint
        if isinstance(op, PlaceholderOp):
            continue
        _check_differentiable(op)
        assert isinstance(op, ComputeOp)
        op_heads = [heads.get((id(op), k)) for k in range(op.num_outputs)]
        for tensor, c in _contributions(op, op_heads, relevant):
            tkey = (id(tensor.op), tensor.value_index)
            pending.setdefault(tkey, []).append(c)
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
