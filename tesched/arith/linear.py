"""Linear forms of integer IR expressions: ``sum(coeff * atom) + const``.

Atoms are variables and, for anything non-linear (``min``, ``//`` ...), the subexpression itself (keyed by
its structure, variables by identity). ``a % c`` is read as ``a - c * (a // c)``, so that row-major
indices of a fused loop (``(p // 28) * 28 + p % 28``) fold back to ``p``. Used to prove trip counts constant (``end - begin``), to find how an index moves with
a loop variable, and to fold the index arithmetic of unrolled code into constants.
"""
from __future__ import annotations

from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Unary, Var
from tesched.te.visit import structural_key, walk

Linear = tuple[dict, int]          # ({key: coeff}, const); key -> atom in a side table


def linear(e: Expr, atoms: dict | None = None) -> Linear:
    """The linear form of ``e``; ``atoms`` (if given) collects key -> atom expression."""
    atoms = {} if atoms is None else atoms

    def go(x: Expr) -> Linear:
        if isinstance(x, Const):
            return {}, int(x.value)
        if isinstance(x, Cast) and x.dtype.startswith("int") and x.value.dtype.startswith("int"):
            return go(x.value)
        if isinstance(x, Unary) and x.op == "neg":
            t, c = go(x.a)
            return {k: -v for k, v in t.items()}, -c
        if isinstance(x, Binary) and x.op in (BinOp.ADD, BinOp.SUB):
            (ta, ca), (tb, cb) = go(x.a), go(x.b)
            sign = 1 if x.op == BinOp.ADD else -1
            out = dict(ta)
            for k, v in tb.items():
                out[k] = out.get(k, 0) + sign * v
            return {k: v for k, v in out.items() if v}, ca + sign * cb
        if isinstance(x, Binary) and x.op in (BinOp.FLOORMOD, BinOp.CMOD) and isinstance(x.b, Const) and x.b.value > 0:
            # a % c = a - c * (a // c): then (a // c) * c + a % c folds back to a
            div = Binary(BinOp.FLOORDIV if x.op == BinOp.FLOORMOD else BinOp.CDIV, x.a, x.b, x.dtype)
            (ta, ca), (tq, cq) = go(x.a), go(div)
            out = dict(ta)
            for k, v in tq.items():
                out[k] = out.get(k, 0) - int(x.b.value) * v
            return {k: v for k, v in out.items() if v}, ca - int(x.b.value) * cq
        if isinstance(x, Binary) and x.op == BinOp.MUL:
            (ta, ca), (tb, cb) = go(x.a), go(x.b)
            if not ta:
                return {k: v * ca for k, v in tb.items() if v * ca}, ca * cb
            if not tb:
                return {k: v * cb for k, v in ta.items() if v * cb}, ca * cb
        key = ("var", id(x)) if isinstance(x, Var) else ("atom", structural_key(x))
        atoms[key] = x
        return {key: 1}, 0

    return go(e)


def constant_difference(a: Expr, b: Expr) -> int | None:
    """``a - b`` when it is the same integer for every value of the variables, else None."""
    (ta, ca), (tb, cb) = linear(a), linear(b)
    return ca - cb if ta == tb else None


def coefficient(e: Expr, var: Var) -> int | None:
    """How much ``e`` grows per unit of ``var`` (None if ``var`` appears non-linearly)."""
    atoms: dict = {}
    terms, _ = linear(e, atoms)
    for key in terms:
        if key[0] == "atom" and any(n is var for n in _vars(atoms[key])):
            return None
    return terms.get(("var", id(var)), 0)


def constant_value(e: Expr) -> int | None:
    terms, c = linear(e)
    return c if not terms else None


def rebuild(form: Linear, atoms: dict, dtype: str = "int64") -> Expr:
    """An expression for a linear form (coefficients folded, constant last), its arithmetic in ``dtype``
    (the atoms are used as they are)."""
    terms, c = form
    out: Expr | None = None
    for key, coeff in terms.items():
        atom = atoms[key]
        term = atom if coeff == 1 else Binary(BinOp.MUL, Const(coeff, dtype), atom, dtype)
        out = term if out is None else Binary(BinOp.ADD, out, term, dtype)
    if out is None:
        return Const(c, dtype)
    return out if c == 0 else Binary(BinOp.ADD, out, Const(c, dtype), dtype)


def simplify(e: Expr) -> Expr:
    """``e`` with its linear part normalized (``(8*a + k) - 8*a`` becomes ``k``)."""
    atoms: dict = {}
    return rebuild(linear(e, atoms), atoms)


def _vars(e: Expr):
    return [n for n in walk(e) if isinstance(n, Var)]
