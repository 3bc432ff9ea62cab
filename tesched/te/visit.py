"""Generic traversals of expressions: post-order rewriting, substitution, collection.

Works on every node that implements ``children()``/``with_children()`` (all of :mod:`tesched.te.expr`,
tensor reads, and the loop-IR expression nodes).
"""
from __future__ import annotations

from typing import Callable, ClassVar, Iterator, Mapping, TypeVar

from tesched.te.expr import Expr

_Key = TypeVar("_Key", bound=Expr)


def rewrite(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild ``expr`` bottom-up; ``fn(node)`` may return a replacement (children already rewritten).

    ``fn`` is first offered the original node: a non-None answer replaces the whole subtree unvisited.
    """
    memo: dict[int, Expr] = {}

    def go(e: Expr) -> Expr:
        key = id(e)
        if key in memo:
            return memo[key]
        out = fn(e)
        if out is None:
            kids = e.children()
            if kids:
                new = tuple(go(c) for c in kids)
                out = e if all(a is b for a, b in zip(new, kids)) else e.with_children(new)
            else:
                out = e
        memo[key] = out
        return out

    return go(expr)


def substitute(expr: Expr, mapping: Mapping[_Key, Expr]) -> Expr:
    """Replace variables (by identity) with expressions."""
    by_id = {id(k): v for k, v in mapping.items()}
    return rewrite(expr, lambda e: by_id.get(id(e)))


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of ``expr``, pre-order, each shared node once."""
    seen: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(reversed(e.children()))


def collect(expr: Expr, cls: type) -> list:
    return [e for e in walk(expr) if isinstance(e, cls)]


def contains(expr: Expr, cls: type) -> bool:
    return any(isinstance(e, cls) for e in walk(expr))


class NodeFunctor:
    """Calls a method named after a node's class: ``visit(node)`` runs ``visit_<Class>(node)``, trying the
    class's bases in order (a ``LoopVar`` falls back to ``visit_Var``), else :meth:`visit_default`.

    The expression printer, the loop-IR printer, the C generator and the statement visitors derive from it,
    so a new node class needs one method per visitor (or none, where the default fits)."""

    _methods: ClassVar[dict[tuple[type, type], Callable]] = {}

    def visit(self, node: object):
        key = (type(self), type(node))
        method = NodeFunctor._methods.get(key)
        if method is None:
            method = type(self).visit_default
            for cls in type(node).__mro__:
                found = getattr(type(self), f"visit_{cls.__name__}", None)
                if found is not None:
                    method = found
                    break
            NodeFunctor._methods[key] = method
        return method(self, node)

    def visit_default(self, node: object):
        raise TypeError(f"{type(self).__name__} cannot handle {type(node).__name__}")
