"""Size hints: the value a schedule assumes for a symbolic size (``ts.var``) when it chooses tiles and
decides what runs in parallel.

A schedule chosen with a hint stays legal for every size: tesched splits a loop by any factor (the last,
partial tile is guarded, :mod:`tesched.transform`), fuses and parallelises loops of any extent, so a hint
only steers speed. :func:`size_hints` sets the hints of a declaration's size variables while it is
scheduled (the graph sets each dynamic dimension's largest value); a size without one is assumed to be
:data:`DEFAULT_HINT`. This module declares and schedules nothing.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from tesched.driver.allocations import evaluate_size
from tesched.te.expr import Const, Expr

DEFAULT_HINT = 64
"""The value assumed for a symbolic size without a hint."""

_HINTS: contextvars.ContextVar[dict[int, int]] = contextvars.ContextVar("size_hints", default={})


class _Hinted(dict):
    def __missing__(self, key: int) -> int:
        return DEFAULT_HINT


@contextlib.contextmanager
def size_hints(values: dict[int, int]) -> Iterator[None]:
    """Within the block, size variable ``v`` is assumed to be ``values[id(v)]`` by :func:`hint`."""
    token = _HINTS.set(values)
    try:
        yield
    finally:
        _HINTS.reset(token)


def hint(extent: int | Expr) -> int:
    """``extent`` as an int: itself when constant, else its value under the current size hints."""
    if isinstance(extent, int):
        return extent
    if isinstance(extent, Const):
        return int(extent.value)
    return max(1, evaluate_size(extent, _Hinted(_HINTS.get())))


def is_symbolic(extent: int | Expr) -> bool:
    """Whether ``extent`` depends on a symbolic size (a schedule must then stay legal for any value)."""
    return not isinstance(extent, (int, Const))
