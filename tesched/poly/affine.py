"""Translate index expressions into isl's textual syntax.

Affine expressions (sums of variables times constants, plus floor division and modulo by positive
constants, ``min`` and ``max``) become isl syntax over caller-chosen names, and conditions built of their
comparisons with ``and``/``or``/``not``; anything else raises :class:`NotAffine`. Names are never user text: callers map variables to generated isl names.
"""
from __future__ import annotations

from typing import Mapping

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Unary, Var


class NotAffine(Exception):
    """The expression is not (quasi-)affine in the given variables."""


def const_int(e: Expr) -> int | None:
    """The value of an integer constant (through integer casts), else None."""
    while isinstance(e, Cast) and dt.is_int(e.dtype):
        e = e.value
    if isinstance(e, Const) and dt.is_int(e.dtype):
        return int(e.value)
    return None


def to_isl(e: object, names: Mapping[int, str]) -> str:
    """isl syntax for ``e`` where ``names[id(var)]`` names each variable."""
    if isinstance(e, int):
        return str(e)
    assert isinstance(e, Expr)
    c = const_int(e)
    if c is not None:
        return str(c)
    if isinstance(e, Var):
        try:
            return names[id(e)]
        except KeyError:
            raise NotAffine(f"variable {e.name} is not a loop index or size here") from None
    if isinstance(e, Cast):
        if not dt.is_int(e.dtype) or not dt.is_int(e.value.dtype):
            raise NotAffine("non-integer cast")
        return to_isl(e.value, names)
    if isinstance(e, Unary) and e.op == "neg":
        return f"(-{to_isl(e.a, names)})"
    if isinstance(e, Binary):
        if e.op in (BinOp.ADD, BinOp.SUB):
            sym = "+" if e.op == BinOp.ADD else "-"
            return f"({to_isl(e.a, names)} {sym} {to_isl(e.b, names)})"
        if e.op == BinOp.MUL:
            ca, cb = const_int(e.a), const_int(e.b)
            if ca is None and cb is None:
                raise NotAffine("product of two variables")
            return f"({to_isl(e.a, names)} * {to_isl(e.b, names)})"
        if e.op in (BinOp.FLOORDIV, BinOp.FLOORMOD):
            d = const_int(e.b)
            if d is None or d <= 0:
                raise NotAffine("division by a non-constant or non-positive value")
            a = to_isl(e.a, names)
            return f"floor(({a})/{d})" if e.op == BinOp.FLOORDIV else f"(({a}) mod {d})"
        if e.op in (BinOp.MIN, BinOp.MAX):
            return f"{e.op}({to_isl(e.a, names)}, {to_isl(e.b, names)})"
    raise NotAffine(f"{e!r} is not affine (a data-dependent or non-integer expression)")


_COMPARE = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def condition_to_isl(e: object, names: Mapping[int, str]) -> str:
    """isl syntax for a condition: comparisons of affine expressions joined by ``and``/``or``/``not``."""
    if not isinstance(e, Expr) or e.dtype != "bool":
        raise NotAffine(f"{e!r} is not a condition")
    if isinstance(e, Const):
        return "true" if e.value else "false"
    if isinstance(e, Binary) and e.op in _COMPARE:
        return f"({to_isl(e.a, names)} {_COMPARE[e.op]} {to_isl(e.b, names)})"
    if isinstance(e, Binary) and e.op in (BinOp.AND, BinOp.OR):
        return f"({condition_to_isl(e.a, names)} {e.op} {condition_to_isl(e.b, names)})"
    if isinstance(e, Unary) and e.op == "not":
        return f"(not {condition_to_isl(e.a, names)})"
    raise NotAffine(f"{e!r} is not a comparison of affine expressions")
