"""Readable text for expressions, shared by ``repr`` and the loop-IR printer.

Infix operators with minimal parentheses; ``//`` and ``%`` mean floor division and modulo. Variables print
by name, or by the name a caller's ``name_of`` gives them (the IR printer uses it to tell apart loops
that share a user's axis name).
"""
from __future__ import annotations

from typing import Callable

from tesched.te.expr import Binary, Call, Cast, Const, Expr, Reduce, Select, Unary, Var, set_formatter

_INFIX = {"add": ("+", 4), "sub": ("-", 4), "mul": ("*", 5), "div": ("/", 5), "floordiv": ("//", 5),
          "floormod": ("%", 5), "cdiv": ("//", 5), "cmod": ("%", 5), "lt": ("<", 3), "le": ("<=", 3), "gt": (">", 3), "ge": (">=", 3),
          "eq": ("==", 3), "ne": ("!=", 3), "and": ("&&", 2), "or": ("||", 1)}


def const_str(c: Const) -> str:
    if c.dtype == "bool":
        return "True" if c.value else "False"
    if c.dtype == "float32":
        return f"{c.value!r}f"
    return repr(c.value)


def expr_str(e: Expr, name_of: Callable[[Var], str] | None = None,
             buffer_name: Callable[[object], str] | None = None) -> str:
    name_of = name_of or (lambda v: v.name)
    buffer_name = buffer_name or (lambda b: b.name)

    def go(x: Expr) -> tuple[str, int]:
        if isinstance(x, Const):
            s = const_str(x)
            return s, (6 if s.startswith("-") else 7)
        if isinstance(x, Var):
            return name_of(x), 7
        if isinstance(x, Binary):
            if x.op in _INFIX:
                sym, prec = _INFIX[x.op]
                a, pa = go(x.a)
                b, pb = go(x.b)
                if pa < prec:
                    a = f"({a})"
                if pb <= prec:
                    b = f"({b})"
                return f"{a} {sym} {b}", prec
            return f"{x.op}({go(x.a)[0]}, {go(x.b)[0]})", 7
        if isinstance(x, Unary):
            a, pa = go(x.a)
            if pa < 6:
                a = f"({a})"
            return ("-" if x.op == "neg" else "!") + a, 6
        if isinstance(x, Call):
            return f"{x.name}({', '.join(go(a)[0] for a in x.args)})", 7
        if isinstance(x, Cast):
            return f"{x.dtype}({go(x.value)[0]})", 7
        if isinstance(x, Select):
            return (f"select({go(x.cond)[0]}, {go(x.true_value)[0]}, {go(x.false_value)[0]})", 7)
        if isinstance(x, Reduce):
            axes = ", ".join(name_of(a) for a in x.axis)  # type: ignore[arg-type]
            where = "" if x.where is None else f", where={go(x.where)[0]}"
            return f"{x.combiner}({go(x.source)[0]}, axis=[{axes}]{where})", 7
        lanes = getattr(x, "lanes", None)
        if lanes is not None and hasattr(x, "index"):      # vector load
            return f"{buffer_name(x.buffer)}[ramp({go(x.index)[0]}, {lanes})]", 7
        if lanes is not None:                              # broadcast
            return f"x{lanes}({go(x.value)[0]})", 7
        if x.dtype == "handle":                          # address of an element
            return f"&{buffer_name(x.buffer)}[{', '.join(go(i)[0] for i in x.indices)}]", 7
        indices = getattr(x, "indices", None)
        if indices is not None:
            target = getattr(x, "tensor", None) or getattr(x, "buffer", None)
            return f"{buffer_name(target)}[{', '.join(go(i)[0] for i in indices)}]", 7
        return type(x).__name__, 7

    return go(e)[0]


set_formatter(expr_str)
