"""The text form of graphs, in Relay's style: one line per call with its inferred type.

A function prints as ``fn (%x: Tensor[...], ...) -> Tensor[...] { ... }``; each call, tuple and tuple
field is bound to ``%k`` and annotated ``/* ty=... */``; constants print as ``meta[Constant][k]`` (scalars
inline, e.g. ``2f``) with a legend of their names and types above the function; primitive (fused)
functions print first as ``def @fused_...(...)`` and are called by name. The numbers ``%k`` of a
function's body are those of :func:`numbering`, which fusion explanations use too.
"""
from __future__ import annotations

from typing import Any

from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, set_text_form
from tesched.graph.visit import post_order


def numbering(body: Expr) -> dict[int, int]:
    """``{id(node): k}`` for the nodes printed as ``%k`` in a function whose body is ``body``."""
    bound = [n for n in post_order(body) if isinstance(n, (Call, Tuple, TupleGetItem)) and n is not body]
    return {id(n): k for k, n in enumerate(bound)}


def format_attr(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}f"
    return str(value)


class _Printer:
    def __init__(self) -> None:
        self.constants: dict[int, int] = {}
        self.constant_list: list[Constant] = []
        self.primitives: dict[int, str] = {}
        self.primitive_text: list[str] = []

    def constant(self, c: Constant) -> str:
        if c.data.ndim == 0:
            value = c.data.item()
            suffix = {"float32": "f", "float64": "f64", "int64": "i64"}.get(c.tensor_type.dtype, "")
            return f"{value:g}{suffix}" if isinstance(value, float) else f"{value}{suffix}"
        if id(c) not in self.constants:
            self.constants[id(c)] = len(self.constant_list)
            self.constant_list.append(c)
        return f"meta[Constant][{self.constants[id(c)]}]"

    def primitive(self, f: Function) -> str:
        if id(f) not in self.primitives:
            self.primitives[id(f)] = f.name
            self.primitive_text.append(self.function(f, f"def @{f.name}"))
        return f"@{self.primitives[id(f)]}"

    def function(self, f: Function, head: str) -> str:
        params = ", ".join(f"%{p.name}: {p.checked_type}" for p in f.params)
        lines = [f"{head}({params}) -> {f.body.checked_type} {{"]
        lines += ["  " + line for line in self.body(f.body)]
        lines.append("}")
        return "\n".join(lines)

    def body(self, body: Expr) -> list[str]:
        numbers = numbering(body)

        def ref(e: Expr) -> str:
            if isinstance(e, Var):
                return f"%{e.name}"
            if isinstance(e, Constant):
                return self.constant(e)
            return f"%{numbers[id(e)]}"

        lines = []
        for node in post_order(body):
            if isinstance(node, Call):
                callee = node.op_name if not isinstance(node.op, Function) else self.primitive(node.op)
                args = [ref(a) for a in node.args]
                args += [f"{k}={format_attr(v)}" for k, v in node.attrs.items() if v is not None]
                text = f"{callee}({', '.join(args)}) /* ty={node.checked_type} */"
            elif isinstance(node, Tuple):
                text = f"({', '.join(ref(f) for f in node.fields)}{',' if len(node.fields) == 1 else ''})"
            elif isinstance(node, TupleGetItem):
                text = f"{ref(node.tuple_value)}.{node.index}"
            elif node is body:
                text = ref(node)
            else:
                continue
            lines.append(text if node is body else f"%{numbers[id(node)]} = {text};")
        return lines

    def legend(self) -> list[str]:
        return [f"// meta[Constant][{k}]{' = ' + c.name if c.name else ''}: {c.checked_type}"
                for k, c in enumerate(self.constant_list)]


def as_text(expr: Expr) -> str:
    """The text form of a function or expression."""
    printer = _Printer()
    if isinstance(expr, Function) and not expr.is_primitive:
        main = printer.function(expr, "fn ")
    elif isinstance(expr, Function):
        main = printer.function(expr, f"def @{expr.name}")
    else:
        main = "\n".join(printer.body(expr))
    parts = printer.legend() + [text + "\n" for text in printer.primitive_text] + [main]
    return "\n".join(parts)


set_text_form(as_text)
