"""Graph operators: a registry of :class:`Op` definitions, each tying a Relay-style name to its pattern
kind, its declaration with :mod:`tesched.nn`, and a NumPy evaluation.

Type inference declares the op on placeholders of the argument types and reads the result's shape and
dtype, so the graph and the kernels can never disagree on shapes; errors name the op and the argument
types. The NumPy evaluation serves constant folding and :func:`tesched.graph.interpret`. This module knows
no graph nodes; the op families live in ``ops_*.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import tesched as ts
from tesched.graph.dims import SizeVars
from tesched.graph.types import TensorType, Type
from tesched.nn.pattern import Pattern
from tesched.te.tensor import Tensor

Declare = Callable[[Sequence[Tensor], Mapping[str, Any]], Tensor]
Evaluate = Callable[[Sequence[np.ndarray], Mapping[str, Any]], np.ndarray]


@dataclass(frozen=True, eq=False)
class Op:
    """An operator: ``name`` (as Relay spells it), ``pattern``, ``declare`` (the tesched.nn computation
    on input tensors and attributes), ``evaluate`` (NumPy), and ``arity`` (``None``: any number)."""

    name: str
    pattern: Pattern
    declare: Declare
    evaluate: Evaluate
    arity: int | None

    def infer(self, arg_types: Sequence[Type], attrs: Mapping[str, Any]) -> TensorType:
        """The result type of this op on arguments of ``arg_types``; raises on a mismatch. Remembered per
        argument types and attributes (when every attribute is a plain value: numbers, strings, None,
        tuples and lists of them), since declaring the op is what a graph's rewrites spend most on."""
        key = _inference_key(self, arg_types, attrs)
        known = _INFERRED.get(key) if key is not None else None
        if known is None:
            known = self._declare_type(arg_types, attrs)
            if key is not None:
                if len(_INFERRED) >= MAX_INFERRED:
                    _INFERRED.clear()
                _INFERRED[key] = known
        return known

    def _declare_type(self, arg_types: Sequence[Type], attrs: Mapping[str, Any]) -> TensorType:
        if self.arity is not None and len(arg_types) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} arguments, got {len(arg_types)}")
        tensors: list[TensorType] = []
        for k, t in enumerate(arg_types):
            if not isinstance(t, TensorType):
                raise TypeError(f"{self.name}: argument {k} must be a tensor, got {t}")
            tensors.append(t)
        types = ", ".join(map(str, arg_types))
        try:
            sizes = SizeVars([t.extents for t in tensors], [attrs])
            inputs = [ts.placeholder(sizes.extents(t.extents), t.dtype, name=f"arg{k}") for k, t in enumerate(tensors)]
            out = self.declare(inputs, sizes.attrs(attrs))
            return TensorType(sizes.graph_shape(out.shape, self.name), out.dtype)
        except (ValueError, TypeError) as err:
            raise type(err)(f"{self.name}({types}): {err}") from None

    def __repr__(self) -> str:
        return f"Op({self.name})"


MAX_INFERRED = 8192
"""Result types :meth:`Op.infer` remembers (all are forgotten when it is full)."""

_INFERRED: dict[tuple, TensorType] = {}
_PLAIN = (bool, int, float, str, type(None), np.integer, np.floating, np.bool_)


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an attribute that tells apart values of different types (``1``, ``1.0`` and
    ``True`` differ), or None when ``value`` is not plain (an array: not remembered)."""
    if isinstance(value, _PLAIN):
        return type(value).__name__, value
    if isinstance(value, (tuple, list)):
        items = [_frozen(v) for v in value]
        return None if any(i is None for i in items) else (type(value).__name__, tuple(items))
    return None


def _inference_key(op: Op, arg_types: Sequence[Type], attrs: Mapping[str, Any]) -> tuple | None:
    frozen = tuple((name, _frozen(value)) for name, value in sorted(attrs.items()))
    if any(f is None for _, f in frozen):
        return None
    key = (op, tuple(arg_types), frozen)       # the op itself, alive while remembered (not its id)
    try:
        hash(key)
    except TypeError:
        return None
    return key


_OPS: dict[str, Op] = {}


def register_op(name: str, pattern: Pattern, declare: Declare, evaluate: Evaluate,
                arity: int | None) -> Op:
    """Define op ``name``; a name can be defined once."""
    if name in _OPS:
        raise ValueError(f"op {name} is already registered")
    op = Op(name, pattern, declare, evaluate, arity)
    _OPS[name] = op
    return op


def get_op(name: str) -> Op:
    """The op called ``name`` (e.g. ``"nn.conv2d"``); ``ValueError`` naming it and the known ops otherwise."""
    try:
        return _OPS[name]
    except KeyError:
        raise ValueError(f"no op named {name!r}; known ops: {', '.join(sorted(_OPS))}") from None


def all_ops() -> list[Op]:
    return [_OPS[name] for name in sorted(_OPS)]
