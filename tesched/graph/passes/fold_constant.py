"""``fold_constant``: every call whose arguments are all constants becomes the constant it computes
(evaluated with NumPy, see :mod:`..interpret`), and a field of a literal tuple becomes that field.
:func:`fold` folds one freshly built expression; other passes use it for the constants they make.
"""
from __future__ import annotations

from tesched.graph.interpret import evaluate_constant, is_constant_expr
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem
from tesched.graph.visit import rewrite


def fold(expr: Expr) -> Expr:
    """``expr`` as one constant when it has no variables, else unchanged."""
    return evaluate_constant(expr) if not isinstance(expr, Constant) and is_constant_expr(expr) else expr


def _fold_node(node: Expr, original: Expr) -> Expr | None:
    if isinstance(node, Call) and not isinstance(node.op, Function) and \
            all(isinstance(a, Constant) for a in node.args) and is_constant_expr(node):
        return evaluate_constant(node)
    if isinstance(node, TupleGetItem) and isinstance(node.tuple_value, Tuple):
        return node.tuple_value.fields[node.index]
    return None


def fold_constant(f: Function) -> Function:
    """Evaluate the parts of ``f`` that depend only on constants."""
    return f.with_body(rewrite(f.body, _fold_node))
