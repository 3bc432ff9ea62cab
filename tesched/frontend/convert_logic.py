"""Converters of the ATen ops on masks: the comparisons ``eq``/``ne``/``lt``/``le``/``gt``/``ge`` (Tensor and
Scalar forms), ``where``, ``any``/``all`` (over dims or whole), ``logical_not/and/or/xor``, ``bitwise_not/and/
or/xor`` of bool tensors, ``masked_fill``, ``triu``/``tril``, and ``_to_copy`` (a dtype conversion, bool to
float included).

Operands of different dtypes are first converted to the dtype PyTorch computes in (``torch.result_type``'s
answer, read from the output or from the promotion of the operands): an ``int64`` position compared with a
float, a float32 score selected against a 0-d float32 constant. Bitwise ops on integers are refused (they
are not masks). Each converter takes an :class:`~.call.AtenCall` and returns a graph expression.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.ir import Constant, Expr

Number = bool | int | float


def _number_dtype(value: Number, like: str) -> str:
    """The dtype a number compared with a ``like`` tensor is computed in, as PyTorch promotes: a float
    against integers or bool is float32 (the default float type), a number against bool is int64."""
    if isinstance(value, float) and not like.startswith(("float", "bfloat")):
        return "float32"
    if like == "bool" and not isinstance(value, bool):
        return "int64"
    return like


def _promoted(a: Expr, b: Expr) -> str:
    """The dtype of ``a op b`` under PyTorch's promotion (floats win; else the wider; bool loses)."""
    da, db = a.tensor_type.dtype, b.tensor_type.dtype
    if da == db:
        return da
    return str(np.result_type(np.dtype(da), np.dtype(db)))


def _comparison(build: Callable[[Expr, Expr], Expr]) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        lhs, rhs = call.tensor("self"), call["other"]
        if isinstance(rhs, Expr):
            dtype = _promoted(lhs, rhs)
            return build(G.cast(lhs, dtype), G.cast(rhs, dtype))
        if not isinstance(rhs, (bool, int, float)):
            raise call.unsupported(f"argument other is {type(rhs).__name__}", "a tensor or a number")
        dtype = _number_dtype(rhs, lhs.tensor_type.dtype)
        return build(G.cast(lhs, dtype), Constant(np.array(rhs, dtype=dtype)))
    convert.__name__ = convert.__qualname__ = build.__name__
    convert.__doc__ = f"``{build.__name__}(self, other)``: a bool tensor."
    return convert


eq = _comparison(G.equal)
ne = _comparison(G.not_equal)
lt = _comparison(G.less)
le = _comparison(G.less_equal)
gt = _comparison(G.greater)
ge = _comparison(G.greater_equal)


def _mask(call: AtenCall, name: str) -> Expr:
    """Argument ``name`` as a bool tensor (a number tensor is ``!= 0``, as PyTorch's logical ops read it)."""
    return G.cast(call.tensor(name), "bool")


def _value(call: AtenCall, name: str) -> Expr:
    """A value of ``where``/``masked_fill`` in the output's dtype (a number becomes a 0-d constant)."""
    value = call[name]
    if isinstance(value, Expr):
        return G.cast(value, call.out.dtype)
    if isinstance(value, (bool, int, float)):
        return Constant(np.array(value, dtype=call.out.dtype))
    raise call.unsupported(f"argument {name} is {type(value).__name__}", "a tensor or a number")


def where(call: AtenCall) -> Expr:
    """``self`` where ``condition`` holds, else ``other``."""
    return G.where(_mask(call, "condition"), _value(call, "self"), _value(call, "other"))


def masked_fill(call: AtenCall) -> Expr:
    """``value`` where ``mask`` holds, else ``self``."""
    return G.where(_mask(call, "mask"), _value(call, "value"), _value(call, "self"))


def logical_not(call: AtenCall) -> Expr:
    """``not self``."""
    return G.logical_not(_mask(call, "self"))


def _logical(build: Callable[[Expr, Expr], Expr]) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        return build(_mask(call, "self"), _mask(call, "other"))
    convert.__name__ = convert.__qualname__ = build.__name__
    convert.__doc__ = f"``{build.__name__}(self, other)`` of the operands read as truth values."
    return convert


logical_and = _logical(G.logical_and)
logical_or = _logical(G.logical_or)
logical_xor = _logical(G.logical_xor)


def _booleans(call: AtenCall, *names: str) -> list[Expr]:
    """Operands of a bitwise op, which must be bool (on integers a bitwise op is not a mask)."""
    tensors = [call.tensor(name) for name in names]
    for name, t in zip(names, tensors):
        if t.tensor_type.dtype != "bool":
            raise call.unsupported(f"bitwise operation on {t.tensor_type.dtype} ({name})",
                                   "bitwise operations on bool masks (torch.logical_* on numbers)")
    return tensors


def bitwise_not(call: AtenCall) -> Expr:
    """``~self`` of a bool mask."""
    return G.logical_not(_booleans(call, "self")[0])


def _bitwise(build: Callable[[Expr, Expr], Expr]) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        return build(*_booleans(call, "self", "other"))
    convert.__name__ = convert.__qualname__ = f"bitwise_{build.__name__.split('_')[1]}"
    convert.__doc__ = f"``{build.__name__}`` of two bool masks."
    return convert


bitwise_and = _bitwise(G.logical_and)
bitwise_or = _bitwise(G.logical_or)
bitwise_xor = _bitwise(G.logical_xor)


def _reduction(build: Callable[..., Expr]) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        x = _mask(call, "self")
        dims = call.args.get("dim")
        if isinstance(dims, (list, tuple)) and not dims:
            dims = None
        axes = None if dims is None else [int(dims)] if isinstance(dims, int) else [int(d) for d in dims]
        return build(x, axes, bool(call.args.get("keepdim", False)))
    convert.__name__ = convert.__qualname__ = build.__name__
    convert.__doc__ = f"``{build.__name__}`` over ``dim`` (all axes when absent or empty)."
    return convert


any_ = _reduction(G.any)
all_ = _reduction(G.all)


def _triangle(upper: bool) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        x = call.tensor("self")
        rows, cols = x.tensor_type.shape[-2:]
        offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        diagonal = int(call["diagonal"])
        keep = offset >= diagonal if upper else offset <= diagonal
        return G.where(Constant(keep), x, Constant(np.zeros((), dtype=x.tensor_type.dtype)))
    convert.__name__ = convert.__qualname__ = "triu" if upper else "tril"
    convert.__doc__ = f"The {'upper' if upper else 'lower'} triangle of the last two axes from ``diagonal`` on."
    return convert


triu = _triangle(True)
tril = _triangle(False)


def to_copy(call: AtenCall) -> Expr:
    """``self`` in the output's dtype (a copy to its own dtype is itself)."""
    return G.cast(call.tensor("self"), call.out.dtype)


CONVERTERS: dict[str, Callable[[AtenCall], Expr]] = {
    **{f"aten.{name}.{form}": convert for name, convert in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le),
                                                              ("gt", gt), ("ge", ge))
       for form in ("Tensor", "Scalar")},
    "aten.where.self": where, "aten.masked_fill.Scalar": masked_fill, "aten.masked_fill.Tensor": masked_fill,
    "aten.logical_not.default": logical_not, "aten.logical_and.default": logical_and,
    "aten.logical_or.default": logical_or, "aten.logical_xor.default": logical_xor,
    "aten.bitwise_not.default": bitwise_not, "aten.bitwise_and.Tensor": bitwise_and,
    "aten.bitwise_or.Tensor": bitwise_or, "aten.bitwise_xor.Tensor": bitwise_xor,
    **{f"aten.any.{form}": any_ for form in ("dim", "dims", "default")},
    **{f"aten.all.{form}": all_ for form in ("dim", "dims", "default")},
    "aten.triu.default": triu, "aten.tril.default": tril, "aten._to_copy.default": to_copy,
}
"""The op table's rows for this module's converters (merged into :data:`.op_table.CONVERTERS`)."""
