"""Dynamic dimensions of an exported program: each ``torch.export.Dim`` becomes a graph
:class:`~tesched.graph.types.Dim` with the user's name (``"batch"``, the ``Dim``'s name; the program's
symbol, such as ``s77``, when PyTorch kept no name) and the range the program records.

A symbolic size that is one dimension imports as that dimension; a size computed from dimensions
(``2 * batch``, ``batch * seq``, as a ``view`` that merges a dynamic axis with another makes) and a
dimension without an upper bound are refused with a :class:`~.errors.FrontendError` naming the dimension
and where it was met. This module converts no op.
"""
from __future__ import annotations

from typing import Any

from tesched.frontend.errors import FrontendError
from tesched.frontend.lazy_torch import require_torch
from tesched.graph.types import Dim, Extent


class DynamicDims:
    """The dims of one program, made once per symbol."""

    def __init__(self, program: Any):
        self.ranges = dict(program.range_constraints)
        self._made: dict[Any, Dim] = {}

    def extent(self, size: Any, where: str) -> Extent:
        """A shape entry (an int, or a ``torch.SymInt``) as a graph extent; ``where`` names what it sizes."""
        torch = require_torch()
        if not isinstance(size, torch.SymInt):
            return int(size)
        expr = size.node.expr
        if expr.is_Integer:
            return int(expr)
        if not expr.is_Symbol:
            names = ", ".join(sorted(self._dim(s, size, where).name for s in expr.free_symbols))
            raise FrontendError(f"{where} has a size {self._named(expr, size, where)} computed from the dynamic "
                                f"dimension(s) {names}; tesched keeps a dynamic dimension whole (an op may pass "
                                "it through, not merge, split or scale it)")
        return self._dim(expr, size, where)

    def _dim(self, symbol: Any, size: Any, where: str) -> Dim:
        if symbol not in self._made:
            name = _user_name(symbol, size)
            bounds = self.ranges.get(symbol)
            upper = _bound(getattr(bounds, "upper", None))
            if upper is None:
                raise FrontendError(f"dimension {name!r} ({where}) has no upper bound; declare one: "
                                    f"torch.export.Dim({name!r}, max=...)")
            self._made[symbol] = Dim(name, max(1, _bound(getattr(bounds, "lower", 1)) or 1), upper)
        return self._made[symbol]

    def _named(self, expr: Any, size: Any, where: str) -> str:
        """``expr`` with each symbol written as its dimension's name."""
        text = str(expr)
        for s in sorted(expr.free_symbols, key=lambda s: -len(str(s))):
            text = text.replace(str(s), self._dim(s, size, where).name)
        return text


def _user_name(symbol: Any, size: Any) -> str:
    """The name the user gave the ``Dim`` of ``symbol`` (PyTorch's shape environment keeps it as a debug
    name of the input axis it came from), else the symbol's own name."""
    env = getattr(size.node, "shape_env", None)
    names = getattr(env, "source_name_to_debug_name", {}) or {}
    for source in (getattr(env, "var_to_sources", {}) or {}).get(symbol, []):
        source_name = source.name() if callable(source.name) else source.name
        if source_name in names and str(names[source_name]).isidentifier():
            return str(names[source_name])
    return str(symbol)


def _bound(value: Any) -> int | None:
    """A range bound as an int; ``None`` for an infinite one (or none)."""
    try:
        bound = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return bound if abs(bound) < 1 << 62 else None
