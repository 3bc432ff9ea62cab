"""What each stage adds to the adjoints of the tensors it reads, and the adjoint stages that add it up.

:func:`contributions` differentiates one compute stage: for every floating tensor ``U`` its body reads,
``dC[v] * d body / d U[f(v)]`` at the element ``f(v)`` (:mod:`tesched.autodiff.derivative`), with sum,
max and min reductions handled (ties share the adjoint evenly, as PyTorch's ``amax`` does).
:func:`adjoint` adds a tensor's contributions up in one compute ``<tensor>.grad``: an affine read in gather
form (:mod:`tesched.autodiff.inverse`), a read at a data-dependent or clamped index through a
``ts.scatter_add``. The walk over a pipeline, and scans, are in :mod:`tesched.autodiff.gradient` and
:mod:`tesched.autodiff.scan_adjoint`.
"""
from __future__ import annotations

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
from tesched.te.scatter import ScatterOp, scatter_add
from tesched.te.tensor import (ComputeOp, IterType, IterVar, Operation, Range, Tensor, TensorRead, compute,
                                reduce_axis)
from tesched.te.update import UpdateOp
from tesched.te.visit import collect, structural_key, substitute

_sum = builtin("sum")
Head = Callable[[Sequence[Expr]], Expr]
Key = tuple[int, int]  # (id of an operation, output index)


@dataclass(frozen=True)
class Contribution:
    """What one stage adds to the adjoint of a tensor it reads: ``value`` (an expression of the stage's
    loops) at the element ``indices``, for the points where ``where`` holds."""

    stage: str
    indices: tuple[Expr, ...]
    value: Expr
    loops: list[LoopVar]
    where: Expr | None


def check_differentiable(op: Operation) -> None:
    if isinstance(op, ScatterOp) and op.body.combiner != "sum":
        raise GradientError(f"stage {op.name} is a {op.body.combiner} scatter: ts.gradient differentiates sum "
                            "scatters (ts.scatter_add) only")
    if isinstance(op, UpdateOp):
        raise GradientError(f"stage {op.name} is an update definition of {op.base.name}: ts.gradient does not "
                            "differentiate updates in place yet")
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


def contributions(op: ComputeOp, heads: list[Head | None], relevant: set[int]) -> list[tuple[Tensor, Contribution]]:
    """Every (read tensor, contribution) of stage ``op`` whose outputs have adjoints ``heads``."""
    if isinstance(op, ScatterOp):
        return _scatter_contributions(op, heads[0], relevant)
    out: list[tuple[Tensor, Contribution]] = []
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
                out.append((group[0].tensor, Contribution(op.name, group[0].indices, seed * d, loops, where)))
    return out


def _scatter_contributions(op: ScatterOp, head: Head | None, relevant: set[int]) -> list[tuple[Tensor, Contribution]]:
    """A sum scatter's: each point ``r`` passes the adjoint of the element it added to (``head`` read at its
    index, a gather) to what its value read. Its index is an integer, with no gradient."""
    if head is None:
        return []
    body = op.body
    seed = head(list(body.index))
    loops = loop_vars([a for a in body.axis if isinstance(a, IterVar)])
    out: list[tuple[Tensor, Contribution]] = []
    for group in _reads_by_element(body.source, relevant):
        d = partial(body.source, {id(r) for r in group})
        if d is not None:
            out.append((group[0].tensor, Contribution(op.name, group[0].indices, seed * d, loops, body.where)))
    return out


def _elementwise(op: ComputeOp, init: Expr, seed: Expr | None, axes: list[IterVar],
                 relevant: set[int]) -> list[tuple[Tensor, Contribution]]:
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
            out.append((group[0].tensor, Contribution(op.name, group[0].indices, seed * d, loop_vars(axes), None)))
    return out


def _gathered(c: Contribution, point: Sequence[IterVar]) -> Expr | None:
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


def _scattered(c: Contribution, tensor: Tensor, count: int, suffix: str) -> Tensor:
    """``c`` accumulated by a scatter over the stage's loops (indices that are not affine)."""
    ids = {id(lp.var) for lp in c.loops}
    if any(id(n) in ids for lp in c.loops for e in (lp.low, lp.extent) for n in collect(e, IterVar)):
        raise GradientError(f"stage {c.stage} reads {tensor.name} at a non-affine index inside a reduction whose "
                            "range depends on another loop; ts.gradient cannot invert this read")
    axes = {lp.var: _reduce_like(lp.var) for lp in c.loops}
    return scatter_add(tensor.shape, tuple(substitute(i, axes) for i in c.indices), substitute(c.value, axes),
                       list(axes.values()), where=None if c.where is None else substitute(c.where, axes),
                       dtype=tensor.dtype, name=f"{tensor.name}{suffix}.scatter{count}")


def adjoint(tensor: Tensor, contributions: list[Contribution], suffix: str = ".grad") -> Tensor:
    """The compute ``<tensor><suffix>`` adding ``contributions`` up."""
    scatters: list[Tensor] = []
    gathers: list[Contribution] = []
    for c in contributions:
        probe = [IterVar(Range(0, d), f"j{k}", IterType.DATA_PAR) for k, d in enumerate(tensor.shape)]
        if invert(c.indices, c.loops, probe, {}) is None:
            scatters.append(_scattered(c, tensor, len(scatters), suffix))
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

    return compute(tensor.shape, body, name=f"{tensor.name}{suffix}")


def whole(tensor: Tensor, head: Head, stage: str) -> Contribution:
    """``head`` given to every element of ``tensor`` (by ``stage``)."""
    point = [IterVar(Range(0, d), f"j{k}", IterType.DATA_PAR) for k, d in enumerate(tensor.shape)]
    return Contribution(stage, tuple(point), head(point), loop_vars(point), None)


def reader(tensor: Tensor) -> Head:
    """The adjoint read from ``tensor`` at a point."""
    return lambda point: tensor[tuple(point)]
