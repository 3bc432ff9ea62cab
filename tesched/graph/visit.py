"""Generic traversals of graph expressions: post-order listing, bottom-up rewriting, use counts.

Works on every node with ``children()`` and ``with_children()`` (see :mod:`.ir`). A call's children are
its arguments; the body of a function called by a ``Call`` is a separate scope and is not visited.
Traversals are iterative, so deep graphs do not hit Python's recursion limit.
"""
from __future__ import annotations

from typing import Callable, Protocol, Self, Sequence, TypeVar


class Node(Protocol):
    """A graph node: its children, and a copy of it with other children."""

    def children(self) -> tuple: ...
    def with_children(self, children: Sequence) -> Self: ...


N = TypeVar("N", bound=Node)


def post_order(root: Node) -> list:
    """Every node reachable from ``root``, each once, producers before consumers."""
    order: list = []
    done: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        for child in reversed(node.children()):
            if id(child) not in done:
                stack.append((child, False))
    return order


def rewrite(root: N, fn: Callable[[N, N], N | None]) -> N:
    """Rebuild ``root`` bottom-up. ``fn(node, original)`` sees each node with its children already
    rewritten (``original`` is the node before rewriting) and may return a replacement."""
    memo: dict[int, N] = {}
    node: N
    for node in post_order(root):
        kids = node.children()
        new_kids = tuple(memo[id(k)] for k in kids)
        rebuilt = node if all(a is b for a, b in zip(kids, new_kids)) else node.with_children(new_kids)
        replacement = fn(rebuilt, node)
        memo[id(node)] = rebuilt if replacement is None else replacement
    return memo[id(root)]


def use_counts(root: Node) -> dict[int, int]:
    """``{id(node): number of distinct consumers}``; ``root`` itself counts one use (the result)."""
    counts: dict[int, int] = {id(root): 1}
    for node in post_order(root):
        for child in {id(k): k for k in node.children()}.values():
            counts[id(child)] = counts.get(id(child), 0) + 1
    return counts
