"""Runtime scalar parameters: ``ts.param(name, dtype)`` (Halide's ``Param<T>``).

A parameter is a named scalar of its dtype that a kernel takes at call time, after its arrays, so that a
gain or a sigma changes between calls without compiling again. It may appear in any expression of a
stage's body (values, conditions, data-dependent indices), never in a shape or a loop extent: sizes are
``ts.var`` and come from the arrays' shapes. :func:`params_of` lists the parameters of expressions in
the order they were made, and :func:`refuse_in_extent` raises the error for one found in a shape or an
extent. This module declares parameters only; passing their values is the driver's job.
"""
from __future__ import annotations

from typing import Iterable

from tesched.errors import LoweringError
from tesched.te import checks
from tesched.te import dtype as dt
from tesched.te.expr import Expr, Param
from tesched.te.visit import walk

PARAM_TYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float32", "float64")
"""The dtypes a parameter may have (``float16``/``bfloat16`` values are passed as ``float32`` and cast)."""


def param(name: str, dtype: str = "float32") -> Param:
    """A runtime scalar parameter of ``dtype``, usable in any expression of a stage's body.

    Parameters
    ----------
    name : str
        Its name: the keyword that passes its value to the kernel (``f(a, out, sigma=1.5)``), and in the
        exported C function's prototype.
    dtype : str
        ``"float32"`` (default), ``"float64"``, ``"bool"``, or an integer type up to ``int64`` /
        ``uint32`` (``float16``/``bfloat16`` values are passed as ``float32`` and cast).

    Returns
    -------
    Param
        An expression; its value is an argument of every kernel that reads it, after the arrays: the
        parameters listed among ``build``'s arguments first, in that order, then the others in the
        order they were made.

    Example
    -------
    >>> sigma = ts.param("sigma")                                   # doctest: +SKIP
    >>> B = ts.compute((n,), lambda i: ts.exp(-A[i] * A[i] / sigma))  # doctest: +SKIP
    >>> f = ts.build(ts.create_schedule(B.op), [A, B]); f(a, b, sigma=2.0)  # doctest: +SKIP
    """
    checks.check_name(name, "param")
    normal = dt.normalize(dtype, f"param {name}")
    if normal not in PARAM_TYPES:
        raise TypeError(f"param {name}: dtype {dtype!r} cannot be passed at call time; use one of "
                        f"{', '.join(PARAM_TYPES)} (a float16 value: a float32 param and .astype)")
    return Param(name, normal)


def params_of(exprs: Iterable[object]) -> list[Param]:
    """The parameters read by ``exprs`` (expressions; other objects are skipped), each once, in the order
    they were made."""
    found: dict[int, Param] = {}
    for e in exprs:
        if isinstance(e, Expr):
            for node in walk(e):
                if isinstance(node, Param):
                    found.setdefault(id(node), node)
    return sorted(found.values(), key=lambda p: p.serial)


def refuse_in_extent(exprs: Iterable[object], where: str) -> None:
    """Raise ``LoweringError`` naming the first parameter in ``exprs`` (the extents of ``where``)."""
    for p in params_of(exprs):
        raise LoweringError(f"param {p.name} is used in {where}: a runtime parameter's value is not known "
                            "when the loops are built; sizes are ts.var and come from the arrays' shapes")
