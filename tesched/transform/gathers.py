"""Vector gathers: in a loop turned into explicit SIMD (:mod:`.vectorize`), a read whose element offset
is not affine in the loop (a lookup at a computed index: a bilateral grid's slice, a tone curve, a
histogram's bin) becomes one :class:`~tesched.ir.nodes.VGather` of its lanes' elements, its offsets an
``int32`` vector that the vectorizer computes like any other value.

Without gathers such a read kept the whole loop scalar and left it to gcc's vectorizer, which gives up
on 64-bit offsets and on clamps of floats converted to integers, so the clamps, casts and interpolations
around the read ran one element at a time, with branches.

A read is gathered only where that is exact: 32- or 64-bit elements in 4, 8 or 16 lanes (the runtime
header's ``ts_vgather_*``), a buffer of fewer than 2**31 elements (one read by a gather stays in memory:
:mod:`.registers` does not promote it), no index
checked at run time (each lane would check its own), and an offset whose every subexpression stays inside
``int32`` over the loops' ranges (:func:`~.narrow_indices.as_int32`); otherwise :func:`gather_offset` says
None and the loop stays scalar. This module decides and rewrites one offset; it emits nothing.
"""
from __future__ import annotations

from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.te.expr import Expr
from tesched.te.visit import walk
from tesched.transform.narrow_indices import as_int32

GATHER_LANES = {"float32": (4, 8, 16), "int32": (4, 8, 16), "float64": (4, 8), "int64": (4, 8)}
"""Element types and lane counts the runtime header gathers (its index vectors are ``int32`` x 4, 8, 16)."""
INT32_MAX = 2 ** 31 - 1


def gather_offset(load: ir.Load, flat: Expr, lanes: int, ranges: VarRanges) -> Expr | None:
    """The flat element offset ``flat`` of ``load`` in ``int32`` arithmetic, if ``lanes`` of it may be
    gathered (see the module docstring), else None."""
    buf = load.buffer
    count = buf.element_count()
    if lanes not in GATHER_LANES.get(buf.dtype, ()) or count is None \
            or count > INT32_MAX or any(isinstance(n, ir.CheckedIndex) for n in walk(flat)):
        return None
    return as_int32(flat, ranges)


__all__ = ["GATHER_LANES", "gather_offset"]
