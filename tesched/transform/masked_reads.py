"""Which reads under a vectorized select need a mask, and why a masked read stays inside its buffer.

A select whose condition changes across the lanes computes both branches in every lane, so the reads of a
branch are masked by the conditions of the selects around them (:mod:`.vectorize`): a lane reads exactly
when the scalar loop would read that element. The bounds check (:mod:`tesched.poly.bounds`) proved those
reads inside their tensors, and a local buffer's box (a ``cache_read``/``cache_write`` copy, a
``compute_at`` producer, a ``store_at`` window) is the footprint of its consumers' reads under their
affine conditions (:mod:`tesched.poly.domains`), so they are inside its allocation too. A lane off the
mask reads nothing: the runtime's masked loads (``tesched_masked.h``) neither dereference nor form its
address as a pointer. :func:`inside_buffer` finds the reads that need no mask at all.
"""
from __future__ import annotations

from tesched.arith.interval import VarRanges, bound
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.te.expr import BinOp, Binary


def inside_buffer(load: ir.Load, ranges: VarRanges) -> bool:
    """Whether ``load`` reads inside its buffer wherever the variables lie in ``ranges``: inside the
    tensor for an argument or a whole tensor, inside the allocated box (coordinates minus the origin; a
    folded dimension always is) for a local buffer, or inside the allocation for an element offset
    (:func:`tesched.ir.nodes.is_flat`). Symbolic extents are not judged (False)."""
    buf = load.buffer
    if ir.is_flat(buf, load.indices):
        count = buf.element_count()
        low, high = bound(load.indices[0], ranges)
        return count is not None and low >= 0 and high < count
    for k, (index, size, offset) in enumerate(zip(load.indices, buf.shape, buf.offsets)):
        if not isinstance(size, int):
            return False
        if k in buf.folds:
            continue
        low, high = bound(simplify(Binary(BinOp.SUB, index, offset, "int64"), ranges), ranges)
        if low < 0 or high >= size:
            return False
    return True
