"""Elementwise and broadcasting ops: ``relu sigmoid tanh exp erf sqrt rsqrt log abs negative clip``,
``add subtract multiply divide`` (NumPy broadcasting, a Python number allowed on either side) and
``bias_add``.

Each returns one stage tagged ``elemwise`` (unary) or ``broadcast`` (binary), as TVM classifies them;
their default schedule is :func:`tesched.nn.schedule.schedule_injective`. Shapes are static ints. In
float32, ``tanh``, ``sigmoid`` and ``erf`` are arithmetic (``rational_tanh``, ``rational_erf``), so
their loops become SIMD code.
"""
from __future__ import annotations

from typing import Callable

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.shape import broadcast_shapes, normalize_axis
from tesched.te.expr import Expr, as_expr
from tesched.te.tensor import Tensor

Operand = Tensor | float | int


def _unary(x: Tensor, fn: Callable[[Expr], Expr], op: str) -> Tensor:
    return compute(x.shape, lambda *i: fn(x[i]), name=op, pattern=Pattern.ELEMWISE, op=op)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``."""
    return _unary(x, lambda v: ts.maximum(v, ts.const(0, v.dtype)), "relu")


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``; for float32 ``0.5 + 0.5 * tanh(x / 2)`` with ``rational_tanh``
    (absolute error below 3e-7), which vectorizes."""
    return _unary(x, lambda v: 0.5 + 0.5 * rational_tanh(0.5 * v) if v.dtype == "float32" else ts.sigmoid(v),
                  "sigmoid")


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent; for float32 ``rational_tanh`` (relative error below 4e-7), which vectorizes."""
    return _unary(x, lambda v: rational_tanh(v) if v.dtype == "float32" else ts.tanh(v), "tanh")


TANH_CLAMP = 7.90531110763549805
TANH_NUMERATOR = (4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
                  -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16)
TANH_DENOMINATOR = (4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06)


def rational_tanh(v: Expr) -> Expr:
    """``tanh(v)`` as ``v * P(v^2) / Q(v^2)`` on ``v`` clamped to +-TANH_CLAMP (Eigen's float32 tanh):
    additions, multiplications, one division and min/max, so a vectorized loop keeps it in SIMD code,
    where a call of ``tanhf`` would run one lane at a time."""
    clamped = ts.minimum(TANH_CLAMP, ts.maximum(-TANH_CLAMP, v))  # constant first: a NaN passes through
    square = clamped * clamped
    return clamped * _horner(TANH_NUMERATOR, square) / _horner(TANH_DENOMINATOR, square)


def _horner(coefficients: tuple[float, ...], x: Expr) -> Expr:
    """``sum(c_k * x**k)`` by Horner's rule."""
    value = as_expr(coefficients[-1], x.dtype)  # the constant ``c * x`` would make, typed after ``x``
    for c in reversed(coefficients[:-1]):
        value = value * x + c
    return value


def exp(x: Tensor) -> Tensor:
    """Exponential."""
    return _unary(x, ts.exp, "exp")


ERF_CLAMP = 4.0
ERF_NUMERATOR = (1.128379154346389, 0.1917390666099927, 0.04943671574180336, 0.003347656090591316,
                 0.0001330584385439434, -1.916203984862259e-06, 1.993518693898285e-08)
ERF_DENOMINATOR = (1.0, 0.5032570079932396, 0.1115687821547311, 0.01362982462850089, 0.0008696847981752764)


def rational_erf(v: Expr) -> Expr:
    """``erf(v)`` as ``v * P(v^2) / Q(v^2)`` on ``v`` clamped to +-ERF_CLAMP (where float32 ``erf`` is 1):
    a rational function fitted by weighted least squares on ``[0, 4]``, absolute and relative error below
    5e-7 in float32 arithmetic, and SIMD code in a vectorized loop like ``rational_tanh``."""
    clamped = ts.minimum(ERF_CLAMP, ts.maximum(-ERF_CLAMP, v))
    square = clamped * clamped
    return clamped * _horner(ERF_NUMERATOR, square) / _horner(ERF_DENOMINATOR, square)


def erf(x: Tensor) -> Tensor:
    """The error function (float32 only: ``rational_erf``, which the exact GELU is built on)."""
    if x.dtype != "float32":
        raise TypeError(f"erf: only float32 is supported, got {x.dtype}")
    return _unary(x, rational_erf, "erf")


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    return _unary(x, ts.sqrt, "sqrt")


def rsqrt(x: Tensor) -> Tensor:
    """``1 / sqrt(x)``."""
    return _unary(x, lambda v: 1.0 / ts.sqrt(v), "rsqrt")


def log(x: Tensor) -> Tensor:
    """Natural logarithm."""
    return _unary(x, ts.log, "log")


def abs(x: Tensor) -> Tensor:  # noqa: A001 - NumPy's name
    """Absolute value."""
    return _unary(x, ts.abs, "abs")


def negative(x: Tensor) -> Tensor:
    """Elementwise negation, ``-x``."""
    return _unary(x, lambda v: -v, "negative")


def clip(x: Tensor, a_min: float | None, a_max: float | None) -> Tensor:
    """``x`` limited to ``[a_min, a_max]`` (``None``: no limit on that side); ``relu6`` is
    ``clip(x, 0, 6)``. A NaN stays NaN, as in PyTorch's ``clamp``."""
    if a_min is not None and a_max is not None and a_min > a_max:
        raise ValueError(f"clip: a_min={a_min} is greater than a_max={a_max}")

    def limit(v: Expr) -> Expr:
        if a_min is not None:
            v = ts.maximum(ts.const(a_min, v.dtype), v)  # constant first: a NaN passes through
        if a_max is not None:
            v = ts.minimum(ts.const(a_max, v.dtype), v)
        return v

    return _unary(x, limit, "clip")


def broadcast_read(t: Tensor, out_index: tuple) -> Expr:
    """``t`` read at the output index ``out_index`` under NumPy broadcasting (size-1 axes read 0)."""
    lead = len(out_index) - t.ndim
    idx = tuple(0 if d == 1 else out_index[lead + k] for k, d in enumerate(t.shape))
    return t[idx]


def _binary(a: Operand, b: Operand, fn: Callable[[Expr, Expr], Expr], op: str) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: at least one operand must be a tensor")
    for side in (a, b):
        if not isinstance(side, (Tensor, int, float)):
            raise TypeError(f"{op}: operands must be tensors or numbers, got {type(side).__name__}")
    tensor = a if isinstance(a, Tensor) else b
    assert isinstance(tensor, Tensor)  # checked above: at least one operand is a tensor
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        shape = broadcast_shapes(a.shape, b.shape, op)
        if a.dtype != b.dtype:
            raise TypeError(f"{op}: dtypes {a.dtype} and {b.dtype} differ")
    else:
        shape = tensor.shape

    def value(side: Operand, i: tuple) -> Expr:
        # a number becomes the constant the arithmetic with the tensor's element would make: of its dtype
        return broadcast_read(side, i) if isinstance(side, Tensor) else as_expr(side, tensor.dtype)

    return compute(shape, lambda *i: fn(value(a, i), value(b, i)), name=op, pattern=Pattern.BROADCAST,
                   op=op)


def add(a: Operand, b: Operand) -> Tensor:
    """``a + b`` with broadcasting."""
    return _binary(a, b, lambda x, y: x + y, "add")


def subtract(a: Operand, b: Operand) -> Tensor:
    """``a - b`` with broadcasting."""
    return _binary(a, b, lambda x, y: x - y, "subtract")


def multiply(a: Operand, b: Operand) -> Tensor:
    """``a * b`` with broadcasting."""
    return _binary(a, b, lambda x, y: x * y, "multiply")


def divide(a: Operand, b: Operand) -> Tensor:
    """``a / b`` with broadcasting (true division; floating dtypes)."""
    return _binary(a, b, lambda x, y: x / y, "divide")


def bias_add(x: Tensor, bias: Tensor, axis: int = 1) -> Tensor:
    """``x + bias`` where the 1-D ``bias`` runs along ``axis`` of ``x``."""
    axis = normalize_axis(axis, x.ndim, "bias_add")
    if bias.ndim != 1 or bias.shape[0] != x.shape[axis]:
        raise ValueError(f"bias_add: bias of shape {bias.shape} does not match axis {axis} of {x.shape}")
    if bias.dtype != x.dtype:
        raise TypeError(f"bias_add: dtypes {x.dtype} and {bias.dtype} differ")
    return compute(x.shape, lambda *i: x[i] + bias[i[axis]], name="bias_add", pattern=Pattern.BROADCAST,
                   op="bias_add")
