"""Converters of the arithmetic ATen ops: tensor and scalar ``add``/``sub``/``rsub``/``mul``/``div`` (with
``alpha``, NumPy broadcasting), the math functions, the activations (``relu``, ``hardtanh``/``clamp``,
``gelu`` exact and tanh-approximated, ``silu``, ``hardswish``, ``hardsigmoid``, ``leaky_relu``) and the
reductions (``mean``, ``sum``, ``amax``; a mean over H and W of NCHW data becomes
``nn.global_avg_pool2d``).

Activations the graph has no op for are written with graph ops (GELU is ``0.5 x (1 + erf(x / sqrt 2))``),
which fuse into one elementwise kernel. Each converter takes an :class:`~.call.AtenCall` and returns a
graph expression; the op table (:mod:`.op_table`) says which ATen op each one converts.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.ir import Expr

Operand = Expr | float | int


def operand(call: AtenCall, name: str) -> Operand:
    """Argument ``name``: a tensor or a Python number (booleans are not numbers here)."""
    value = call[name]
    if isinstance(value, Expr) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise call.unsupported(f"argument {name} is {type(value).__name__}", "a tensor or a number")


def _scaled(value: Operand, factor: Any) -> Operand:
    if factor == 1:
        return value
    return G.multiply(value, float(factor)) if isinstance(value, Expr) else value * factor


def _binary(build: Callable[[Operand, Operand], Expr], call: AtenCall, lhs: Operand, rhs: Operand) -> Expr:
    if not isinstance(lhs, Expr) and not isinstance(rhs, Expr):
        raise call.unsupported("both operands are numbers", "a tensor operand")
    return build(lhs, rhs)


def add(call: AtenCall) -> Expr:
    """``self + alpha * other``."""
    return _binary(G.add, call, operand(call, "self"), _scaled(operand(call, "other"), call["alpha"]))


def sub(call: AtenCall) -> Expr:
    """``self - alpha * other``."""
    return _binary(G.subtract, call, operand(call, "self"), _scaled(operand(call, "other"), call["alpha"]))


def rsub(call: AtenCall) -> Expr:
    """``other - alpha * self``."""
    return _binary(G.subtract, call, operand(call, "other"), _scaled(operand(call, "self"), call["alpha"]))


def mul(call: AtenCall) -> Expr:
    """``self * other``."""
    return _binary(G.multiply, call, operand(call, "self"), operand(call, "other"))


def div(call: AtenCall) -> Expr:
    """True division (``rounding_mode`` None)."""
    if call.args.get("rounding_mode") is not None:
        raise call.unsupported(f"rounding_mode={call['rounding_mode']!r}", "true division (rounding_mode=None)")
    return _binary(G.divide, call, operand(call, "self"), operand(call, "other"))


def unary(build: Callable[[Expr], Expr]) -> Callable[[AtenCall], Expr]:
    """The converter of an op that applies ``build`` to its one tensor ``self``."""
    def convert(call: AtenCall) -> Expr:
        return build(call.tensor("self"))
    convert.__name__ = convert.__qualname__ = build.__name__
    convert.__doc__ = f"``{build.__name__}(self)``."
    return convert


def reciprocal(x: Expr) -> Expr:
    """``1 / x``."""
    return G.divide(1.0, x)


def silu(x: Expr) -> Expr:
    """``x * sigmoid(x)``."""
    return G.multiply(x, G.sigmoid(x))


def hardswish(x: Expr) -> Expr:
    """``x * clip(x + 3, 0, 6) / 6``."""
    return G.multiply(x, G.divide(G.clip(G.add(x, 3.0), 0.0, 6.0), 6.0))


def hardsigmoid(x: Expr) -> Expr:
    """``clip(x + 3, 0, 6) / 6``."""
    return G.divide(G.clip(G.add(x, 3.0), 0.0, 6.0), 6.0)


_POWERS: dict[float, Callable[[Expr], Expr]] = {
    1.0: lambda x: x, 2.0: lambda x: G.multiply(x, x), 3.0: lambda x: G.multiply(G.multiply(x, x), x),
    0.5: G.sqrt, -0.5: G.rsqrt, -1.0: reciprocal, -2.0: lambda x: reciprocal(G.multiply(x, x)),
}


def pow_scalar(call: AtenCall) -> Expr:
    """``self ** exponent`` for the exponents 1, 2, 3, 0.5, -0.5, -1 and -2."""
    exponent = operand(call, "exponent")
    if isinstance(exponent, Expr) or float(exponent) not in _POWERS:
        raise call.unsupported(f"exponent {exponent!r}", "an exponent among 1, 2, 3, 0.5, -0.5, -1, -2 (x * x, "
                               "torch.sqrt, torch.rsqrt)")
    return _POWERS[float(exponent)](call.tensor("self"))


def _bound(call: AtenCall, name: str) -> float | None:
    """Bound ``name`` of a clamp: a number or absent."""
    value = call.args.get(name)
    if value is None:
        return None
    if isinstance(value, Expr):
        raise call.unsupported("tensor bounds", "number bounds (aten.clamp.default)")
    return float(value)


def clamp(call: AtenCall) -> Expr:
    """``clamp(self, min, max)``; either bound may be absent."""
    low, high = _bound(call, "min"), _bound(call, "max")
    if low is None and high is None:
        return call.tensor("self")
    return G.clip(call.tensor("self"), low, high)


def clamp_min(call: AtenCall) -> Expr:
    """``max(self, min)``."""
    return G.clip(call.tensor("self"), _bound(call, "min"), None)


def clamp_max(call: AtenCall) -> Expr:
    """``min(self, max)``."""
    return G.clip(call.tensor("self"), None, _bound(call, "max"))


def hardtanh(call: AtenCall) -> Expr:
    """``clip(self, min_val, max_val)``: ``ReLU6`` is ``hardtanh(x, 0, 6)``."""
    return G.clip(call.tensor("self"), call["min_val"], call["max_val"])


def gelu(call: AtenCall) -> Expr:
    """GELU: ``0.5 x (1 + erf(x / sqrt 2))``, or with ``approximate="tanh"`` the tanh form."""
    x = call.tensor("self")
    if call["approximate"] == "tanh":
        inner = G.multiply(G.add(x, G.multiply(G.multiply(G.multiply(x, x), x), 0.044715)), math.sqrt(2 / math.pi))
        return G.multiply(G.multiply(x, 0.5), G.add(G.tanh(inner), 1.0))
    if call["approximate"] != "none":
        raise call.unsupported(f"approximate={call['approximate']!r}", "approximate='none' or 'tanh'")
    return G.multiply(G.multiply(x, 0.5), G.add(G.erf(G.multiply(x, 1 / math.sqrt(2))), 1.0))


def leaky_relu(call: AtenCall) -> Expr:
    """``relu(x) - slope * relu(-x)``."""
    x = call.tensor("self")
    return G.subtract(G.nn.relu(x), G.multiply(G.nn.relu(G.negative(x)), float(call["negative_slope"])))


# reductions ---------------------------------------------------------------------------------------

def _axes(call: AtenCall, name: str) -> tuple[int, ...] | None:
    """The reduced axes, non-negative; ``None`` for all (an absent or empty ``dim``)."""
    dims = call.args.get(name)
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return None
    ndim = call.tensor("self").tensor_type.ndim
    return tuple(sorted(d % ndim for d in ([dims] if isinstance(dims, int) else dims)))


def _check_dtype(call: AtenCall) -> None:
    if call.args.get("dtype") is not None and call["dtype"] != call.tensor("self").tensor_type.dtype:
        raise call.unsupported(f"a reduction to dtype {call['dtype']}", "a reduction in the input's dtype")


def reduce_mean(call: AtenCall) -> Expr:
    """Mean over ``dim``; over the H and W of NCHW data, ``nn.global_avg_pool2d``."""
    _check_dtype(call)
    x, axes, keep = call.tensor("self"), _axes(call, "dim"), bool(call.args.get("keepdim", False))
    if x.tensor_type.ndim == 4 and axes == (2, 3):
        pooled = G.nn.global_avg_pool2d(x)
        return pooled if keep else G.reshape(pooled, x.tensor_type.shape[:2])
    return G.mean(x, axes, keep)


def reduce_sum(call: AtenCall) -> Expr:
    """Sum over ``dim`` (all axes when absent or empty)."""
    _check_dtype(call)
    return G.sum(call.tensor("self"), _axes(call, "dim"), bool(call.args.get("keepdim", False)))


def reduce_max(call: AtenCall) -> Expr:
    """Maximum over ``dim`` (``amax``; all axes for ``max.default``)."""
    return G.max(call.tensor("self"), _axes(call, "dim"), bool(call.args.get("keepdim", False)))
