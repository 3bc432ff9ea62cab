"""Op-chain patterns and where they match in a graph.

A :class:`ChainPattern` is a sequence of op steps, e.g. ``pattern("nn.conv2d", "add", "nn.relu")``: a
match is a chain of calls where each step's call takes the previous step's value as its first argument
(or as either argument of ``add`` and ``multiply``, which commute, so the result is the same), and each
value inside the chain (all but the last) has that call as its only consumer (it is not a result
either), so the chain can be replaced by one call without recomputing anything.

A step is an op name, or ``is_op(name, *free_args, **attrs)`` with constraints (the names are Relay's):

- ``attrs``: each named attribute must equal the given value; an int given for a tuple attribute matches
  when every entry equals it (``padding=1`` matches ``(1, 1, 1, 1)``);
- ``free_args``: one constraint per *free* argument of the step, in argument order: ``wildcard()``
  (anything) or ``is_constant()`` (a constant). A step's free arguments are all its arguments for the
  first step, and all but the chained one for the others.

The *free inputs* of a match are its steps' free arguments, first step first, each in argument order.
When both arguments of an ``add`` or ``multiply`` could continue the chain, the leftmost that completes
the match is taken. This module finds matches; replacing them is :mod:`.partition`'s job.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, TypeGuard

from tesched.graph.ir import Call, Constant, Expr
from tesched.graph.op import Op, get_op

COMMUTATIVE = frozenset({"add", "multiply"})
"""Ops whose chained value may be either argument: the result does not depend on the order."""


class ArgPattern:
    """A constraint on one free argument."""

    def matches(self, expr: Expr) -> bool:
        raise NotImplementedError


class Wildcard(ArgPattern):
    def matches(self, expr: Expr) -> bool:
        return True

    def __repr__(self) -> str:
        return "wildcard()"


class IsConstant(ArgPattern):
    def matches(self, expr: Expr) -> bool:
        return isinstance(expr, Constant)

    def __repr__(self) -> str:
        return "is_constant()"


def wildcard() -> ArgPattern:
    """Any argument."""
    return Wildcard()


def is_constant() -> ArgPattern:
    """A constant argument (e.g. weights bound with ``bind_params``)."""
    return IsConstant()


@dataclass(frozen=True)
class OpStep:
    """One step: op ``name``, optional constraints on its free arguments, and required attributes."""

    name: str
    free_args: tuple[ArgPattern, ...] | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def matches_call(self, node: Expr) -> TypeGuard[Call]:
        """Whether ``node`` calls this step's op with the required attributes."""
        if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == self.name):
            return False
        return all(k in node.attrs and _attr_matches(node.attrs[k], v) for k, v in self.attrs.items())

    def matches_free_args(self, args: Sequence[Expr]) -> bool:
        if self.free_args is None:
            return True
        return len(args) == len(self.free_args) and all(p.matches(a) for p, a in zip(self.free_args, args))

    def __str__(self) -> str:
        parts = [repr(p) for p in self.free_args or ()] + [f"{k}={v!r}" for k, v in self.attrs.items()]
        return f"{self.name}({', '.join(parts)})" if parts else self.name


def _attr_matches(value: Any, want: Any) -> bool:
    if isinstance(value, tuple) and isinstance(want, int) and not isinstance(want, bool):
        return all(v == want for v in value)
    if isinstance(value, tuple) and isinstance(want, list):
        return value == tuple(want)
    return value == want


def is_op(name: str, *free_args: ArgPattern, **attrs: Any) -> OpStep:
    """A step calling op ``name`` whose free arguments match ``free_args`` (if given) and whose attributes
    include ``attrs``, e.g. ``is_op("nn.conv2d", wildcard(), is_constant(), strides=1, padding=1)``."""
    for p in free_args:
        if not isinstance(p, ArgPattern):
            raise TypeError(f"is_op({name!r}): argument constraints are wildcard() or is_constant(), got {p!r}")
    return OpStep(name, tuple(free_args) if free_args else None, dict(attrs))


@dataclass(frozen=True)
class Match:
    """A chain found in a graph: its calls in step order, the argument position of each call (after the
    first) that takes the previous one, and the free inputs in order."""

    calls: tuple[Call, ...]
    chain_positions: tuple[int, ...]
    free_inputs: tuple[Expr, ...]

    @property
    def root(self) -> Call:
        return self.calls[-1]


class ChainPattern:
    """A chain of op steps; see the module doc."""

    def __init__(self, steps: Sequence[str | OpStep]):
        if not steps:
            raise ValueError("pattern: give at least one op")
        self.steps = tuple(s if isinstance(s, OpStep) else self._step(s) for s in steps)
        for k, step in enumerate(self.steps):
            try:
                op = get_op(step.name)
            except ValueError as err:
                raise ValueError(f"pattern {self}: {err}") from None
            free = None if op.arity is None else op.arity - (k > 0)
            if step.free_args is not None and free is not None and len(step.free_args) != free:
                raise ValueError(f"pattern {self}: step {k} ({step.name}) has {free} free arguments, but "
                                 f"constraints are given for {len(step.free_args)}")

    @staticmethod
    def _step(step: object) -> OpStep:
        if not isinstance(step, str):
            raise TypeError(f"pattern: a step is an op name or is_op(...), got {step!r}")
        return OpStep(step)

    def __str__(self) -> str:
        return " -> ".join(map(str, self.steps))

    def __repr__(self) -> str:
        return f"pattern({', '.join(repr(str(s)) for s in self.steps)})"

    def match(self, root: Expr, consumers: Mapping[int, int], taken: set[int]) -> Match | None:
        """The match ending at ``root``, or ``None``. ``consumers[id(v)]`` counts the uses of each value
        (results included); calls in ``taken`` belong to other matches."""
        found = self._match_from(len(self.steps) - 1, root, consumers, taken)
        if found is None:
            return None
        calls, positions, free = found
        return Match(tuple(calls), tuple(positions), tuple(a for group in free for a in group))

    def _match_from(self, k: int, node: Expr, consumers: Mapping[int, int], taken: set[int]):
        """``(calls, chain positions, free args per step)`` of steps ``0..k`` ending at ``node``."""
        step = self.steps[k]
        if id(node) in taken or not step.matches_call(node):
            return None
        args = node.args
        if k == 0:
            return ([node], [], [args]) if step.matches_free_args(args) else None
        for pos in range(len(args)) if step.name in COMMUTATIVE else range(min(1, len(args))):
            arg = args[pos]
            if consumers.get(id(arg), 0) != 1 or sum(a is arg for a in args) != 1:
                continue
            free = args[:pos] + args[pos + 1:]
            if not step.matches_free_args(free):
                continue
            found = self._match_from(k - 1, arg, consumers, taken)
            if found is not None:
                calls, positions, free_args = found
                return calls + [node], positions + [pos], free_args + [free]
        return None


def pattern(*steps: str | OpStep) -> ChainPattern:
    """A chain pattern, e.g. ``pattern("nn.conv2d", "add", "nn.relu")`` or ``pattern("add", "add")``."""
    return ChainPattern(steps)

