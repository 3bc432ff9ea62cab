"""Calls of the user's own C functions: ``ts.call_pure_extern`` (Halide's ``Expr::call_pure_extern``).

``ts.call_pure_extern("float32", "soft_clip", A[i], 0.5, source=C_TEXT)`` is an expression: a call of the C
function ``soft_clip`` on scalar arguments, returning a value of the dtype given. ``source`` (C text defining
the function, best ``static inline`` so that gcc inlines and vectorizes it) is compiled into every kernel that
calls it; without it the function must be one the C math library declares (``hypotf``, ``expm1``). The
function must be *pure*: its result depends on its arguments only, with no side effect, because tesched
evaluates it as often as the schedule needs (recomputed halos, hoisted out of loops, not at all where a
select does not take its branch). This module declares calls only; the C code
generator writes them and names a source that does not compile in the compiler's diagnostic.
"""
from __future__ import annotations

import re

from tesched.te import dtype as dt
from tesched.te.expr import Call, Expr, as_expr
from tesched.te.functions import PURE_CALLS

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESULT_TYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float32", "float64")
"""The dtypes an extern function may return (a C type each; ``float16`` values are computed in float32)."""


class ExternCall(Call):
    """A call of the user's C function ``name`` (see :func:`call_pure_extern`); ``source`` defines it, or is
    ``None`` for a function of the C library."""

    __slots__ = ("source",)
    label = "call_pure_extern"      # how messages and the compiler's diagnostics name the function's kind

    def __init__(self, name: str, args: tuple[Expr, ...], dtype: str, source: str | None):
        super().__init__(name, args, dtype)
        self.source = source

    def with_children(self, children):
        return ExternCall(self.name, tuple(children), self.dtype, self.source)


def call_pure_extern(dtype: str, name: str, *args: object, source: str | None = None) -> ExternCall:
    """A call of pure C function ``name`` on ``args``, returning ``dtype``.

    Parameters
    ----------
    dtype : str
        What the function returns (bool, an integer type, ``float32`` or ``float64``).
    name : str
        The C function's name: an identifier, not one of tesched's own functions (``exp``, ``abs``...)
        nor starting with ``ts_``.
    *args : Expr or number
        Its arguments, converted by C to the function's parameter types.
    source : str, optional
        C text defining ``name`` (and whatever it needs); compiled into each kernel calling it. Without it,
        ``name`` must be a function ``math.h`` declares.

    Returns
    -------
    Expr
        The call, usable anywhere in a stage's body.

    Example
    -------
    >>> soft = ts.call_pure_extern("float32", "soft_clip", A[i], source=  # doctest: +SKIP
    ...     "static inline float soft_clip(float x) { return x / (1.0f + fabsf(x)); }")
    """
    check_function_name(name, "call_pure_extern")
    result = dt.normalize(dtype, f"call_pure_extern {name}")
    if result not in RESULT_TYPES:
        raise TypeError(f"call_pure_extern {name}: a C function cannot return {result}; return one of "
                        f"{', '.join(RESULT_TYPES)}")
    if source is not None:
        check_source(name, source, f"call_pure_extern {name}")
    return ExternCall(name, tuple(as_expr(a) for a in args), result, source)


def check_function_name(name: object, what: str) -> str:
    """``name`` if it is a C identifier that is not one of tesched's own functions (``exp``, ``ts_...``);
    else a ValueError naming ``what``."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"{what}: the function name must be a C identifier, got {name!r}")
    if name in PURE_CALLS or name.startswith("ts_"):
        raise ValueError(f"{what}: {name} is a name of tesched's own functions (use ts.{name} or another name)")
    return name


def check_source(name: str, source: object, what: str) -> str:
    """``source`` if it is C text mentioning a definition of ``name``; else a TypeError or ValueError
    naming ``what``."""
    if not isinstance(source, str):
        raise TypeError(f"{what}: source must be C text (a str), got {type(source).__name__}")
    if not re.search(rf"\b{name}\s*\(", source):
        raise ValueError(f"{what}: its source does not define {name}")
    return source
