"""Generic traversals of expressions: post-order rewriting, substitution, collection.

Works on every node that implements ``children()``/``with_children()`` (all of :mod:`tesched.te.expr`,
tensor reads, and the loop-IR expression nodes).
"""
from __future__ import annotations

from typing import Callable, ClassVar, Iterator, Mapping, TypeVar

from tesched.te.expr import Const, Expr, Var

_Key = TypeVar("_Key", bound=Expr)


def rewrite(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild ``expr`` bottom-up; ``fn(node)`` may return a replacement (children already rewritten).

    ``fn`` is first offered the original node: a non-None answer replaces the whole subtree unvisited.
    Shared subexpressions are rebuilt once; the walk uses an explicit stack, so deep expressions (an
    inlined chain of a hundred stages) do not exhaust Python's recursion limit.
    """
    memo: dict[int, Expr] = {}
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        e, expanded = stack.pop()
        key = id(e)
        if key in memo:
            continue
        kids = e.children()
        if not expanded:
            out = fn(e)
            if out is not None:
                memo[key] = out
                continue
            if kids:
                stack.append((e, True))
                stack.extend((c, False) for c in reversed(kids) if id(c) not in memo)
                continue
            memo[key] = e
            continue
        new = tuple(memo[id(c)] for c in kids)
        memo[key] = e if all(a is b for a, b in zip(new, kids)) else e.with_children(new)
    return memo[id(expr)]


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


def structural_key(e: Expr, memo: dict[int, tuple] | None = None) -> tuple:
    """A hashable key equal for structurally equal expressions (variables and tensors by identity);
    shared subexpressions are keyed once (``memo``), so a DAG costs its number of nodes."""
    memo = {} if memo is None else memo
    key = memo.get(id(e))
    if key is not None:
        return key
    if isinstance(e, Var):
        key = ("v", id(e))
    elif isinstance(e, Const):
        key = ("c", e.value, e.dtype)
    else:
        tag = getattr(e, "op", None) or getattr(e, "name", None) or getattr(e, "combiner", None)
        target = getattr(e, "buffer", None) or getattr(e, "tensor", None)
        key = (type(e).__name__, tag, e.dtype, id(target) if target is not None else None,
               tuple(structural_key(c, memo) for c in e.children()))
    memo[id(e)] = key
    return key


def tree_size(e: Expr) -> int:
    """The number of nodes of ``e`` as a tree (shared subexpressions counted at each use)."""
    return 1 + sum(tree_size(c) for c in e.children())
