"""Readable text for expressions, shared by ``repr`` and the loop-IR printer.

Infix operators with minimal parentheses; ``//`` and ``%`` mean floor division and modulo. Variables print
by name; the loop-IR printer (:mod:`tesched.ir.printer`) derives from :class:`ExprPrinter` to add its
nodes and to tell apart loops that share a user's axis name.
"""
from __future__ import annotations

from tesched.te.expr import Binary, Call, Cast, Const, Expr, Select, Unary, Var, set_formatter
from tesched.te.reduction import MultiValue, Reduce
from tesched.te.tensor import TensorRead
from tesched.te.visit import NodeFunctor

_INFIX = {"add": ("+", 4), "sub": ("-", 4), "mul": ("*", 5), "div": ("/", 5), "floordiv": ("//", 5),
          "floormod": ("%", 5), "cdiv": ("//", 5), "cmod": ("%", 5), "lt": ("<", 3), "le": ("<=", 3), "gt": (">", 3), "ge": (">=", 3),
          "eq": ("==", 3), "ne": ("!=", 3), "and": ("&&", 2), "or": ("||", 1),
          "bitand": ("&", 2), "bitor": ("|", 2), "bitxor": ("^", 2), "shl": ("<<", 3), "shr": (">>", 3)}


def const_str(c: Const) -> str:
    if c.dtype == "bool":
        return "True" if c.value else "False"
    if c.dtype == "float32":
        return f"{c.value!r}f"
    return repr(c.value)


class ExprPrinter(NodeFunctor):
    """Infix text for expressions; ``visit`` returns ``(text, precedence)``. Subclasses add node kinds
    (the loop-IR printer adds loads and vector nodes) and may rename variables and buffers."""

    def name_of(self, v: Var) -> str:
        return v.name

    def buffer_name(self, buffer: object) -> str:
        return getattr(buffer, "name")

    def text(self, e: Expr) -> str:
        return self.visit(e)[0]

    def visit_Const(self, x: Const) -> tuple[str, int]:
        s = const_str(x)
        return s, (6 if s.startswith("-") else 7)

    def visit_Var(self, x: Var) -> tuple[str, int]:
        return self.name_of(x), 7

    def visit_WholeIndex(self, x: Expr) -> tuple[str, int]:
        return ":", 7       # every index along the dimension (an extern stage reads its inputs whole)

    def visit_Binary(self, x: Binary) -> tuple[str, int]:
        if x.op not in _INFIX:
            return f"{x.op}({self.text(x.a)}, {self.text(x.b)})", 7
        sym, prec = _INFIX[x.op]
        a, pa = self.visit(x.a)
        b, pb = self.visit(x.b)
        if pa < prec:
            a = f"({a})"
        if pb <= prec:
            b = f"({b})"
        return f"{a} {sym} {b}", prec

    def visit_Unary(self, x: Unary) -> tuple[str, int]:
        a, pa = self.visit(x.a)
        if pa < 6:
            a = f"({a})"
        return {"neg": "-", "bitnot": "~"}.get(x.op, "!") + a, 6

    def visit_Call(self, x: Call) -> tuple[str, int]:
        return f"{x.name}({', '.join(self.text(a) for a in x.args)})", 7

    def visit_Cast(self, x: Cast) -> tuple[str, int]:
        return f"{x.dtype}({self.text(x.value)})", 7

    def visit_Select(self, x: Select) -> tuple[str, int]:
        return f"select({self.text(x.cond)}, {self.text(x.true_value)}, {self.text(x.false_value)})", 7

    def visit_Reduce(self, x: Reduce) -> tuple[str, int]:
        axes = ", ".join(self.name_of(a) for a in x.axis)
        where = "" if x.where is None else f", where={self.text(x.where)}"
        init = "" if x.inits is None else f", init={self.values(x.inits)}"
        component = f"[{x.value_index}]" if len(x.sources) > 1 else ""
        return f"{x.combiner}({self.values(x.sources)}, axis=[{axes}]{where}{init}){component}", 7

    def values(self, values: tuple[Expr, ...]) -> str:
        """One expression's text, or a tuple's ``(a, b)``."""
        texts = [self.text(v) for v in values]
        return texts[0] if len(texts) == 1 else f"({', '.join(texts)})"

    def visit_MultiValue(self, x: MultiValue) -> tuple[str, int]:
        return f"({', '.join(self.text(v) for v in x.values)})", 7

    def visit_TensorRead(self, x: TensorRead) -> tuple[str, int]:
        return f"{self.buffer_name(x.tensor)}[{', '.join(self.text(i) for i in x.indices)}]", 7


def expr_str(e: Expr) -> str:
    """The text of an expression, as ``repr`` shows it."""
    return ExprPrinter().text(e)


set_formatter(expr_str)
