"""Batched matrix products: ``batch_matmul(a, b)[n, i, j] = sum_k a[n, i, k] * b[n, k, j]`` on 3-D operands,
with its default schedule (parallel over batches and rows, column tiles vectorized, the reduction outside
the column loop). Broadcasting over leading axes and higher ranks are the caller's reshapes (the frontend
folds them into the batch axis); this module does not pack panels or tile for registers."""
from __future__ import annotations

import tesched as ts
from tesched.nn.hints import hint
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import largest_divisor, parallel_outer, reduction_work, register_schedule, stored_whole
from tesched.schedule.schedule import Schedule
from tesched.target import current_target
from tesched.te.tensor import Tensor


def batch_matmul(a: Tensor, b: Tensor) -> Tensor:
    """``out[n, i, j] = sum_k a[n, i, k] * b[n, k, j]`` for ``a`` of shape ``(N, M, K)`` and ``b`` of shape
    ``(N, K, P)``; the output has shape ``(N, M, P)``."""
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"batch_matmul: operands must be 3-D, got {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise TypeError(f"batch_matmul: dtypes {a.dtype} and {b.dtype} differ")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"batch_matmul: shapes {a.shape} and {b.shape} disagree on the batch or reduced axis")
    k = ts.reduce_axis((0, a.shape[2]), "k")
    return compute((a.shape[0], a.shape[1], b.shape[2]),
                   lambda n, i, j: ts.sum(a[n, i, k] * b[n, k, j], axis=k),
                   name="batch_matmul", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="batch_matmul")


@register_schedule("batch_matmul")
def schedule_batch_matmul(s: Schedule, product: Tensor, host: Tensor) -> None:
    """Per (batch, row, column tile) the product accumulates a tile of one vector register's worth of
    columns, with the reduction outside the vectorized column loop (rows of ``b`` read contiguously);
    batches and rows are fused into one loop, parallel when the work is large (fusing the column tiles
    in too would leave the tile's coordinates as divisions of the fused loop in every vector access)."""
    product, host = stored_whole(s, product, host)
    lanes = current_target().lanes(product.dtype)
    tile = largest_divisor(hint(product.shape[2]), 2 * lanes)
    pstage, hstage = s[product], s[host]
    n, i, j = hstage.op.axis
    jo, ji = hstage.split(j, tile)
    pstage.compute_at(hstage, jo)
    pn, pi, pj = pstage.op.axis
    pstage.reorder(pn, pi, *pstage.op.reduce_axis, pj)
    pstage.vectorize(pj)
    hstage.vectorize(ji)
    parallel_outer(hstage, [n, i], reduction_work(product))
