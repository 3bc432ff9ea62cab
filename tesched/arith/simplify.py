"""Simplify integer index expressions knowing the range of each loop variable.

:func:`simplify` rewrites ``int32``/``int64`` arithmetic bottom-up with the ranges of
:class:`~tesched.arith.interval.VarRanges`:

- sums and constant multiples are collected into a linear form (``(f - f) * 784`` is ``0``,
  ``(32*i + j) * 1024`` is ``32768*i + 1024*j``), and ``(x // c) * c + x % c`` folds back to ``x``;
- ``(c*q + r) // c`` is ``q + r // c`` and ``(c*q + r) % c`` is ``r % c``; when ``r`` stays inside one
  period (``0 <= j < 8`` in ``(8*i + j) // 8``) the division and the modulo disappear (``i`` and ``j``);
  a common factor cancels (``(4*j) // 8`` is ``j // 2``); ``(x // a) // b`` is ``x // (a*b)`` and
  ``(x % (a*b)) % a`` is ``x % a``; C's truncating ``/`` and ``%`` of non-negative operands are floors;
- ``min``, ``max`` and comparisons decided by the bounds of the difference of their operands disappear,
  and so do selects and logic on constant conditions;
- a select whose condition compares a variable with a bound (isl's piecewise region origins:
  ``select(f >= 3, f - 3, f)``), alone or as a term of a sum, is replaced by what the expression
  simplifies to on both sides of the condition when that is the same (``3*(f % 3) - 3*select(f >= 3,
  f - 3, f)`` is ``0`` for ``0 <= f < 6``, as ``f % 3`` is ``f - 3`` where ``f >= 3``).

A rewrite is kept only when it is not larger (in nodes) than what it replaces, so the result is never
larger than the input. Overflow is not modelled: index arithmetic is assumed not to wrap (as C assumes
of signed integers). Narrow integer types, floats and vectors are left alone (their children are
still simplified).
"""
from __future__ import annotations

import math
from functools import reduce

from tesched.arith.interval import (INDEX_TYPES, VarRanges, bound, bound_linear, floor_div, linear_terms,
                                    refine)
from tesched.te.expr import BinOp, Binary, Const, Expr, Select, Unary
from tesched.te.visit import rewrite, structural_key

_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


def simplify(e: Expr, ranges: VarRanges | None = None) -> Expr:
    """``e`` simplified under ``ranges`` (equal to ``e`` wherever the variables lie in their ranges)."""
    return _Simplifier(ranges or VarRanges()).run(e)


def rebuild(terms: dict, const: int, atoms: dict, dtype: str) -> Expr:
    """An expression of ``dtype`` for ``sum(coeff * atoms[key]) + const``: positive terms first,
    subtraction for negative ones, the constant last."""
    items = sorted(terms.items(), key=lambda kv: kv[1] < 0)     # stable: keeps the order of appearance

    def term(atom: Expr, coeff: int) -> Expr:
        return atom if coeff == 1 else Binary(BinOp.MUL, Const(coeff, dtype), atom, dtype)

    out: Expr | None = None
    for key, coeff in items:
        atom = atoms[key]
        if out is None:
            out = term(atom, coeff)
        elif coeff < 0:
            out = Binary(BinOp.SUB, out, term(atom, -coeff), dtype)
        else:
            out = Binary(BinOp.ADD, out, term(atom, coeff), dtype)
    if out is None:
        return Const(const, dtype)
    if const > 0:
        return Binary(BinOp.ADD, out, Const(const, dtype), dtype)
    if const < 0:
        return Binary(BinOp.SUB, out, Const(-const, dtype), dtype)
    return out


def _positive_divisor(e: Binary) -> int | None:
    b = e.b
    return b.value if isinstance(b, Const) and b.dtype in INDEX_TYPES and isinstance(b.value, int) \
        and b.value > 0 else None


def _linear_node(e: Expr) -> bool:
    """Whether ``e`` is a sum, a difference, a negation or a multiple by a constant of index type (a
    node of a linear form)."""
    if e.dtype not in INDEX_TYPES or not isinstance(e, (Binary, Unary)):
        return False
    if e.op in (BinOp.ADD, BinOp.SUB, "neg"):
        return True
    return isinstance(e, Binary) and e.op == BinOp.MUL and (isinstance(e.a, Const) or isinstance(e.b, Const))


class _Simplifier:
    def __init__(self, ranges: VarRanges):
        self.ranges = ranges
        self.memo: dict[tuple[int, bool], Expr] = {}
        self.sizes: dict[int, tuple[Expr, int]] = {}     # the node is kept so that its id stays its own

    def size(self, e: Expr) -> int:
        known = self.sizes.get(id(e))
        if known is None:
            known = self.sizes[id(e)] = (e, 1 + sum(self.size(c) for c in e.children()))
        return known[1]

    def run(self, e: Expr, in_linear: bool = False) -> Expr:
        """``e`` simplified; inside a linear form (``in_linear``) sums are left for the form's root,
        which collects the whole form once."""
        done = self.memo.get((id(e), in_linear))
        if done is not None:
            return done
        kids = e.children()
        linear = _linear_node(e)
        new = tuple(self.run(c, linear) for c in kids)
        node = e if all(a is b for a, b in zip(new, kids)) else e.with_children(new)
        out = node if in_linear and linear else self.rewrite(node)
        if out is not node and self.size(out) > self.size(node):
            out = node
        self.memo[(id(e), in_linear)] = out
        return out

    def bound(self, e: Expr):
        return bound(e, self.ranges)

    def linear(self, e: Expr) -> tuple[dict, int, dict]:
        atoms: dict = {}
        terms, const = linear_terms(e, e.dtype, atoms)
        return _fold_div_mod(terms, atoms), const, atoms

    def rewrite(self, e: Expr) -> Expr:
        if isinstance(e, Select):
            return self.select(e)
        if isinstance(e, Unary) and e.op == "not" and isinstance(e.a, Const):
            return Const(not e.a.value, "bool")
        if not isinstance(e, (Binary, Unary)):
            return e
        if e.dtype in INDEX_TYPES and e.op in (BinOp.ADD, BinOp.SUB, BinOp.MUL, "neg"):
            terms, const, atoms = self.linear(e)
            out = rebuild(terms, const, atoms, e.dtype)
            cases = [atoms[k] for k in terms if isinstance(atoms[k], Select)]
            return self.by_cases(out, cases[0]) if cases else out
        if isinstance(e, Binary) and e.dtype in INDEX_TYPES:
            c = _positive_divisor(e)
            if c is not None and e.op in (BinOp.CDIV, BinOp.CMOD) and self.bound(e.a)[0] >= 0:
                e = Binary(BinOp.FLOORDIV if e.op == BinOp.CDIV else BinOp.FLOORMOD, e.a, e.b, e.dtype)
            if c is not None and e.op == BinOp.FLOORDIV:
                return self.floordiv(e.a, c, e.dtype)
            if c is not None and e.op == BinOp.FLOORMOD:
                return self.floormod(e.a, c, e.dtype)
            if e.op in (BinOp.MIN, BinOp.MAX):
                return self.min_max(e)
        if isinstance(e, Binary) and e.op in _COMPARE and e.a.dtype in INDEX_TYPES and e.b.dtype in INDEX_TYPES:
            return self.compare(e)
        if isinstance(e, Binary) and e.op in (BinOp.AND, BinOp.OR):
            return _logic(e)
        return e

    # division and modulo by a positive constant --------------------------------------------------
    def split(self, a: Expr, c: int) -> tuple[dict, int, dict, int, dict]:
        """``a = c * (q_terms + q_const) + (r_terms + r_const)`` with ``0 <= r_const < c`` and no term of
        ``r`` a multiple of ``c``."""
        terms, const, atoms = self.linear(a)
        q = {k: v // c for k, v in terms.items() if v % c == 0}
        r = {k: v for k, v in terms.items() if v % c}
        return q, const // c, r, const % c, atoms

    def floordiv(self, a: Expr, c: int, dtype: str) -> Expr:
        if c == 1:
            return a
        q, qc, r, rc, atoms = self.split(a, c)
        low, high = bound_linear(r, rc, atoms, self.ranges)
        if not math.isinf(low) and floor_div(low, c) == floor_div(high, c):
            return rebuild(q, qc + int(floor_div(low, c)), atoms, dtype)
        rest = self.divide(rebuild(r, rc, atoms, dtype), c, dtype)
        if not q and not qc:
            return rest
        key = structural_key(rest)
        atoms[key] = rest
        return rebuild({**q, key: 1}, qc, atoms, dtype)

    def divide(self, r: Expr, c: int, dtype: str) -> Expr:
        """``r // c`` with a common factor of ``r``'s terms cancelled and nested divisions merged."""
        terms, const, atoms = self.linear(r)
        g = reduce(math.gcd, list(terms.values()) + [const, c])
        if g > 1:
            return self.divide(rebuild({k: v // g for k, v in terms.items()}, const // g, atoms, dtype),
                               c // g, dtype)
        inner = _positive_divisor(r) if isinstance(r, Binary) and r.op == BinOp.FLOORDIV else None
        if isinstance(r, Binary) and inner is not None:
            return self.floordiv(r.a, c * inner, dtype)
        return Binary(BinOp.FLOORDIV, r, Const(c, dtype), dtype) if c > 1 else r

    def floormod(self, a: Expr, c: int, dtype: str) -> Expr:
        if c == 1:
            return Const(0, dtype)
        _, _, r, rc, atoms = self.split(a, c)
        r = {k: v % c for k, v in r.items()}
        low, high = bound_linear(r, rc, atoms, self.ranges)
        if not math.isinf(low) and floor_div(low, c) == floor_div(high, c):
            return rebuild(r, rc - c * int(floor_div(low, c)), atoms, dtype)
        rest = rebuild(r, rc, atoms, dtype)
        terms, const, rest_atoms = self.linear(rest)
        g = reduce(math.gcd, list(terms.values()) + [const, c])
        if g > 1:       # (g*x) % (g*c') = g * (x % c')
            reduced = rebuild({k: v // g for k, v in terms.items()}, const // g, rest_atoms, dtype)
            return Binary(BinOp.MUL, Const(g, dtype), self.floormod(reduced, c // g, dtype), dtype)
        inner = _positive_divisor(rest) if isinstance(rest, Binary) and rest.op == BinOp.FLOORMOD else None
        if isinstance(rest, Binary) and inner is not None and inner % c == 0:
            return self.floormod(rest.a, c, dtype)
        return Binary(BinOp.FLOORMOD, rest, Const(c, dtype), dtype)

    # min, max, comparisons, selects ----------------------------------------------------------------
    def difference(self, a: Expr, b: Expr):
        """Bounds of ``a - b`` (equal atoms cancel)."""
        diff = Binary(BinOp.SUB, a, b, "int64")
        terms, const, atoms = self.linear(diff)
        return bound_linear(terms, const, atoms, self.ranges)

    def min_max(self, e: Binary) -> Expr:
        low, high = self.difference(e.a, e.b)
        if high <= 0:
            return e.a if e.op == BinOp.MIN else e.b
        if low >= 0:
            return e.b if e.op == BinOp.MIN else e.a
        return e

    def compare(self, e: Binary) -> Expr:
        low, high = self.difference(e.a, e.b)
        decided = {"lt": (high < 0, low >= 0), "le": (high <= 0, low > 0), "gt": (low > 0, high <= 0),
                   "ge": (low >= 0, high < 0), "eq": (low == high == 0, low > 0 or high < 0),
                   "ne": (low > 0 or high < 0, low == high == 0)}[e.op]
        if decided[0]:
            return Const(True, "bool")
        if decided[1]:
            return Const(False, "bool")
        return e

    def select(self, e: Select) -> Expr:
        if isinstance(e.cond, Const):
            return e.true_value if e.cond.value else e.false_value
        if structural_key(e.true_value) == structural_key(e.false_value):
            return e.true_value
        return self.by_cases(e, e) if e.dtype in INDEX_TYPES else e

    def by_cases(self, e: Expr, case: Select) -> Expr:
        """``e`` with ``case`` (a select in it) replaced by each of its values and simplified where its
        condition holds and where it fails, if the two agree and the condition narrows a variable's range
        both ways; else ``e``."""
        sides = []
        for holds, value in ((True, case.true_value), (False, case.false_value)):
            narrowed = refine(case.cond, self.ranges, holds)
            if narrowed is self.ranges:
                return e
            chosen = e if e is case else rewrite(e, lambda n: value if n is case else None)
            sides.append(_Simplifier(narrowed).run(value if e is case else chosen))
        same = structural_key(sides[0]) == structural_key(sides[1])
        return sides[0] if same and self.size(sides[0]) <= self.size(e) else e


def _logic(e: Binary) -> Expr:
    for x, y in ((e.a, e.b), (e.b, e.a)):
        if isinstance(x, Const) and e.dtype == "bool" and y.dtype == "bool":
            if e.op == BinOp.AND:
                return y if x.value else Const(False, "bool")
            return Const(True, "bool") if x.value else y
    return e


def _fold_div_mod(terms: dict, atoms: dict) -> dict:
    """``k*c*(x // c) + k*(x % c)`` -> ``k*x`` inside a linear form (a fused loop's row-major index)."""
    for key, coeff in list(terms.items()):
        mod = atoms[key]
        if key not in terms or not (isinstance(mod, Binary) and mod.op == BinOp.FLOORMOD):
            continue
        c = _positive_divisor(mod)
        if c is None:
            continue
        div_key = structural_key(Binary(BinOp.FLOORDIV, mod.a, mod.b, mod.dtype))
        if terms.get(div_key) != coeff * c:
            continue
        x_atoms: dict = {}
        x_terms, x_const = linear_terms(mod.a, mod.dtype, x_atoms)
        if x_const:
            continue
        del terms[key], terms[div_key]
        for k, v in x_terms.items():
            atoms[k] = x_atoms[k]
            terms[k] = terms.get(k, 0) + coeff * v
            if not terms[k]:
                del terms[k]
    return terms
