"""Data types of tesched expressions and the one table of rules that combines them.

Supported dtypes: ``bool`` (results of comparisons), ``int8 int16 int32 int64``, ``uint8 uint16 uint32``,
``float16 bfloat16 float32 float64``. Every property of a dtype (its kind, width, range, C storage type,
the C type its values have inside an expression, the NumPy dtype of its arrays) is a row of :data:`DTYPES`;
no other module special-cases a narrow type.

Rules for a binary operation (documented for users in ``docs/guide/expressions.rst``; Halide's rules where it has one):

1. Two expressions of the same dtype keep it. Integer arithmetic wraps modulo ``2**bits`` (for every
   integer width narrower than 32 bits and for ``uint32``; ``int32``/``int64`` overflow is undefined, as
   in C and Halide).
2. A floating and an integer expression: the floating type (``uint8 * float16`` is ``float16``).
3. Two floating types: the wider one; ``float16`` with ``bfloat16`` gives ``float32``.
4. Two integer types of the same signedness: the wider one. A signed and an unsigned one: the signed type
   of the greater width (``uint8 + int8`` is ``int8``, ``uint32 + int16`` is ``int32``).
5. A Python ``int`` literal takes the other operand's dtype; it must fit in it (``u8 + 300`` is a
   ``TypeError``). A Python ``float`` literal takes the other operand's dtype if that is floating (it must
   not overflow to infinity there), else ``float32``. Alone, an ``int`` is ``int32`` and a float
   ``float32``.
6. ``bool`` takes part in comparisons, logic, ``min``/``max`` and selects, never in arithmetic.
7. True division ``/`` needs a floating operand; ``//`` needs integers (floor division, as in Python) and
   ``%`` is the floor modulo.

``float16`` and ``bfloat16`` values are computed in ``float32``: an expression of such a dtype is exact
``float32`` arithmetic on its operands, rounded to the dtype (round to nearest, ties to even) when it is
stored, assigned to a register, or cast with ``astype`` (a ``float64`` becomes ``float16`` in one
rounding, as NumPy does, and ``bfloat16`` through ``float32``, as ``ml_dtypes`` does). :func:`round_float`
rounds a Python float the same way. ``bfloat16`` arrays are ``ml_dtypes.bfloat16`` NumPy arrays (an
optional dependency: ``pip install tesched[bf16]``); nothing but :func:`numpy_dtype` needs that package.

A rule broken raises ``TypeError`` saying which rule and naming both dtypes; :func:`tesched.te.expr.binary`
adds the expression. This module knows nothing of expressions beyond dtype names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import DTypeLike


@dataclass(frozen=True)
class DType:
    """One row of the dtype table.

    Attributes
    ----------
    name : str
        The dtype's name (``"uint8"``).
    kind : str
        ``"bool"``, ``"int"`` (signed), ``"uint"`` or ``"float"``.
    bits : int
        Width in memory (``bool`` is stored in one byte: 8).
    c_type : str
        The C type of an element in memory (arrays, local buffers, kernel signatures).
    value_c_type : str
        The C type of a value of this dtype inside an expression (``float`` for the 16-bit floats).
    suffix : str
        The runtime header's name for the type (``ts_max_u8``, ``ts_u8x64``).
    significand : int
        Floating types: significand bits including the implicit one; ``0`` for the others.
    min_exponent : int
        Floating types: the exponent of the smallest normal number (``2**min_exponent``).
    """

    name: str
    kind: str
    bits: int
    c_type: str
    value_c_type: str
    suffix: str
    significand: int = 0
    min_exponent: int = 0

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory."""
        return self.bits // 8

    @property
    def value_itemsize(self) -> int:
        """Bytes of a value inside an expression (4 for the 16-bit floats, computed in float32)."""
        return 4 if self.name in _COMPUTED_IN_FLOAT32 else self.itemsize


_COMPUTED_IN_FLOAT32 = ("float16", "bfloat16")

DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("bool", "bool", 8, "int8_t", "int8_t", "bool"),
    DType("int8", "int", 8, "int8_t", "int8_t", "i8"),
    DType("int16", "int", 16, "int16_t", "int16_t", "i16"),
    DType("int32", "int", 32, "int32_t", "int32_t", "i32"),
    DType("int64", "int", 64, "int64_t", "int64_t", "i64"),
    DType("uint8", "uint", 8, "uint8_t", "uint8_t", "u8"),
    DType("uint16", "uint", 16, "uint16_t", "uint16_t", "u16"),
    DType("uint32", "uint", 32, "uint32_t", "uint32_t", "u32"),
    DType("float16", "float", 16, "uint16_t", "float", "f16", 11, -14),
    DType("bfloat16", "float", 16, "uint16_t", "float", "bf16", 8, -126),
    DType("float32", "float", 32, "float", "float", "f32", 24, -126),
    DType("float64", "float", 64, "double", "double", "f64", 53, -1022),
)}
"""The dtype table: every supported dtype and its properties."""

FLOAT_TYPES = tuple(n for n, d in DTYPES.items() if d.kind == "float")
INT_TYPES = tuple(n for n, d in DTYPES.items() if d.kind in ("int", "uint"))
#: Every dtype name tesched knows (``ts.dtypes``).
ALL_TYPES = tuple(DTYPES)

C_TYPES = {n: d.c_type for n, d in DTYPES.items()}
"""C storage type of each dtype (kernel signatures, buffers)."""

ARITHMETIC_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "neg")
"""Operations ``bool`` operands may not take part in (rule 6)."""

BF16_EXTRA = "pip install tesched[bf16]"


def normalize(dtype: DTypeLike, what: str = "dtype") -> str:
    """The canonical dtype name for ``dtype`` (a name, a NumPy dtype, or ``ml_dtypes.bfloat16``).

    Parameters
    ----------
    dtype : object
        What to interpret as a dtype.
    what : str
        What the dtype is for, named in the error message.

    Returns
    -------
    str
        A key of :data:`DTYPES`.
    """
    if dtype is None:
        raise TypeError(f"{what}: dtype must be given (one of {ALL_TYPES}), got None")
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    try:
        name = np.dtype(dtype).name
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: unknown dtype {dtype!r}; expected one of {ALL_TYPES}") from err
    if name not in DTYPES:
        raise TypeError(f"{what}: unsupported dtype {name!r}; expected one of {ALL_TYPES}")
    return name


def info(dtype: str) -> DType:
    """The row of :data:`DTYPES` for the scalar dtype ``dtype``."""
    return DTYPES[dtype]


def is_float(dtype: str) -> bool:
    """Whether ``dtype`` is a floating type."""
    return DTYPES[dtype].kind == "float"


def is_int(dtype: str) -> bool:
    """Whether ``dtype`` is an integer type or ``bool``."""
    return DTYPES[dtype].kind != "float"


def is_unsigned(dtype: str) -> bool:
    """Whether ``dtype`` is an unsigned integer type."""
    return DTYPES[dtype].kind == "uint"


def itemsize(dtype: str) -> int:
    """Bytes per element of ``dtype`` in memory."""
    return DTYPES[dtype].itemsize


def computed_in_float32(dtype: str) -> bool:
    """Whether values of ``dtype`` are held in ``float32`` inside expressions (``float16``, ``bfloat16``)."""
    return dtype in _COMPUTED_IN_FLOAT32


def wraps(dtype: str) -> bool:
    """Whether the C code must bring an arithmetic result of ``dtype`` back into its range (integers
    narrower than 32 bits, which C computes in ``int``)."""
    return DTYPES[dtype].kind in ("int", "uint") and DTYPES[dtype].bits < 32


def value_range(dtype: str) -> tuple[int | float, int | float]:
    """The smallest and largest value of ``dtype`` (floats: the largest finite ones)."""
    d = DTYPES[dtype]
    if d.kind == "bool":
        return 0, 1
    if d.kind == "int":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    if d.kind == "uint":
        return 0, (1 << d.bits) - 1
    largest = math.ldexp(2.0 - math.ldexp(1.0, 1 - d.significand), _max_exponent(d))
    return -largest, largest


def _max_exponent(d: DType) -> int:
    return {16: 15, 32: 127, 64: 1023}[d.bits] if d.name != "bfloat16" else 127


def with_bits(dtype: str, bits: int) -> str:
    """The dtype of the same kind as ``dtype`` with ``bits`` bits; ``TypeError`` when there is none."""
    kind = DTYPES[dtype].kind
    for d in DTYPES.values():
        if d.kind == kind and d.bits == bits and d.name != "bfloat16":
            return d.name
    raise TypeError(f"there is no {bits}-bit {kind} dtype (from {dtype})")


def round_float(value: float, dtype: str) -> float:
    """``value`` rounded to the floating ``dtype`` (to nearest, ties to even; overflow gives infinity).

    Example
    -------
    >>> round_float(1.0 + 2.0 ** -9, "bfloat16")
    1.0
    """
    d = DTYPES[dtype]
    if d.name == "bfloat16":   # from float32, as ml_dtypes converts (a float64 is rounded twice)
        with np.errstate(over="ignore"):
            value = float(np.float32(value))
    if d.name == "float64" or not math.isfinite(value) or value == 0.0:
        return float(value)
    _, exponent = math.frexp(value)  # value = m * 2**exponent, 0.5 <= |m| < 1
    unit = max(exponent, d.min_exponent + 1) - d.significand   # spacing of representable numbers there
    rounded = math.ldexp(round(math.ldexp(value, -unit)), unit)  # round() ties to even
    if abs(rounded) >= math.ldexp(1.0, _max_exponent(d) + 1):
        return math.copysign(math.inf, value)
    return rounded


def promote(a: str, b: str, op: str = "add") -> str:
    """The dtype both operands of ``a <op> b`` take (rules 1-4 and 6 of the module docstring).

    Parameters
    ----------
    a, b : str
        The operands' dtypes.
    op : str
        The operation (``add``, ``lt``, ``max`` ...); arithmetic on ``bool`` is refused.

    Returns
    -------
    str
        The operand dtype (comparisons then give ``bool``).
    """
    if op in ARITHMETIC_OPS and "bool" in (a, b):
        raise TypeError(f"no arithmetic on bool (operands {a} and {b}): cast with .astype('int32') first")
    if a == b:
        return a
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    da, db = DTYPES[a], DTYPES[b]
    if da.kind == "float" and db.kind == "float":
        if da.bits == db.bits:
            return "float32"   # float16 with bfloat16: neither holds the other
        return a if da.bits > db.bits else b
    if da.kind == "float" or db.kind == "float":
        return a if da.kind == "float" else b
    if da.kind == db.kind:
        return a if da.bits >= db.bits else b
    return with_bits("int32", max(da.bits, db.bits))


def literal_dtype(value: object, other: str | None) -> str:
    """The dtype a Python literal takes next to an operand of dtype ``other`` (or alone): rule 5.

    Raises ``TypeError`` when the literal does not fit (an ``int`` out of range, a float that would
    overflow to infinity)."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        if other is None or other == "bool":
            return "int32" if -2**31 <= int(value) < 2**31 else "int64"
        low, high = value_range(other)
        if is_float(other):
            if math.isinf(round_float(float(value), other)):
                raise TypeError(f"the literal {value} overflows {other} (operands {other} and int literal)")
        elif not low <= int(value) <= high:
            raise TypeError(f"the literal {value} does not fit in {other} (operands {other} and int literal); "
                            f"cast the expression with .astype() to a wider type first")
        return other
    if isinstance(value, (float, np.floating)):
        if other is not None and is_float(other):
            if math.isfinite(value) and math.isinf(round_float(float(value), other)):
                raise TypeError(f"the literal {value} overflows {other} (operands {other} and float literal)")
            return other
        return "float32"
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a tesched expression")


def numpy_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of arrays of ``dtype`` (``bfloat16``: ``ml_dtypes.bfloat16``, which must be
    installed)."""
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError as err:
            raise ImportError(f"bfloat16 arrays are ml_dtypes.bfloat16 NumPy arrays: {BF16_EXTRA}") from err
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)
