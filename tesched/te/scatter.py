"""Scatters: reductions whose output index is an expression (Halide's update definitions with a
data-dependent left-hand side, ``hist(im(r.x, r.y)) += 1``).

``ts.scatter(shape, index, value, axis)`` declares a tensor of ``shape`` that starts at the reducer's
identity and, for every point of the reduce axes ``axis``, combines ``value`` into the element at
``index`` (both expressions of those axes; the index may read tensors: a histogram's bin is a pixel's
value). The operation is a :class:`ScatterOp`, a :class:`~tesched.te.tensor.ComputeOp` whose body is a
:class:`Scatter` reduction: its loops are the reduce axes only (the identity is stored first, over the
whole tensor). This module only declares; the lowering decides how the loops run, and the dependence
analysis keeps a scatter's loops serial (two points may write the same element) unless the schedule
makes the accumulation safe (``s[H].atomic()``).
"""
from __future__ import annotations

from typing import Sequence

from tesched.te import checks
from tesched.te import dtype as dt
from tesched.te.expr import Expr, Var, as_expr, cast_to
from tesched.te.reduction import Reduce
from tesched.te.tensor import (ComputeOp, IterType, IterVar, Range, Tensor, TensorRead, _normalize_shape,
                               integer_indices)
from tesched.te.visit import walk

REDUCERS = ("sum", "max", "min")


class Scatter(Reduce):
    """``out[index] = combine(out[index], source)`` for every point of ``axis`` (where ``where`` holds)."""

    __slots__ = ("index",)

    def __init__(self, combiner: str, source: Expr, axis: Sequence[Var], where: Expr | None,
                 index: Sequence[Expr]):
        super().__init__(combiner, source, axis, where)
        self.index = tuple(index)

    def children(self):
        return (self.source,) + self.index + (() if self.where is None else (self.where,))

    def with_children(self, children):
        n = len(self.index)
        where = children[1 + n] if self.where is not None else None
        return Scatter(self.combiner, children[0], self.axis, where, children[1:1 + n])


class ScatterOp(ComputeOp):
    """The operation of :func:`scatter`: ``axis`` spans the output (where the identity is stored),
    ``reduce_axis`` the points that scatter, which are the stage's loops."""

    body: Scatter

    @property
    def loop_axes(self) -> list[IterVar]:
        """The loops a schedule sees: the reduce axes (the identity's loops are not scheduled)."""
        return list(self.reduce_axis)

    def target(self, body: Scatter | None = None) -> TensorRead:
        """The element ``body`` (default: the declared body) accumulates into, as a read of the output."""
        return TensorRead(self.output(0), (self.body if body is None else body).index)


def _reducer_name(reducer: object) -> str:
    name = getattr(reducer, "__name__", reducer)
    if name not in REDUCERS:
        raise ValueError(f"scatter: reducer must be one of {', '.join(REDUCERS)} (or ts.sum, ts.max, ts.min), "
                         f"got {reducer!r}")
    return str(name)


def scatter(shape, index: object, value: object, axis: IterVar | Sequence[IterVar], reducer: object = "sum",
            where: object = None, dtype: str | None = None, name: str = "scatter", tag: str = "") -> Tensor:
    """A tensor accumulated at computed indices: Halide's ``f(index) += value`` over an ``RDom``.

    Parameters
    ----------
    shape : tuple of int or size variables
        The output's shape.
    index : Expr or tuple of Expr
        Where each point of ``axis`` accumulates: one integer expression per output dimension, of the
        reduce axes (it may read tensors: ``img[ry, rx]``; it is checked against ``shape`` when the kernel
        runs unless it is provably inside).
    value : Expr or number
        What each point contributes (cast to ``dtype``).
    axis : IterVar or list of IterVar
        The reduce axes (``ts.reduce_axis``) the scatter runs over.
    reducer : {"sum", "max", "min"} or ts.sum, ts.max, ts.min
        How contributions combine; the output starts at the reducer's identity (0, the lowest or the
        highest value).
    where : Expr, optional
        Only the points where it holds contribute.
    dtype : str, optional
        The output's dtype; default: ``value``'s.
    name, tag : str
        The operation's name and tag.

    Returns
    -------
    Tensor

    Example
    -------
    >>> ry, rx = ts.reduce_axis((0, h), name="ry"), ts.reduce_axis((0, w), name="rx")
    >>> hist = ts.scatter((256,), img[ry, rx], 1, [ry, rx], name="hist")      # img: uint8
    """
    checks.check_name(name, "scatter")
    combiner = _reducer_name(reducer)
    dims = _normalize_shape(shape, f"scatter {name}")
    axes = [axis] if isinstance(axis, IterVar) else list(axis)
    if not axes or any(not isinstance(a, IterVar) or a.iter_type != IterType.COMM_REDUCE for a in axes):
        raise TypeError(f"scatter {name}: axis must be a reduce axis (ts.reduce_axis) or a list of them, got {axis!r}")
    index_exprs = integer_indices(tuple(index) if isinstance(index, list) else index, len(dims),
                                  f"scatter {name}: the output", f"the output of scatter {name}")
    source = as_expr(value, dtype)
    if dtype is not None:
        source = cast_to(source, dt.normalize(dtype, f"scatter {name}"))
    cond = None if where is None else as_expr(where)
    body = Scatter(combiner, source, axes, cond, index_exprs)
    _check_axes(name, axes, body)
    out_axes = [IterVar(Range(0, d), f"i{k}", IterType.DATA_PAR) for k, d in enumerate(dims)]
    return ScatterOp(name, tag, out_axes, body, None).output(0)


def _check_axes(name: str, axes: list[IterVar], body: Scatter) -> None:
    """Every loop variable of the body is one of the scatter's reduce axes."""
    own = {id(a) for a in axes}
    for node in walk(body):
        if isinstance(node, IterVar) and id(node) not in own:
            raise ValueError(f"scatter {name}: the body uses {node.name}, which is not one of its reduce axes "
                             f"({', '.join(a.name for a in axes)})")


def scatter_add(shape, index: object, value: object, axis: IterVar | Sequence[IterVar], where: object = None,
                dtype: str | None = None, name: str = "scatter_add") -> Tensor:
    """``scatter`` with the ``sum`` reducer: ``out[index] += value`` (a histogram, a bilateral grid's splat).

    Parameters
    ----------
    shape, index, value, axis, where, dtype, name
        As for :func:`scatter`.

    Returns
    -------
    Tensor
    """
    return scatter(shape, index, value, axis, "sum", where, dtype, name)

