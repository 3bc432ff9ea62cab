"""The runtime parameters of a call: which arguments give them, and their values checked and converted.

A kernel reading ``ts.param`` parameters takes their values after its arrays, positionally (in the order
of the kernel's ``scalars``) or by keyword (``f(a, out, sigma=2.0)``). :class:`ScalarParams` splits a
call's arguments into its arrays and the parameters' values, each a 0-d NumPy array of the parameter's
dtype (what the C call path passes by address). A missing, unknown or repeated parameter is a
``TypeError``; a value of the wrong kind (a float for an integer parameter, anything but a bool for a bool
one) a ``TypeError``, one that does not fit the dtype a ``ValueError``; each names the parameter. This
module does not check arrays (:mod:`.arguments`).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Sequence

import numpy as np

from tesched.te import dtype as dt
from tesched.te.expr import Var

_SCALARS = (bool, int, float, np.generic)
_KINDS = {bool: "bool", int: "int", float: "float", np.bool_: "bool", np.float32: "float", np.float64: "float"}
"""The common scalar types, found without ``isinstance`` on NumPy's abstract classes (slow)."""
_range = functools.lru_cache(maxsize=None)(dt.value_range)
_numpy = functools.lru_cache(maxsize=None)(dt.numpy_dtype)


def is_scalar(value: object) -> bool:
    """Whether ``value`` is a Python or NumPy scalar (a parameter's value, never an array)."""
    return type(value) in _KINDS or isinstance(value, _SCALARS)


def scalar_value(param: Var, value: Any) -> np.ndarray:
    """``value`` for parameter ``param``, as a 0-d array of its dtype (a 0-d array is accepted too)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    kind, dtype = _kind(value), param.dtype
    what = f"param {param.name} ({dtype})"
    if kind is None:
        raise TypeError(f"{what}: expected a number, got {type(value).__name__}")
    if dtype == "bool":
        if kind != "bool":
            raise TypeError(f"{what}: expected a bool, got {type(value).__name__} {value!r}")
        return np.array(bool(value), np.bool_)
    if kind == "bool":
        raise TypeError(f"{what}: expected a number, got the bool {value!r}")
    low, high = _range(dtype)
    if dt.is_int(dtype):
        if kind != "int":
            raise TypeError(f"{what}: expected an integer, got {type(value).__name__} {value!r}")
        if not low <= int(value) <= high:
            raise ValueError(f"{what}: {int(value)} does not fit in {dtype} ({low} to {high})")
        return np.array(int(value), _numpy(dtype))
    number = float(value)
    if math.isfinite(number) and not abs(number) <= high:
        raise ValueError(f"{what}: {number!r} overflows {dtype} (its largest value is {high})")
    return np.array(number, _numpy(dtype))


def _kind(value: object) -> str | None:
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    return None


class ScalarParams:
    """The runtime parameters ``params`` of kernel ``name``, in call order, after at most ``n_arrays``
    arrays."""

    def __init__(self, name: str, params: Sequence[Var], n_arrays: int):
        self.name, self.params, self.n_arrays = name, tuple(params), n_arrays
        self.names = {p.name: k for k, p in enumerate(self.params)}

    def split(self, args: tuple, keywords: Mapping[str, Any]) -> tuple[tuple, tuple[np.ndarray, ...]]:
        """``args`` without the trailing parameter values, and every parameter's value (see
        :func:`scalar_value`) from those and ``keywords``."""
        for key in keywords:
            if key not in self.names:
                listed = ", ".join(self.names) or "none"
                raise TypeError(f"{self.name}: unexpected keyword argument {key!r} (its params: {listed})")
        params = self.params
        if not params:
            return args, ()
        n = max(len(args) - self.n_arrays, 0)      # past the arrays: values, whatever their type
        while n < len(args) and is_scalar(args[len(args) - 1 - n]):
            n += 1
        if n == len(params) and not keywords:     # the common case: all of them after the arrays
            cut = len(args) - n
            return args[:cut], tuple([scalar_value(p, args[cut + k]) for k, p in enumerate(params)])
        free = [p for p in params if p.name not in keywords]
        if n > len(free):
            raise TypeError(f"{self.name}: {n} values after the arrays, but it takes "
                            f"{len(free)} more params ({', '.join(p.name for p in free) or 'none'})")
        given = dict(keywords)
        for p, v in zip(free, args[len(args) - n:]):
            given[p.name] = v
        missing = [p for p in params if p.name not in given]
        if missing:
            raise TypeError(f"{self.name}: missing param {', '.join(f'{p.name} ({p.dtype})' for p in missing)}; "
                            f"pass it after the arrays or by keyword ({missing[0].name}=...)")
        return args[:len(args) - n], tuple([scalar_value(p, given[p.name]) for p in params])
