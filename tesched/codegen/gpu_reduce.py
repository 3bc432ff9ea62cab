"""The algebra of a cross-thread reduction: whether a reduction's update combines partial results, with
which operator, and that operator's identity (the value each thread's register starts from). The kernel
printer (:mod:`tesched.codegen.gpu`) writes the tree that combines them; this module prints nothing.
"""
from __future__ import annotations

import math

from tesched.ir import nodes as ir
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Expr
from tesched.te.visit import structural_key, walk


def combination(update: ir.Store) -> tuple[str, Expr] | None:
    """``(op, value)`` when ``update`` is ``element = element op value`` (or ``value op element``) with op one
    of add, mul, max, min, and the element not read in ``value``."""
    e = update.value
    if not isinstance(e, Binary) or e.op not in (BinOp.ADD, BinOp.MUL, BinOp.MAX, BinOp.MIN):
        return None
    target = structural_key(ir.flat_index(update.buffer, update.indices))

    def is_element(x: Expr) -> bool:
        return isinstance(x, ir.Load) and x.buffer is update.buffer and \
            structural_key(ir.flat_index(x.buffer, x.indices)) == target

    for mine, value in ((e.a, e.b), (e.b, e.a)):
        if is_element(mine) and not any(isinstance(r, ir.Load) and r.buffer is update.buffer for r in walk(value)):
            return e.op, value
    return None


def identity(op: str, dtype: str) -> Const:
    """The value that ``op`` leaves unchanged, in ``dtype``."""
    if op in ("add", "mul"):
        return Const(0 if op == "add" else 1, dtype)
    low, high = (-math.inf, math.inf) if dt.is_float(dtype) else dt.value_range(dtype)
    return Const(low if op == "max" else high, dtype)


