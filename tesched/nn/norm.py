"""Normalisation: inference ``batch_norm(x, gamma, beta, mean, var, epsilon, axis)``, training-mode
``batch_norm_train(x, gamma, beta, epsilon, axis)`` and ``layer_norm(x, gamma, beta, axis, epsilon)``.

``batch_norm`` is ``(x - mean) / sqrt(var + epsilon) * gamma + beta`` with the four 1-D statistics running
along ``axis``; one stage tagged ``broadcast``.

``batch_norm_train`` normalises with the batch's own statistics, as PyTorch's ``BatchNorm`` in training
mode: per channel of ``axis``, the mean and the biased variance over every other axis (the sum, then the
sum of squared deviations from the mean), two reductions tagged ``comm_reduce``, then the normalisation
tagged ``opaque``. Its gradient (``ts.gradient``, ``G.gradient``) flows through the statistics. The running
statistics a training step also updates are the caller's: :func:`batch_moments` gives the batch's mean
and unbiased variance for them.

``layer_norm`` normalises each slice along ``axis`` by its own mean and (biased) variance, then scales by
``gamma`` and shifts by ``beta`` (1-D, along ``axis``), as PyTorch's ``LayerNorm`` over the last axis: two
reductions (the sum, then the sum of squared deviations from the mean, so no cancellation) tagged
``comm_reduce`` and the normalisation tagged ``opaque``. Its schedule computes one slice at a time (the
slices parallel when there is work enough): over the last axis, when at least 4 lanes of a vector (a power
of two) divide it, both reductions are split into one partial sum per lane (``rfactor``), vectorized, then
summed, and the normalisation is vectorized; otherwise it is scheduled like ``softmax``, the sum stored
whole.
"""
from __future__ import annotations

import tesched as ts
from tesched.nn.hints import is_symbolic
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import (
    parallel_outer,
    reduction_work,
    register_schedule,
    schedule_reduction,
    static_extent,
)
from tesched.nn.shape import normalize_axis
from tesched.nn.softmax import schedule_softmax
from tesched.schedule.schedule import Schedule
from tesched.target import current_target
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor

LAYER_NORM_SUM = "layer_norm_sum"
"""Op tag of a layer norm's first reduction (the sum), which :func:`schedule_layer_norm` schedules."""


def batch_norm(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor, epsilon: float = 1e-5,
               axis: int = 1) -> Tensor:
    """Normalise ``x`` per channel of ``axis`` with given statistics, then scale and shift."""
    axis = normalize_axis(axis, x.ndim, "batch_norm")
    _check_along(x, axis, "batch_norm", gamma=gamma, beta=beta, mean=mean, var=var)

    def fcompute(*i):
        c = i[axis]
        return (x[i] - mean[c]) / ts.sqrt(var[c] + epsilon) * gamma[c] + beta[c]

    return compute(x.shape, fcompute, name="batch_norm", pattern=Pattern.BROADCAST, op="batch_norm")


def _check_along(x: Tensor, axis: int, what: str, **vectors: Tensor) -> None:
    """Each of ``vectors`` is 1-D along ``axis`` of ``x``, of ``x``'s dtype."""
    size = x.shape[axis]
    for name, t in vectors.items():
        if t.shape != (size,):
            raise ValueError(f"{what}: {name} has shape {t.shape}, expected ({size},) for axis {axis} of {x.shape}")
        if t.dtype != x.dtype:
            raise TypeError(f"{what}: {name} is {t.dtype} but x is {x.dtype}")


def _channel_stats(x: Tensor, axis: int, what: str) -> tuple[Tensor, Tensor, float]:
    """The per-channel sum of ``x`` and sum of squared deviations from the mean over every axis but
    ``axis``, and how many elements each channel has."""
    others = [a for a in range(x.ndim) if a != axis]
    if not all(isinstance(x.shape[a], int) for a in others):
        raise ValueError(f"{what}: the axes reduced over ({others}) of {x.shape} must have constant extents")
    count = 1
    for a in others:
        count *= int(x.shape[a])

    def at(c, ks: list) -> tuple:
        it = iter(ks)
        return tuple(c if a == axis else next(it) for a in range(x.ndim))

    ks1 = [ts.reduce_axis((0, x.shape[a]), f"k{a}") for a in others]
    total = compute((x.shape[axis],), lambda c: ts.sum(x[at(c, ks1)], axis=ks1), name=f"{what}_sum",
                    pattern=Pattern.COMM_REDUCE, op=what)
    ks2 = [ts.reduce_axis((0, x.shape[a]), f"k{a}") for a in others]

    def deviation(c) -> Expr:
        return x[at(c, ks2)] - total[c] / float(count)

    squares = compute((x.shape[axis],), lambda c: ts.sum(deviation(c) * deviation(c), axis=ks2),
                      name=f"{what}_squares", pattern=Pattern.COMM_REDUCE, op=what)
    return total, squares, float(count)


def batch_norm_train(x: Tensor, gamma: Tensor, beta: Tensor, epsilon: float = 1e-5, axis: int = 1) -> Tensor:
    """Normalise ``x`` per channel of ``axis`` by the batch's mean and biased variance over the other axes,
    then scale and shift (PyTorch's ``BatchNorm`` in training mode)."""
    axis = normalize_axis(axis, x.ndim, "batch_norm_train")
    _check_along(x, axis, "batch_norm_train", gamma=gamma, beta=beta)
    total, squares, count = _channel_stats(x, axis, "batch_norm_train")

    def fcompute(*i):
        c = i[axis]
        return (x[i] - total[c] / count) * (gamma[c] / ts.sqrt(squares[c] / count + epsilon)) + beta[c]

    return compute(x.shape, fcompute, name="batch_norm_train", pattern=Pattern.OPAQUE, op="batch_norm_train")


def batch_moments(x: Tensor, axis: int = 1) -> tuple[Tensor, Tensor]:
    """The batch's mean and unbiased variance per channel of ``axis`` (what a training step blends into
    the running statistics, as PyTorch's ``BatchNorm`` does)."""
    axis = normalize_axis(axis, x.ndim, "batch_moments")
    total, squares, count = _channel_stats(x, axis, "batch_moments")
    if count < 2:
        raise ValueError(f"batch_moments: one element per channel of {x.shape} has no unbiased variance")
    mean = compute(total.shape, lambda c: total[c] / count, name="batch_mean", pattern=Pattern.ELEMWISE,
                   op="batch_moments")
    var = compute(total.shape, lambda c: squares[c] / (count - 1.0), name="batch_var", pattern=Pattern.ELEMWISE,
                  op="batch_moments")
    return mean, var


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, axis: int = -1, epsilon: float = 1e-5) -> Tensor:
    """Normalise ``x`` over ``axis`` by each slice's mean and variance, then scale and shift."""
    axis = normalize_axis(axis, x.ndim, "layer_norm")
    size = x.shape[axis]
    _check_along(x, axis, "layer_norm", gamma=gamma, beta=beta)
    reduced = tuple(1 if a == axis else d for a, d in enumerate(x.shape))

    def along(i: tuple, k) -> tuple:
        return tuple(k if a == axis else v for a, v in enumerate(i))

    k1 = ts.reduce_axis((0, size), "k")
    total = compute(reduced, lambda *i: ts.sum(x[along(i, k1)], axis=k1), name="layer_norm_sum",
                    pattern=Pattern.COMM_REDUCE, op=LAYER_NORM_SUM)
    k2 = ts.reduce_axis((0, size), "k")

    def deviation(i: tuple, k) -> Expr:
        return x[along(i, k)] - total[along(i, 0)] / float(size)

    squares = compute(reduced, lambda *i: ts.sum(deviation(i, k2) * deviation(i, k2), axis=k2),
                      name="layer_norm_squares", pattern=Pattern.COMM_REDUCE, op="layer_norm")

    def fcompute(*i):
        scale = gamma[i[axis]] / ts.sqrt(squares[along(i, 0)] / float(size) + epsilon)
        return deviation(i, i[axis]) * scale + beta[i[axis]]

    return compute(x.shape, fcompute, name="layer_norm", pattern=Pattern.OPAQUE, op="layer_norm")


@register_schedule("layer_norm", producers=(LAYER_NORM_SUM,))
def schedule_layer_norm(s: Schedule, squares: Tensor, host: Tensor) -> None:
    """The schedule of the module doc; ``squares`` is the second reduction, ``host`` the output it is
    computed for, and the sum is found among the inputs of ``squares``."""
    total = next(t for t in squares.op.input_tensors if op_of(t) == LAYER_NORM_SUM)
    reduce_axis = squares.op.reduce_axis[0]
    lanes = current_target().lanes(squares.dtype)           # the most lanes, a power of two, dividing it
    while lanes > 1 and (is_symbolic(reduce_axis.range.extent) or static_extent(reduce_axis) % lanes):
        lanes //= 2
    last = squares.ndim - 1
    if lanes < 4 or host.shape == squares.shape or squares.shape[last] != 1 or host.shape[last] == 1:
        schedule_softmax(s, squares, host)
        schedule_reduction(s, s.cache_write(total, "local"), total)
        return
    hstage = s[host]
    axes = list(hstage.op.axis)
    slice_loop = parallel_outer(hstage, axes[:-1], reduction_work(squares))
    hstage.vectorize(axes[-1])
    for red in (total, squares):
        rstage = s[red]
        _, lane = rstage.split(rstage.op.reduce_axis[0], lanes)
        partial = s.rfactor(red, lane, factor_axis=red.ndim)
        assert isinstance(partial, Tensor)      # a sum: one partial tensor
        pstage = s[partial]
        pstage.compute_at(hstage, slice_loop)
        *outer, lane_axis = pstage.op.axis
        pstage.reorder(*outer, *pstage.op.reduce_axis, lane_axis)
        pstage.vectorize(lane_axis)
        rstage.compute_at(hstage, slice_loop)
