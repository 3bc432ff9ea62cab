"""Helpers for the operator-library tests: build the default schedule of some outputs and run it, and
an independent NumPy convolution reference (explicit loops over the kernel window of the padded input).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import tesched as ts
import tesched.nn as nn

RTOL, ATOL = 1e-4, 1e-4


def run(outputs: ts.Tensor | Sequence[ts.Tensor], inputs: Sequence[ts.Tensor], arrays: Sequence[np.ndarray],
        name: str = "nn_test"):
    """Build ``default_schedule(outputs)`` and call it on ``arrays``; returns (results, kernel)."""
    outs = [outputs] if isinstance(outputs, ts.Tensor) else list(outputs)
    kernel = ts.build(nn.default_schedule(outs), list(inputs) + outs, name=name)
    return kernel(*arrays), kernel


def conv2d_reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int, dilation: int, groups: int) -> np.ndarray:
    """NCHW/OIHW convolution by loops over the kernel window of the zero-padded input (float64)."""
    n, c, h, width = x.shape
    k, cg, kh, kw = w.shape
    padded = np.zeros((n, c, h + 2 * pad, width + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + width] = x
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (width + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, k, oh, ow))
    per_group = k // groups
    for o in range(k):
        first = o // per_group * cg
        for i in range(kh):
            for j in range(kw):
                rows = padded[:, first:first + cg, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                              j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
                out[:, o] += np.tensordot(rows, w[o, :, i, j].astype(np.float64), axes=([1], [0]))
    return out
