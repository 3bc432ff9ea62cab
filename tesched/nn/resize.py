"""Resampling of the trailing (spatial) axes of an ``(N, C, ...)`` tensor: ``upsample`` by nearest neighbour
(PyTorch's ``nearest`` or ``nearest-exact``) or (bi/tri)linear interpolation, with ``F.interpolate``'s
conventions (``align_corners``, and a scale factor that, when given, sets the sampling step instead of
``in / out``).

Each output coordinate ``o`` of an axis reads the input at a source position computed as PyTorch does
(in float32): nearest ``min(floor(o * scale), in - 1)``; nearest-exact ``floor((o + 0.5) * scale)``;
linear ``o * (in - 1) / (out - 1)`` with ``align_corners``, else ``max((o + 0.5) * scale - 0.5, 0)``,
between input ``floor(src)`` and the next one. A nearest index that an integer formula reproduces (every
integer scale factor, and every ``size=`` whose scale is ``in / out``) is computed in integers.
:func:`source_tables` gives the same indices and weights in NumPy, for references. The stage is
``injective``; it schedules like any injective op. This module does not resize with antialiasing, nor
bicubic.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

import tesched as ts
from tesched.nn.pattern import Pattern, compute
from tesched.te.expr import Expr
from tesched.te.tensor import Tensor

METHODS = ("nearest", "nearest_exact", "linear")


def _step(size: int, out: int, scale: float | None, align_corners: bool, method: str) -> np.float32:
    """PyTorch's sampling step (``area_pixel_compute_scale``), in float32."""
    if method == "linear" and align_corners:
        return np.float32((size - 1) / (out - 1) if out > 1 else 0.0)
    return np.float32(1.0 / scale if scale is not None and scale > 0 else size / out)


def source_tables(size: int, out: int, scale: float | None, method: str,
                  align_corners: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, weight)`` per output coordinate of one axis: the output is ``x[lo] * (1 - weight) +
    x[hi] * weight`` (nearest: ``hi == lo`` and ``weight == 0``)."""
    step, dst = _step(size, out, scale, align_corners, method), np.arange(out, dtype=np.float32)
    if method == "nearest_exact":
        lo = np.minimum(np.floor((dst + np.float32(0.5)) * step).astype(np.int64), size - 1)
        return lo, lo, np.zeros(out, np.float32)
    if method == "nearest":
        if out in (size, 2 * size):  # PyTorch's special cases, whatever the scale
            lo = np.arange(out) * size // out
            return lo, lo, np.zeros(out, np.float32)
        lo = np.minimum(np.floor(dst * step).astype(np.int64), size - 1)
        return lo, lo, np.zeros(out, np.float32)
    src = dst * step if align_corners else np.maximum((dst + np.float32(0.5)) * step - np.float32(0.5), 0)
    lo = np.minimum(src.astype(np.int64), size - 1)
    return lo, np.minimum(lo + 1, size - 1), np.clip(src - lo.astype(np.float32), 0, 1).astype(np.float32)


def _inside(index: Expr, size: int) -> Expr:
    """``index`` limited to ``[0, size)``: always true of PyTorch's sources, and visibly so to the bounds
    analysis, which then checks no read at run time."""
    return ts.minimum(ts.maximum(index, ts.const(0, "int32")), ts.const(size - 1, "int32"))


def _nearest_index(o: Expr, size: int, out: int, scale: float | None) -> Expr:
    """The nearest source of output coordinate ``o``, in integers when a ratio ``p / q`` matches."""
    want = source_tables(size, out, scale, "nearest")[0]
    step = _step(size, out, scale, False, "nearest")
    for ratio in (Fraction(size, out), Fraction(float(step)).limit_denominator(4 * out)):
        if np.array_equal(np.arange(out) * ratio.numerator // ratio.denominator, want):
            if ratio == 1:
                return o
            return o // ratio.denominator if ratio.numerator == 1 else o * ratio.numerator // ratio.denominator
    index = ts.cast("int32", ts.floor(ts.cast("float32", o) * float(step)))
    return _inside(index, size)


def _nearest_exact_index(o: Expr, size: int, out: int, scale: float | None) -> Expr:
    """The source of output coordinate ``o`` by the pixel centres (``nearest-exact``): in integers,
    ``(2o + 1) * size // (2 * out)``, when that matches PyTorch's float32 formula."""
    want = source_tables(size, out, scale, "nearest_exact")[0]
    if np.array_equal((2 * np.arange(out) + 1) * size // (2 * out), want):
        return (o * 2 + 1) * size // (2 * out)
    step = float(_step(size, out, scale, False, "nearest"))
    return _inside(ts.cast("int32", ts.floor((ts.cast("float32", o) + 0.5) * step)), size)


def _linear_source(o: Expr, size: int, out: int, scale: float | None, align_corners: bool
                   ) -> tuple[Expr, Expr, Expr]:
    """``(lo, hi, weight)`` of output coordinate ``o`` for linear interpolation."""
    step = float(_step(size, out, scale, align_corners, "linear"))
    dst = ts.cast("float32", o)
    src = dst * step if align_corners else ts.maximum((dst + 0.5) * step - 0.5, ts.const(0.0, "float32"))
    lo = _inside(ts.cast("int32", src), size)
    hi = ts.minimum(lo + 1, ts.const(size - 1, "int32"))
    weight = ts.clamp(src - ts.cast("float32", lo), 0.0, 1.0)
    return lo, hi, weight


def upsample(x: Tensor, size: Sequence[int], scales: Sequence[float | None] | None = None,
             method: str = "nearest", align_corners: bool = False) -> Tensor:
    """``x`` (``(N, C, *spatial)``) resampled to spatial ``size`` by ``method`` (``"nearest"``,
    ``"nearest_exact"`` (PyTorch's ``nearest-exact``: by pixel centres) or ``"linear"``: bilinear on two
    axes, trilinear on three).

    Parameters
    ----------
    x : Tensor
        At least 3-D; every axis after the second is resampled.
    size : sequence of int
        The output's spatial sizes.
    scales : sequence of float or None, optional
        The scale factor of each spatial axis when the caller gave one (PyTorch then samples with step
        ``1 / scale`` rather than ``in / out``); ``None`` for an axis sized by ``size`` alone.
    method : str
        ``"nearest"``, ``"nearest_exact"`` or ``"linear"``.
    align_corners : bool
        Linear only: the corner samples of input and output coincide.
    """
    spatial = x.ndim - 2
    size = tuple(int(s) for s in size)
    factors = [None] * spatial if scales is None else [None if s is None else float(s) for s in scales]
    if method not in METHODS:
        raise ValueError(f"upsample: method must be one of {', '.join(METHODS)}, got {method!r}")
    if spatial < 1 or len(size) != spatial or len(factors) != spatial or min(size, default=0) < 1:
        raise ValueError(f"upsample: data {x.shape} needs one positive output size (and scale) per axis after the "
                         f"first two, got size {size} and scales {scales}")
    if method != "linear" and align_corners:
        raise ValueError("upsample: align_corners applies to linear interpolation only")
    if method == "linear" and not x.dtype.startswith("float"):
        raise TypeError(f"upsample: linear interpolation needs floating data, got {x.dtype}")
    axes = list(zip(x.shape[2:], size, factors))

    index = _nearest_exact_index if method == "nearest_exact" else _nearest_index

    def nearest(*i: Expr) -> Expr:
        return x[i[:2] + tuple(index(o, n, m, s) for o, (n, m, s) in zip(i[2:], axes))]

    def linear(*i: Expr) -> Expr:
        sources = [_linear_source(o, n, m, s, align_corners) for o, (n, m, s) in zip(i[2:], axes)]
        total: Expr | None = None
        for corner in range(1 << spatial):
            index, weight = list(i[:2]), None
            for a, (lo, hi, w) in enumerate(sources):
                upper = corner >> a & 1
                index.append(hi if upper else lo)
                factor = w if upper else 1.0 - w
                weight = factor if weight is None else weight * factor
            term = x[tuple(index)] * weight
            total = term if total is None else total + term
        assert total is not None
        return total

    return compute(x.shape[:2] + size, linear if method == "linear" else nearest, name=f"upsample_{method}",
                   pattern=Pattern.INJECTIVE, op="upsample")


def upsample_reference(x: np.ndarray, size: Sequence[int], scales: Sequence[float | None] | None = None,
                       method: str = "nearest", align_corners: bool = False) -> np.ndarray:
    """:func:`upsample` in NumPy (float64 accumulation), from :func:`source_tables`."""
    out = x.astype(np.float64)
    factors = [None] * (x.ndim - 2) if scales is None else list(scales)
    for a, (n, m, s) in enumerate(zip(x.shape[2:], size, factors)):
        lo, hi, w = source_tables(n, int(m), s, method, align_corners)
        shape = [1] * x.ndim
        shape[2 + a] = int(m)
        weight = w.astype(np.float64).reshape(shape)
        out = np.take(out, lo, axis=2 + a) * (1 - weight) + np.take(out, hi, axis=2 + a) * weight
    return out.astype(x.dtype)
