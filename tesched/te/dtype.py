"""Data types of tesched expressions and the rules that combine them.

Supported dtypes: ``bool`` (results of comparisons), ``int32``, ``int64``, ``float32``, ``float64``.

Promotion rules for a binary operation (documented for users in ``README.md``):

1. Two expressions of the same dtype keep it.
2. Two integer (or bool) expressions: the wider integer type (``bool`` counts as ``int32``).
3. Two floating expressions: the wider floating type.
4. An integer and a floating expression: the floating type (``int64 + float32`` is ``float32``).
5. A Python ``int`` literal takes the other operand's dtype.
6. A Python ``float`` literal takes the other operand's dtype if it is floating, else ``float32``.

True division ``/`` needs a floating operand; integer ``//`` and ``%`` use floor semantics (as Python).
This module knows nothing of expressions beyond dtype names.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

FLOAT_TYPES = ("float32", "float64")
INT_TYPES = ("int32", "int64")
ALL_TYPES = ("bool",) + INT_TYPES + FLOAT_TYPES

C_TYPES = {
    "bool": "int8_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float32": "float",
    "float64": "double",
}

_WIDTH = {"bool": 0, "int32": 32, "int64": 64, "float32": 32, "float64": 64}


def normalize(dtype: DTypeLike, what: str = "dtype") -> str:
    """Return the canonical dtype name for ``dtype`` (a string or a NumPy dtype); errors name ``what``."""
    if dtype is None:
        raise TypeError(f"{what}: dtype must be given (one of {ALL_TYPES}), got None")
    try:
        name = np.dtype(dtype).name
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: unknown dtype {dtype!r}; expected one of {ALL_TYPES}") from err
    if name not in ALL_TYPES:
        raise TypeError(f"{what}: unsupported dtype {name!r}; expected one of {ALL_TYPES}")
    return name


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_TYPES or dtype == "bool"


def promote(a: str, b: str) -> str:
    """The dtype of a binary operation between expressions of dtypes ``a`` and ``b``."""
    if a == b:
        return "int32" if a == "bool" else a
    fa, fb = is_float(a), is_float(b)
    if fa and fb:
        return a if _WIDTH[a] >= _WIDTH[b] else b
    if fa:
        return a
    if fb:
        return b
    wa, wb = max(_WIDTH[a], 32), max(_WIDTH[b], 32)
    return "int64" if max(wa, wb) == 64 else "int32"


def literal_dtype(value: object, other: str | None) -> str:
    """The dtype a Python literal takes next to an operand of dtype ``other`` (or alone)."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        if other is None or other == "bool":
            return "int32"
        return other
    if isinstance(value, (float, np.floating)):
        if other is not None and is_float(other):
            return other
        return "float32"
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a tesched expression")


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype("bool" if dtype == "bool" else dtype)
