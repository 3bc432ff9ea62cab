"""Dynamic dimensions between the graph and the tensor expressions: :class:`SizeVars` gives each graph
:class:`~.types.Dim` one size variable (``ts.var``) per declaration, so a kernel's extents are symbolic
and its sizes are bound from its arguments at call time, and maps a declared shape back to graph extents.

A graph shape entry is an int or a dim itself: an output extent that is an expression of dims (``2 *
batch``, ``batch * seq``) is refused with a ``TypeError`` naming it, so the graph never holds a size it
cannot bind from an input. This module decides no schedule; schedules read size hints (:mod:`tesched.nn.hints`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import tesched as ts
from tesched.arith.simplify import simplify
from tesched.graph.types import Dim, Extent, dims_of
from tesched.te.expr import Const, Expr, Var


def _attr_dims(values: Any) -> list[Dim]:
    """The dims among attribute values (in lists and tuples too)."""
    found: list[Dim] = []
    for v in values:
        if isinstance(v, Dim):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += _attr_dims(v)
    return found


class SizeVars:
    """One size variable per dim of ``shapes`` and of the attributes ``attrs`` (named after it), for one
    declaration."""

    def __init__(self, shapes: Sequence[tuple[Extent, ...]], attrs: Sequence[Mapping[str, Any]] = ()):
        self.dims = dims_of(list(shapes) + [tuple(_attr_dims(a.values())) for a in attrs])
        self.vars = {d.name: ts.var(d.name) for d in self.dims}

    def extents(self, shape: tuple[Extent, ...]) -> tuple[int | Var, ...]:
        """``shape`` with each dim replaced by its size variable (a placeholder's shape)."""
        return tuple(self.vars[d.name] if isinstance(d, Dim) else d for d in shape)

    def attrs(self, attrs: Mapping[str, Any]) -> Mapping[str, Any]:
        """``attrs`` with each dim (in lists and tuples too: a reshape's target) replaced by its size variable."""
        def swap(value: Any) -> Any:
            if isinstance(value, Dim):
                if value.name not in self.vars:
                    raise TypeError(f"dimension {value.name!r} of an attribute is not a dimension of the declaration")
                return self.vars[value.name]
            if isinstance(value, (list, tuple)):
                return type(value)(swap(v) for v in value)
            return value
        if not any(isinstance(v, (Dim, list, tuple)) for v in attrs.values()):
            return attrs
        return {name: swap(value) for name, value in attrs.items()}

    def hints(self) -> dict[int, int]:
        """Each size variable's schedule hint (``id(var) -> dim.max``: schedules are chosen for the largest
        size, and stay legal for every size of the range)."""
        return {id(self.vars[d.name]): d.max for d in self.dims}

    def graph_shape(self, shape: Sequence[object], op: str) -> tuple[Extent, ...]:
        """A declared tensor's shape as graph extents: ints, and dims for their own size variables."""
        by_var = {id(v): d for d, v in zip(self.dims, self.vars.values())}
        out: list[Extent] = []
        for extent in shape:
            if isinstance(extent, int):
                out.append(extent)
                continue
            e = simplify(extent) if isinstance(extent, Expr) else extent
            if isinstance(e, Const):
                out.append(int(e.value))
            elif isinstance(e, Var) and id(e) in by_var:
                out.append(by_var[id(e)])
            else:
                raise TypeError(f"{op}: output dimension {e} is an expression of dynamic dimension(s) "
                                f"{', '.join(d.name for d in self.dims)}; a dynamic dimension can only pass "
                                "through an op unchanged")
        return tuple(out)
