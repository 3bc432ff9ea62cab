"""The reduction nodes of expressions: :class:`Reduce` (``ts.sum``, ``ts.prod``, ``ts.max``, ``ts.min``,
``ts.comm_reducer``, with ``where`` and ``init``; a tuple reduction such as argmax is one node per
component) and :class:`MultiValue` (the body of a compute with several outputs).

Both only appear at the top of a ``compute`` body. This module knows how a reduction starts (identity or
``init``) and combines values; where its loops run is the schedule's business.
"""
from __future__ import annotations

import math
from typing import Protocol, Sequence

from tesched.te import dtype as dt
from tesched.te.expr import Binary, Const, Expr, Var
from tesched.te.visit import substitute, walk


class Reducer(Protocol):
    """What a :class:`Reduce` asks of a user-defined reducer (``ts.comm_reducer``,
    :mod:`tesched.te.reducer`): its identity and its combination, for the sources' dtypes."""

    name: str

    def identity_values(self, dtypes: tuple[str, ...]) -> tuple[Expr, ...]: ...

    def combine_values(self, acc: Sequence[Expr], value: Sequence[Expr]) -> tuple[Expr, ...]: ...


_BUILTIN_OPS = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}


class Reduce(Expr):
    """A commutative reduction of ``source`` over ``axis``: a built-in ``combiner`` (``sum``, ``prod``,
    ``max``, ``min``) or a user-defined ``reducer`` (``ts.comm_reducer``, whose name is ``combiner``).

    Only allowed at the top of a ``compute`` body, as in TVM. ``where`` restricts the reduced points;
    ``init`` (TVM's ``init``) replaces the identity as the starting value. A tuple reduction (argmax) has
    several ``sources`` (and ``inits``); the node stands for component ``value_index`` of the result, and
    a compute returning all components has one output per component.
    """

    __slots__ = ("combiner", "sources", "axis", "where", "inits", "reducer", "value_index")

    def __init__(self, combiner: str, source: Expr | Sequence[Expr], axis: Sequence["Var"], where: Expr | None,
                 init: Expr | Sequence[Expr] | None = None, reducer: Reducer | None = None, value_index: int = 0):
        self.combiner, self.axis, self.where = combiner, tuple(axis), where
        self.sources: tuple[Expr, ...] = tuple(source) if not isinstance(source, Expr) else (source,)
        self.inits: tuple[Expr, ...] | None = (None if init is None else
                                               tuple(init) if not isinstance(init, Expr) else (init,))
        self.reducer, self.value_index = reducer, value_index
        self.dtype = self.sources[value_index].dtype

    @property
    def source(self) -> Expr:
        """The reduced expression of this component."""
        return self.sources[self.value_index]

    @property
    def init(self) -> Expr | None:
        """The starting value of this component given by ``init=``, or None (the identity)."""
        return None if self.inits is None else self.inits[self.value_index]

    def children(self):
        return (self.sources + (() if self.where is None else (self.where,))
                + (() if self.inits is None else self.inits))

    def with_children(self, children):
        n = len(self.sources)
        where = children[n] if self.where is not None else None
        rest = tuple(children[n + (self.where is not None):])
        return Reduce(self.combiner, tuple(children[:n]), self.axis, where, rest if self.inits is not None else None,
                      self.reducer, self.value_index)

    def component(self, index: int) -> "Reduce":
        """The same reduction standing for component ``index``."""
        return Reduce(self.combiner, self.sources, self.axis, self.where, self.inits, self.reducer, index)

    def identities(self) -> tuple[Expr, ...]:
        """The identity of every component."""
        if self.reducer is not None:
            return tuple(self.reducer.identity_values(tuple(s.dtype for s in self.sources)))
        if self.combiner in ("sum", "prod"):
            return (Const(0 if self.combiner == "sum" else 1, self.dtype),)
        if dt.is_float(self.dtype):
            return (Const(-math.inf if self.combiner == "max" else math.inf, self.dtype),)
        low, high = dt.value_range(self.dtype)
        return (Const(low if self.combiner == "max" else high, self.dtype),)

    def identity(self) -> Expr:
        """The identity of this component."""
        return self.identities()[self.value_index]

    def starts(self) -> tuple[Expr, ...]:
        """The starting value of every component: ``init`` where given, else the identity."""
        return self.inits if self.inits is not None else self.identities()

    def combine_all(self, acc: Sequence[Expr], value: Sequence[Expr]) -> tuple[Expr, ...]:
        """Every component of ``acc`` combined with ``value`` (tuples of the components)."""
        if self.reducer is not None:
            return tuple(self.reducer.combine_values(acc, value))
        return (Binary(_BUILTIN_OPS[self.combiner], acc[0], value[0], self.dtype),)

    def combine(self, acc: Expr, value: Expr) -> Expr:
        """A single-component accumulator combined with one more value."""
        return self.combine_all((acc,), (value,))[0]


class RemappedReducer:
    """A user-defined reducer seen from a new stage (a cache, a partial reduction, a lifted inline
    reduction): its identity and combination may use the compute's axes (a ``comm_reducer`` whose
    functions close over them), which the new stage replaces by its own."""

    def __init__(self, reducer: Reducer, mapping: dict):
        self.reducer, self.mapping, self.name = reducer, mapping, reducer.name

    def identity_values(self, dtypes: tuple[str, ...]) -> tuple[Expr, ...]:
        """The reducer's identities, in the new stage's axes."""
        return tuple(substitute(e, self.mapping) for e in self.reducer.identity_values(dtypes))

    def combine_values(self, acc: Sequence[Expr], value: Sequence[Expr]) -> tuple[Expr, ...]:
        """The reducer's combination, in the new stage's axes."""
        return tuple(substitute(e, self.mapping) for e in self.reducer.combine_values(acc, value))


def remapped_reducer(body: Reduce, mapping: dict) -> Reducer | None:
    """``body``'s reducer, wrapped to use the new axes where its identity or combination reads old ones
    (unwrapped otherwise, so that tensorize still recognises it)."""
    reducer = body.reducer
    if reducer is None:
        return None
    dtypes = tuple(s.dtype for s in body.sources)
    probe = [Var(f"probe{k}", d) for k, d in enumerate(dtypes)]
    made = list(reducer.identity_values(dtypes)) + list(reducer.combine_values(probe, probe))
    old = {id(k) for k in mapping}
    if any(id(n) in old for e in made for n in walk(e)):
        return RemappedReducer(reducer, mapping)
    return reducer


class MultiValue(Expr):
    """The bodies of a compute with several outputs (``lambda i: (a, b)``), one value per output.

    It is the body of the operation, never part of an expression; analyses that walk a stage's reads see
    every output's reads through its children."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[Expr]):
        self.values = tuple(values)
        self.dtype = self.values[0].dtype

    def children(self):
        return self.values

    def with_children(self, children):
        return MultiValue(children)
