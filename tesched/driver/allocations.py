"""The heap buffers of a kernel: their byte counts, checked before a call, and the error after a failure.

A generated kernel returns ``k`` when its ``k``-th heap allocation failed (see :mod:`tesched.codegen.c`).
:class:`Allocations` turns that code into a ``MemoryError`` that names the buffer, its shape and its byte
count, and refuses before the call sizes whose byte count does not fit in int64. A kernel returns ``-k``
when its ``k``-th checked (data-dependent) index was outside its tensor: that becomes the
:class:`~tesched.errors.BoundsError` whose message the lowering wrote. It does not allocate.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from tesched.errors import BoundsError
from tesched.ir.nodes import Buffer
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Expr, Var

INT64_MAX = (1 << 63) - 1


class Allocations:
    """The heap buffers of one kernel, in the order of its error codes."""

    def __init__(self, kernel: str, buffers: Sequence[Buffer],
                 evaluate: Callable[[Expr, dict[int, int]], int], checks: Sequence[str] = ()):
        self.kernel, self.buffers, self.evaluate = kernel, tuple(buffers), evaluate
        self.checks = tuple(checks)

    def _shape(self, buf: Buffer, values: dict[int, int]) -> tuple[int, ...] | None:
        try:
            return tuple(d if isinstance(d, int) else self.evaluate(d, values) for d in buf.shape)
        except (KeyError, ValueError, ZeroDivisionError):
            return None     # a size of the buffer's own loops: only the C side knows it

    def _message(self, buf: Buffer, values: dict[int, int]) -> str:
        shape = self._shape(buf, values)
        itemsize = dt.numpy_dtype(buf.dtype).itemsize
        if shape is None:
            return f"{self.kernel}: cannot allocate buffer {buf.name} ({buf.dtype})"
        nbytes = int(np.prod([max(d, 0) for d in shape], dtype=object)) * itemsize
        return (f"{self.kernel}: cannot allocate buffer {buf.name} of {nbytes:,} bytes "
                f"({buf.dtype}[{', '.join(map(str, shape))}])")

    def check_sizes(self, values: dict[int, int]) -> None:
        """Raise ``MemoryError`` if a buffer's byte count does not fit in int64 (before calling C)."""
        for buf in self.buffers:
            shape = self._shape(buf, values)
            if shape is not None:
                nbytes = int(np.prod([max(d, 0) for d in shape], dtype=object)) * dt.numpy_dtype(buf.dtype).itemsize
                if nbytes > INT64_MAX:
                    raise MemoryError(self._message(buf, values))

    def raise_for(self, status: int, values: dict[int, int]) -> None:
        """Raise the ``MemoryError`` (or, for a negative code, the ``BoundsError``) for a kernel's nonzero
        return code."""
        if -len(self.checks) <= status < 0:
            raise BoundsError(f"{self.kernel}: {self.checks[-status - 1]}")
        if 1 <= status <= len(self.buffers):
            raise MemoryError(self._message(self.buffers[status - 1], values))
        raise MemoryError(f"{self.kernel}: an allocation failed (code {status})")


def evaluate_size(e: Expr, values: dict[int, int]) -> int:
    """The value of integer size expression ``e`` given ``values`` (size variable's id -> value).

    Parameters
    ----------
    e : Expr
        An expression of constants and size variables (``+ - * // % min max``).
    values : dict of int to int
        The value of each size variable, keyed by ``id(variable)``.

    Returns
    -------
    int
    """
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return values[id(e)]
    if isinstance(e, Binary):
        a, b = evaluate_size(e.a, values), evaluate_size(e.b, values)
        ops = {"add": a + b, "sub": a - b, "mul": a * b, "min": min(a, b), "max": max(a, b)}
        if e.op in ops:
            return ops[e.op]
        if e.op in (BinOp.FLOORDIV, BinOp.CDIV):
            return a // b
        if e.op in (BinOp.FLOORMOD, BinOp.CMOD):
            return a % b
    raise ValueError(f"cannot evaluate size expression {e!r}")

