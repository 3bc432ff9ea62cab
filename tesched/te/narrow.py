"""Functions for narrow integer and floating arithmetic, with the semantics of Halide's intrinsics.

``saturate_cast`` (clamp to the target's range, then cast), ``widen``/``narrow`` (the type of twice or half
the width, same kind), ``rounding_shift_right`` (``x >> n`` rounding to nearest, ties up),
``halving_add`` and ``rounding_halving_add`` (the average of two values, down or up, without overflow).
Each builds an ordinary expression of min/max, casts, floor division and modulo by powers of two, so the
vectorizer turns them into shifts, masks and packs without knowing them. This module declares nothing
else; the dtype rules live in :mod:`tesched.te.dtype`.
"""
from __future__ import annotations

import math

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Expr, as_expr, binary, cast_to


def saturate_cast(x: object, dtype: str) -> Expr:
    """``x`` converted to ``dtype``, values beyond its range clamped to the range's ends.

    Parameters
    ----------
    x : Expr or number
        The value (integer or floating; not ``bool``).
    dtype : str
        The target dtype.

    Returns
    -------
    Expr
        ``cast(clamp(x, low, high))`` with the clamp in ``x``'s own type; a float NaN gives ``low``.

    Example
    -------
    >>> ts.saturate_cast(A[i] * 2, "uint8")   # A int16: -5 -> 0, 300 -> 255
    """
    e = as_expr(x)
    target = dt.normalize(dtype, "saturate_cast")
    if e.dtype == "bool":
        raise TypeError(f"saturate_cast({e!r}, {target}): the value is bool; cast it with .astype() instead")
    if e.dtype == target:
        return e
    low, high = dt.value_range(target)
    source_low, source_high = dt.value_range(e.dtype)
    if dt.is_float(e.dtype):
        low, high = _float_at_least(low, e.dtype), _float_at_most(high, e.dtype)
    if low > source_low:
        e = Binary(BinOp.MAX, e, Const(low, e.dtype), e.dtype)
    if high < source_high:
        e = Binary(BinOp.MIN, e, Const(high, e.dtype), e.dtype)
    return cast_to(e, target)


def _float_at_most(value: float, dtype: str) -> float:
    """The largest number of the floating ``dtype`` not above ``value``."""
    rounded = dt.round_float(float(value), dtype)
    if rounded <= value:
        return rounded
    _, exponent = math.frexp(rounded)
    return dt.round_float(rounded - math.ldexp(1.0, exponent - dt.info(dtype).significand - 1), dtype)


def _float_at_least(value: float, dtype: str) -> float:
    return 0.0 - _float_at_most(-value, dtype)   # 0.0 - x: no -0.0


def widen(x: object) -> Expr:
    """``x`` cast to the dtype of the same kind and twice the width (``uint8`` -> ``uint16``, ``float16``
    and ``bfloat16`` -> ``float32``); exact."""
    e = as_expr(x)
    d = dt.info(e.dtype)
    if d.kind == "bool":
        raise TypeError(f"widen({e!r}): bool has no wider type")
    try:
        wider = "float32" if dt.computed_in_float32(e.dtype) else dt.with_bits(e.dtype, 2 * d.bits)
    except TypeError as err:
        raise TypeError(f"widen({e!r}): {err}") from None
    return cast_to(e, wider)


def narrow(x: object) -> Expr:
    """``x`` cast to the dtype of the same kind and half the width (``int16`` -> ``int8``, ``float32`` ->
    ``float16``); integers wrap, floats round to nearest even."""
    e = as_expr(x)
    d = dt.info(e.dtype)
    try:
        if d.kind == "bool" or d.bits == 8:
            raise TypeError(f"there is no narrower type than {e.dtype}")
        return cast_to(e, dt.with_bits(e.dtype, d.bits // 2))
    except TypeError as err:
        raise TypeError(f"narrow({e!r}): {err}") from None


def _integer(name: str, x: object) -> Expr:
    e = as_expr(x)
    if not dt.is_int(e.dtype) or e.dtype == "bool":
        raise TypeError(f"{name}({e!r}): needs an integer value, got {e.dtype}")
    return e


def rounding_shift_right(x: object, shift: int) -> Expr:
    """``x / 2**shift`` rounded to nearest, ties rounding up, in ``x``'s dtype and without overflow (Halide's
    ``rounding_shift_right``): ``floor(x / 2**shift)`` plus the bit below the cut."""
    e = _integer("rounding_shift_right", x)
    if isinstance(shift, bool) or not isinstance(shift, int) or not 0 <= shift < dt.info(e.dtype).bits:
        raise ValueError(f"rounding_shift_right({e!r}, {shift!r}): the shift must be an int in "
                         f"[0, {dt.info(e.dtype).bits})")
    if shift == 0:
        return e
    down = binary(BinOp.FLOORDIV, e, 1 << shift)
    return binary(BinOp.ADD, down, binary(BinOp.FLOORMOD, binary(BinOp.FLOORDIV, e, 1 << (shift - 1)), 2))


def _halves(name: str, a: object, b: object) -> tuple[Expr, Expr]:
    probe = binary(BinOp.ADD, a, b)   # the dtype rules decide the operands' type
    x, y = cast_to(as_expr(a, probe.dtype), probe.dtype), cast_to(as_expr(b, probe.dtype), probe.dtype)
    return _integer(name, x), _integer(name, y)


def halving_add(a: object, b: object) -> Expr:
    """``(a + b) // 2`` computed without overflow (Halide's ``halving_add``: rounds down)."""
    x, y = _halves("halving_add", a, b)
    both_odd = binary(BinOp.MUL, binary(BinOp.FLOORMOD, x, 2), binary(BinOp.FLOORMOD, y, 2))
    return binary(BinOp.ADD, binary(BinOp.ADD, binary(BinOp.FLOORDIV, x, 2), binary(BinOp.FLOORDIV, y, 2)), both_odd)


def rounding_halving_add(a: object, b: object) -> Expr:
    """``(a + b + 1) // 2`` computed without overflow (Halide's ``rounding_halving_add``: rounds up)."""
    x, y = _halves("rounding_halving_add", a, b)
    either_odd = binary(BinOp.MAX, binary(BinOp.FLOORMOD, x, 2), binary(BinOp.FLOORMOD, y, 2))
    return binary(BinOp.ADD, binary(BinOp.ADD, binary(BinOp.FLOORDIV, x, 2), binary(BinOp.FLOORDIV, y, 2)), either_odd)


__all__ = ["halving_add", "narrow", "rounding_halving_add", "rounding_shift_right", "saturate_cast", "widen"]
