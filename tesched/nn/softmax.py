"""``softmax(x, axis=-1)``: ``exp(x - max) / sum(exp(x - max))`` along one axis, numerically stable.

Three stages: the maximum and the sum of exponentials (reductions tagged ``comm_reduce``) and the
normalisation, tagged ``opaque`` as a whole op.
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import parallel_outer, reduction_work, register_schedule, schedule_reduction
from tesched.nn.shape import normalize_axis
from tesched.schedule.schedule import Schedule
from tesched.te.tensor import Tensor


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Softmax of ``x`` along ``axis``."""
    axis = normalize_axis(axis, x.ndim, "softmax")
    reduced = tuple(1 if a == axis else d for a, d in enumerate(x.shape))

    def along(i: tuple, r) -> tuple:
        return tuple(r if a == axis else v for a, v in enumerate(i))

    k1 = ts.reduce_axis((0, x.shape[axis]), "k")
    biggest = compute(reduced, lambda *i: ts.max(x[along(i, k1)], axis=k1), name="softmax_max",
                      pattern=Pattern.COMM_REDUCE, op="softmax")
    k2 = ts.reduce_axis((0, x.shape[axis]), "k")
    total = compute(reduced, lambda *i: ts.sum(ts.exp(x[along(i, k2)] - biggest[i]), axis=k2),
                    name="softmax_sum", pattern=Pattern.COMM_REDUCE, op="softmax")
    return compute(x.shape, lambda *i: ts.exp(x[i] - biggest[along(i, 0)]) / total[along(i, 0)],
                   name="softmax", pattern=Pattern.OPAQUE, op="softmax")


@register_schedule("softmax")
def schedule_softmax(s: Schedule, red: Tensor, host: Tensor) -> None:
    """The sum of exponentials is computed per slice, inside the output's loops over the other axes
    (the softmax axis innermost and vectorized); the maximum, which the sum also reads, stays whole."""
    if host.shape == red.shape or red.ndim == 1:
        schedule_reduction(s, red, host)
        return
    axis = next((a for a, d in enumerate(red.shape) if d == 1 and host.shape[a] != 1), red.ndim - 1)
    hstage = s[host]
    axes = list(hstage.op.axis)
    others = axes[:axis] + axes[axis + 1:]
    hstage.reorder(*others, axes[axis])
    slice_loop = parallel_outer(hstage, others, reduction_work(red))
    hstage.vectorize(axes[axis])
    s[red].compute_at(hstage, slice_loop)
