"""``sink_reshapes``: an elementwise or NumPy-broadcasting op applied to a reshaped tensor is applied before
the reshape instead, ``f(reshape(x, S), y)`` becoming ``reshape(f(x, y'), S)``, so that the op joins the
group that produces ``x``.

A reshape is a view that the executor runs as no kernel, and ``fuse_ops`` keeps it a group of its own: a
dense layer whose bias-added result is reshaped (PyTorch's ``Linear`` over a 3-D tensor) and then goes
through a GELU or a residual addition would otherwise run its epilogue as separate kernels. Applied to
every call producers-first, a chain of such ops (GELU's five) moves whole, and the reshape ends up after
its last op.

The other operands ``y`` are rewritten to the source's shape ``T``: another reshape from ``T`` is read
through; an operand of the op's whole shape ``S`` is reshaped to ``T`` (a view); one broadcast along
trailing axes that ``S`` and ``T`` share keeps them (``S = (1, 128, 1024)``, ``T = (128, 1024)``, a
``(1024,)`` vector); a scalar stays. Any other operand, a dynamic dimension, or an op with axis attributes
(``nn.bias_add``, ``nn.batch_norm``) leaves the call as it is. So does a reshape whose source is an input,
a constant or an opaque op (nothing to fuse with), and an operand of the whole shape that a fusable op
computes (the reshape it would need would cut that producer off instead: a Winograd convolution's tiles
plus a reshaped input stay as ``alter_op_layout`` left them). The pass changes no value, only where the
reshape sits.
"""
from __future__ import annotations

from typing import TypeGuard

from tesched.graph.ir import Call, Expr, Function
from tesched.graph.ops_transform import reshape
from tesched.graph.visit import rewrite
from tesched.nn.pattern import Pattern

BROADCASTING_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "equal", "not_equal", "greater", "greater_equal", "less",
    "less_equal", "logical_and", "logical_or", "logical_xor", "where"})
"""Binary and ternary ops that broadcast their operands as NumPy does (and have no axis attribute)."""


def _is_reshape(node: Expr) -> TypeGuard[Call]:
    return isinstance(node, Call) and not isinstance(node.op, Function) and node.op_name == "reshape"


def _moves(node: Call) -> bool:
    """True when ``node``'s op computes each element from the same elements of its operands, whatever their
    shape (elementwise without axis attributes, or NumPy broadcasting)."""
    if isinstance(node.op, Function):
        return False
    if node.op_name in BROADCASTING_OPS:
        return True
    return node.pattern is Pattern.ELEMWISE and not any("axis" in key for key in node.attrs)


def _view(node: Expr, shape: tuple[int, ...]) -> Expr:
    """``node`` with ``shape``: itself when it has it, else a reshape (of a reshape's source)."""
    if _is_reshape(node):
        node = node.args[0]
    return node if node.tensor_type.shape == shape else reshape(node, shape)


def _operand(node: Expr, source: tuple[int, ...], out: tuple[int, ...]) -> Expr | None:
    """``node`` rewritten to broadcast against the source shape ``source`` as it did against ``out``."""
    shape = node.tensor_type.shape
    if shape == out:
        return _view(node, source)
    ones = 0
    while ones < len(shape) and shape[ones] == 1:
        ones += 1
    trailing = shape[ones:]
    if not trailing:                                     # a scalar, possibly with leading ones
        return node if len(shape) <= len(source) else _view(node, ())
    if len(trailing) <= len(source) and tuple(out[len(out) - len(trailing):]) == trailing \
            and tuple(source[len(source) - len(trailing):]) == trailing:
        return node if len(shape) <= len(source) else _view(node, trailing)
    return None


def _fusable(node: Expr) -> bool:
    """True when ``node`` is computed by an op a consumer's elementwise op could share a kernel with."""
    return isinstance(node, Call) and not _is_reshape(node) and node.pattern is not Pattern.OPAQUE


def _sink(node: Expr, original: Expr) -> Expr | None:
    if not (isinstance(node, Call) and _moves(node)) or node.tensor_type.is_dynamic:
        return None
    first = next((a for a in node.args if _is_reshape(a) and not a.args[0].tensor_type.is_dynamic), None)
    if first is None or not _fusable(first.args[0]):
        return None
    source, out = first.args[0].tensor_type.shape, node.tensor_type.shape
    if first.tensor_type.shape != out or source == out or \
            any(a.tensor_type.shape == out and _fusable(a) for a in node.args):
        return None                         # it would cut another producer off instead
    args = []
    for arg in node.args:
        rewritten = _view(arg, source) if _is_reshape(arg) and arg.tensor_type.shape == out else \
            _operand(arg, source, out)
        if rewritten is None:
            return None
        args.append(rewritten)
    moved = node.with_children(args)
    return reshape(moved, out) if moved.tensor_type.shape == source else None


def sink_reshapes(f: Function) -> Function:
    """Move reshapes after the elementwise and broadcasting ops that read them (see the module doc)."""
    return f.with_body(rewrite(f.body, _sink))
