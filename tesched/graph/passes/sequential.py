"""Chaining passes: :class:`Sequential` runs graph -> graph functions in order and can report the graph
after each one (``trace``). A pass is any callable taking and returning a :class:`~..ir.Function`.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from tesched.graph.ir import Function

Pass = Callable[[Function], Function]
Trace = Callable[[str, Function], None]


def pass_name(p: Pass) -> str:
    """The name a pass is known by (its function's name; partial applications keep it)."""
    while isinstance(p, functools.partial):
        p = p.func
    return getattr(p, "__name__", type(p).__name__)


def print_trace(name: str, f: Function) -> None:
    """A trace callback printing each pass's result under a header."""
    print(f"# after {name}\n{f}\n")


class Sequential:
    """Passes applied in order: ``Sequential([simplify_inference, fold_constant])(f)``."""

    def __init__(self, passes: Sequence[Pass]):
        for p in passes:
            if not callable(p):
                raise TypeError(f"Sequential: {p!r} is not a pass (a callable Function -> Function)")
        self.passes = list(passes)

    @property
    def names(self) -> list[str]:
        """The names of the passes, in the order they run."""
        return [pass_name(p) for p in self.passes]

    def __call__(self, f: Function, trace: Trace | None = None) -> Function:
        """``f`` after every pass; ``trace(name, result)`` is called after each (e.g. ``print_trace``)."""
        if not isinstance(f, Function):
            raise TypeError(f"passes run on a Function, got {type(f).__name__}")
        for p in self.passes:
            f = p(f)
            if not isinstance(f, Function):
                raise TypeError(f"pass {pass_name(p)} returned {type(f).__name__}, not a Function")
            if trace is not None:
                trace(pass_name(p), f)
        return f

    def __repr__(self) -> str:
        return f"Sequential([{', '.join(self.names)}])"
