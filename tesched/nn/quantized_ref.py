"""NumPy references of the ops of :mod:`.quantized`, computed the way the kernels are specified (int64 sums
of products, float32 requantization rounding to nearest even), so tests compare exactly."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def quantize(x: np.ndarray, scale: float, zero_point: int, dtype: str = "uint8") -> np.ndarray:
    """``saturate(rint(x * (1 / scale)) + zero_point)``, in float32 as the kernel computes it."""
    info = np.iinfo(dtype)
    inverse = np.float32(1.0) / np.float32(scale)
    value = np.rint(x.astype(np.float32) * inverse) + np.float32(zero_point)
    return np.clip(value, info.min, info.max).astype(dtype)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """``(float32(q) - zero_point) * scale``."""
    return (q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def requantize(acc: np.ndarray, multiplier: np.ndarray, zero_point: int, dtype: str = "uint8",
               offset: np.ndarray | None = None, relu: bool = False) -> np.ndarray:
    """``saturate(rint(float32(acc + offset) * multiplier) + zero_point)`` over the last axis' channels."""
    info = np.iinfo(dtype)
    total = acc.astype(np.int32) + (0 if offset is None else offset.astype(np.int32))
    value = np.rint(total.astype(np.float32) * multiplier.astype(np.float32)) + np.float32(zero_point)
    if relu:
        value = np.maximum(value, np.float32(zero_point))
    return np.clip(value, info.min, info.max).astype(dtype)


def dense(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``data @ weight.T`` accumulated exactly (int32 for integers, float64 rounded to float32 for floats)."""
    wide = np.int64 if data.dtype.kind in "iu" else np.float64
    out = data.astype(wide) @ weight.astype(wide).T
    return out.astype(np.int32 if wide is np.int64 else np.float32)


def conv2d_nhwc(data: np.ndarray, weight: np.ndarray, strides: Sequence[int] = (1, 1),
                padding: Sequence[int] = (0, 0), pad_value: int = 0) -> np.ndarray:
    """NHWC ``data`` convolved with OIHW ``weight``, accumulated exactly in int64, as int32."""
    (sh, sw), (ph, pw) = strides, padding
    x = np.pad(data.astype(np.int64), [(0, 0), (ph, ph), (pw, pw), (0, 0)], constant_values=pad_value)
    o, c, kh, kw = weight.shape
    n, height, width, _ = x.shape
    out_h, out_w = (height - kh) // sh + 1, (width - kw) // sw + 1
    out = np.zeros((n, out_h, out_w, o), np.int64)
    for r in range(kh):
        for s in range(kw):
            window = x[:, r:r + sh * (out_h - 1) + 1:sh, s:s + sw * (out_w - 1) + 1:sw, :]
            out += window @ weight[:, :, r, s].astype(np.int64).T
    return out.astype(np.int32)
