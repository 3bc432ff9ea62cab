"""Walk and rebuild loop-IR statements.

:class:`StmtVisitor` visits every statement (``visit_<Class>`` methods override the default, which
visits the children) and hands every expression to :meth:`StmtVisitor.visit_expr`. :class:`StmtMutator`
rebuilds: ``visit_<Class>`` methods may return a replacement, and the default returns the statement with
its children mutated (the same object when nothing changed). Children come from the node's dataclass
fields (see :mod:`.nodes`), so neither needs a method per node class.

:func:`map_stmt` is the functional form (a function on expressions, an optional function on
statements), :func:`walk_stmts` lists statements in pre-order, :func:`bound_inside` names the variables
declared inside a statement (what may not move out of it) and :func:`rebind_buffer` points every access
of one buffer at another. Nothing here knows isl or C.

A chain of ``let`` statements (one per shared value of an inlined chain: thousands) is walked in a loop,
not by recursion, by every visitor and mutator that does not handle ``LetStmt`` itself.
"""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Callable, Iterator

from tesched.ir.node_types import (Address, Allocate, Buffer, LetStmt, Load, OriginVar, Stmt, Store, VLoad, VLoadMasked,
                                    VLoadStrided, VStore, VGather)
from tesched.te.expr import Expr
from tesched.te.visit import NodeFunctor, rewrite


def child_fields(s: Stmt) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of each field of ``s`` that may hold children (every field but ``binds``)."""
    for f in fields(s):
        if f.name not in s.binds:
            yield f.name, getattr(s, f.name)


def let_chain(s: LetStmt) -> tuple[list[LetStmt], Stmt]:
    """The ``let`` statements nested from ``s`` inward, and the first statement inside them that is not one."""
    chain: list[LetStmt] = []
    node: Stmt = s
    while isinstance(node, LetStmt):
        chain.append(node)
        node = node.body
    return chain, node


def _own_lets(functor: NodeFunctor) -> bool:
    """Whether ``functor``'s class handles ``LetStmt`` itself (then chains are visited through it)."""
    return getattr(type(functor), "visit_LetStmt", None) is not None


class StmtVisitor(NodeFunctor):
    """Visits statements; override ``visit_<Class>`` for the nodes you care about and ``visit_expr`` to see
    expressions. Call :meth:`visit_default` from an override to continue into the children."""

    def visit_default(self, s: object) -> None:
        assert isinstance(s, Stmt), f"not a statement: {s!r}"
        if isinstance(s, LetStmt) and not _own_lets(self):
            chain, inner = let_chain(s)
            for let in chain:
                self.visit_expr(let.value)
            self.visit(inner)
            return
        for _, value in child_fields(s):
            for item in (value if isinstance(value, (list, tuple)) else (value,)):
                if isinstance(item, Stmt):
                    self.visit(item)
                elif isinstance(item, Expr):
                    self.visit_expr(item)

    def visit_expr(self, e: Expr) -> None:
        """Called with every expression child of a visited statement."""


class StmtMutator(NodeFunctor):
    """Rebuilds statements: ``visit(s)`` returns ``s`` or its replacement. The default mutates the
    children (statements through ``visit``, expressions through ``mutate_expr``)."""

    def visit_default(self, s: object) -> Stmt:
        assert isinstance(s, Stmt), f"not a statement: {s!r}"
        if isinstance(s, LetStmt) and not _own_lets(self):
            return self._let_chain(s)
        changes: dict[str, Any] = {}
        for name, value in child_fields(s):
            new = self._value(value)
            if new is not value:
                changes[name] = new
        return replace(s, **changes) if changes else s

    def _value(self, value: Any) -> Any:
        if isinstance(value, Stmt):
            return self.visit(value)
        if isinstance(value, Expr):
            return self.mutate_expr(value)
        if isinstance(value, (list, tuple)) and any(isinstance(v, (Stmt, Expr)) for v in value):
            items = [self._value(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            return type(value)(items)
        return value

    def mutate_expr(self, e: Expr) -> Expr:
        """The replacement of an expression child (itself by default)."""
        return e

    def replace_first(self, s: Stmt) -> Stmt | None:
        """A replacement of ``s`` made before visiting it (None: visit it); offered each ``let`` of a chain
        after the first, which :meth:`visit` does not see."""
        return None

    def _let_chain(self, s: LetStmt) -> Stmt:
        chain: list[LetStmt] = [s]
        values = [self.mutate_expr(s.value)]
        node = s.body
        body: Stmt | None = None
        while isinstance(node, LetStmt):
            body = self.replace_first(node)
            if body is not None:
                break
            chain.append(node)
            values.append(self.mutate_expr(node.value))
            node = node.body
        if body is None:
            body = self.visit(node)
        for let, value in zip(reversed(chain), reversed(values)):
            body = let if value is let.value and body is let.body else replace(let, value=value, body=body)
        return body


class _FunctionMutator(StmtMutator):
    def __init__(self, on_expr: Callable[[Expr], Expr] | None,
                 on_stmt: Callable[[Stmt], Stmt | None] | None):
        self.on_expr, self.on_stmt = on_expr, on_stmt

    def visit(self, node: object) -> Stmt:
        out = self.replace_first(node) if isinstance(node, Stmt) else None
        return out if out is not None else self.visit_default(node)

    def replace_first(self, s: Stmt) -> Stmt | None:
        return self.on_stmt(s) if self.on_stmt is not None else None

    def mutate_expr(self, e: Expr) -> Expr:
        return e if self.on_expr is None else self.on_expr(e)


def map_stmt(stmt: Stmt, on_expr: Callable[[Expr], Expr] | None = None,
             on_stmt: Callable[[Stmt], Stmt | None] | None = None) -> Stmt:
    """``stmt`` rebuilt with ``on_expr`` applied to every expression child; ``on_stmt(s)`` may replace a
    statement first (returning None continues into its children)."""
    return _FunctionMutator(on_expr, on_stmt).visit(stmt)


def walk_stmts(stmt: Stmt) -> Iterator[Stmt]:
    """Every statement of ``stmt``, pre-order."""
    stack = [stmt]
    while stack:
        s = stack.pop()
        yield s
        kids = [item for _, value in child_fields(s)
                for item in (value if isinstance(value, (list, tuple)) else (value,)) if isinstance(item, Stmt)]
        stack.extend(reversed(kids))


def bound_inside(stmt: Stmt) -> set[int]:
    """The ids of the variables that statements of ``stmt`` (``stmt`` included) declare or assign: loop
    variables, ``let``\\ s, registers, assigned variables, and the origins of the buffers allocated there.
    An expression using one of them cannot be moved out of ``stmt``."""
    ids: set[int] = set()
    for s in walk_stmts(stmt):
        for name in s.binds:
            value = getattr(s, name)
            ids.update(id(v) for v in (value if isinstance(value, (list, tuple)) else (value,)))
        if isinstance(s, Allocate):
            ids.update(id(off) for off in s.buffer.offsets if isinstance(off, OriginVar))
    return ids


_BUFFER_READS = (Load, VLoad, VLoadStrided, VLoadMasked, VGather, Address)


class _Rebind(StmtMutator):
    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

    def mutate_expr(self, e: Expr) -> Expr:
        def swap(n: Expr) -> Expr | None:
            if isinstance(n, _BUFFER_READS) and n.buffer is self.old:
                out = n.with_children([rewrite(c, swap) for c in n.children()])
                assert isinstance(out, _BUFFER_READS)     # a copy of the same class, with the same buffer
                out.buffer = self.new
                return out
            return None
        return rewrite(e, swap)

    def visit_Store(self, s: Store) -> Stmt:
        return self._retarget(s)

    def visit_VStore(self, s: VStore) -> Stmt:
        return self._retarget(s)

    def _retarget(self, s: Store | VStore) -> Stmt:
        out = self.visit_default(s)
        assert isinstance(out, (Store, VStore))
        return replace(out, buffer=self.new) if out.buffer is self.old else out


def rebind_buffer(stmt: Stmt, old: Buffer, new: Buffer) -> Stmt:
    """``stmt`` with every access to ``old`` made to ``new``."""
    return _Rebind(old, new).visit(stmt)
