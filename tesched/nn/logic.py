"""Comparisons, logic and selection: ``compare`` (``eq ne lt le gt ge``, NumPy broadcasting, a bool result),
``logical_not``, ``logical`` (``and or xor`` of bool tensors), ``where(cond, a, b)`` (three-way broadcast),
the reductions ``any``/``all`` over axes, and ``cast`` (a change of dtype, bool to and from numbers).

Comparisons and ``where`` are tagged ``broadcast``, ``logical_not`` and ``cast`` ``elemwise``, ``any``/``all``
``comm_reduce`` (a maximum or minimum of the condition as ``int32``, then a stage comparing it with zero,
as ``mean`` divides after its sum). Arithmetic on bool is refused by the dtype rules of :mod:`tesched.te.dtype`;
this module adds no rule of its own beyond asking for bool operands where logic needs them.
"""
from __future__ import annotations

from typing import Callable

import tesched as ts
from tesched.nn.elemwise import broadcast_read
from tesched.nn.pattern import Pattern, compute
from tesched.nn.reduce import Axes, reduced_axes
from tesched.nn.shape import broadcast_shapes
from tesched.te.expr import Expr, as_expr, binary
from tesched.te.tensor import Tensor

Operand = Tensor | float | int | bool

COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("and", "or", "xor")


def _require_bool(x: Tensor, what: str) -> None:
    if x.dtype != "bool":
        raise TypeError(f"{what}: operands must be bool tensors, got {x.dtype}")


def _broadcast(operands: tuple[Operand, ...], fn: Callable[..., Expr], name: str, like: str | None = None) -> Tensor:
    """One ``broadcast`` stage applying ``fn`` to the operands read under NumPy broadcasting; a number
    becomes a constant of ``like`` (default: the first tensor's dtype)."""
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError(f"{name}: at least one operand must be a tensor")
    shape: tuple[int, ...] = tensors[0].shape
    for t in tensors[1:]:
        shape = broadcast_shapes(shape, t.shape, name)
    dtype = like or tensors[0].dtype

    def value(side: Operand, i: tuple) -> Expr:
        return broadcast_read(side, i) if isinstance(side, Tensor) else as_expr(side, dtype)

    return compute(shape, lambda *i: fn(*(value(side, i) for side in operands)), name=name,
                   pattern=Pattern.BROADCAST, op=name)


def compare(a: Operand, b: Operand, op: str) -> Tensor:
    """``a <op> b`` for ``op`` among ``eq ne lt le gt ge``, broadcast; a bool tensor. Tensor operands have
    one dtype; a number takes the tensor's."""
    if op not in COMPARISONS:
        raise ValueError(f"compare: op must be one of {', '.join(COMPARISONS)}, got {op!r}")
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
        raise TypeError(f"compare {op}: dtypes {a.dtype} and {b.dtype} differ")
    return _broadcast((a, b), lambda x, y: binary(op, x, y), op)


def logical_not(x: Tensor) -> Tensor:
    """``not x`` of a bool tensor."""
    _require_bool(x, "logical_not")
    return compute(x.shape, lambda *i: ~x[i], name="logical_not", pattern=Pattern.ELEMWISE, op="logical_not")


def logical(a: Tensor, b: Tensor, op: str) -> Tensor:
    """``a and b``, ``a or b`` or ``a xor b`` (``op``) of bool tensors, broadcast."""
    if op not in LOGICAL:
        raise ValueError(f"logical: op must be one of {', '.join(LOGICAL)}, got {op!r}")
    _require_bool(a, f"logical_{op}")
    _require_bool(b, f"logical_{op}")
    apply = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op]
    return _broadcast((a, b), apply, f"logical_{op}")


def where(cond: Tensor, a: Operand, b: Operand) -> Tensor:
    """``a`` where the bool ``cond`` holds, else ``b``; the three broadcast together. Tensor values have one
    dtype; a number takes it."""
    _require_bool(cond, "where")
    values = [t for t in (a, b) if isinstance(t, Tensor)]
    if not values:
        raise TypeError("where: at least one of the two values must be a tensor")
    if len({t.dtype for t in values}) > 1:
        raise TypeError(f"where: the values' dtypes {values[0].dtype} and {values[1].dtype} differ")
    return _broadcast((cond, a, b), ts.select, "where", like=values[0].dtype)


def _any_all(x: Tensor, axis: Axes, keepdims: bool, name: str) -> Tensor:
    _require_bool(x, name)
    axes = reduced_axes(x.ndim, axis, name)
    raxes = {a: ts.reduce_axis((0, x.shape[a]), f"r{a}") for a in axes}
    kept = [a for a in range(x.ndim) if a not in raxes]
    shape = tuple(1 if a in raxes else x.shape[a] for a in range(x.ndim)) if keepdims else \
        tuple(x.shape[a] for a in kept)
    reducer = ts.max if name == "any" else ts.min

    def fcompute(*i):
        out_index = dict(zip(range(x.ndim), i)) if keepdims else dict(zip(kept, i))
        index = tuple(raxes[a] if a in raxes else out_index[a] for a in range(x.ndim))
        return reducer(ts.select(x[index], 1, 0), axis=list(raxes.values()))

    counted = compute(shape, fcompute, name=f"{name}_count", pattern=Pattern.COMM_REDUCE, op=name)
    return compute(shape, lambda *i: counted[i] != 0, name=name, pattern=Pattern.COMM_REDUCE, op=name)


def any(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether some element of the bool ``x`` along ``axis`` (all axes by default) holds."""
    return _any_all(x, axis, keepdims, "any")


def all(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether every element of the bool ``x`` along ``axis`` (all axes by default) holds."""
    return _any_all(x, axis, keepdims, "all")


def cast(x: Tensor, dtype: str) -> Tensor:
    """``x`` converted to ``dtype`` elementwise (to bool: ``x != 0``; from bool: 1 or 0)."""
    if dtype == "bool":
        return compute(x.shape, lambda *i: x[i] != as_expr(0, x.dtype), name="cast", pattern=Pattern.ELEMWISE,
                       op="cast")
    if x.dtype == "bool":
        return compute(x.shape, lambda *i: ts.select(x[i], as_expr(1, dtype), as_expr(0, dtype)), name="cast",
                       pattern=Pattern.ELEMWISE, op="cast")
    return compute(x.shape, lambda *i: x[i].astype(dtype), name="cast", pattern=Pattern.ELEMWISE, op="cast")
