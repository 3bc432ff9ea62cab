"""conv -> relu -> conv, declared with ``ts.compute`` and scheduled unfused or fused.

The pipeline is ``pad1 -> conv1 -> relu -> pad2 -> conv2`` (NCHW, OIHW, stride 1, padding 1). Both
schedules give each convolution the same register-tiled inner kernel (a ``cache_write`` tile of
``f_block`` output channels x ``x_block`` columns, kept in vector registers across the reduction), so
they differ only in fusion:

- ``unfused``: every stage is computed in full before the next (TVM's answer for two convolutions).
- ``fused``: conv2 is split into bands of ``rows`` output rows; per band, pad1, conv1 and pad2 compute
  exactly the rows that band needs (the polyhedral footprint: ``rows + 2`` rows of conv1, a halo of one
  row on each side recomputed by the neighbouring band), into buffers local to the band, and the bands
  run in parallel. The relu is inlined into pad2.

This module builds schedules; it does not time them (see ``benchmarks/conv_conv_fusion.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tesched as ts
from tesched.te.tensor import IterVar


@dataclass
class ConvChain:
    """The tensors of the pipeline; ``args`` is the kernel argument list."""

    x: ts.Tensor
    w1: ts.Tensor
    w2: ts.Tensor
    pad1: ts.Tensor
    conv1: ts.Tensor
    relu: ts.Tensor
    pad2: ts.Tensor
    conv2: ts.Tensor

    @property
    def args(self) -> list[ts.Tensor]:
        """The kernel arguments in call order (``x, w1, w2`` and the output ``conv2``)."""
        return [self.x, self.w1, self.w2, self.conv2]

    @property
    def flops(self) -> int:
        """Floating-point operations of both convolutions (a multiply-add counts two)."""
        n, c, h, w = self.x.shape
        f1, f2 = self.w1.shape[0], self.w2.shape[0]
        return 2 * 9 * h * w * (c * f1 + f1 * f2) * n


def pad(x: ts.Tensor, p: int, name: str) -> ts.Tensor:
    """``x`` (NCHW) with ``p`` rows and columns of zeros on every side, as a stage called ``name``."""
    n, c, h, w = x.shape
    return ts.compute((n, c, h + 2 * p, w + 2 * p), lambda b, ci, y, z: ts.if_then_else(
        ts.all(y >= p, y < h + p, z >= p, z < w + p), x[b, ci, y - p, z - p], 0.0), name=name)


def conv3x3(x: ts.Tensor, w: ts.Tensor, name: str) -> ts.Tensor:
    """Valid 3x3 convolution of an already padded input."""
    n, c, h, wd = x.shape
    rc = ts.reduce_axis((0, c), name="rc")
    ry = ts.reduce_axis((0, 3), name="ry")
    rx = ts.reduce_axis((0, 3), name="rx")
    return ts.compute((n, w.shape[0], h - 2, wd - 2), lambda b, f, y, z: ts.sum(
        x[b, rc, y + ry, z + rx] * w[f, rc, ry, rx], axis=[rc, ry, rx]), name=name)


def declare(channels: int = 64, size: int = 56, batch: int = 1, mid_channels: int | None = None) -> ConvChain:
    """The pipeline ``pad1 -> conv1 -> relu -> pad2 -> conv2`` on a ``batch x channels x size x size`` input,
    with ``channels`` filters in conv2 and ``mid_channels`` (default ``channels``) in conv1."""
    mid = channels if mid_channels is None else mid_channels
    x = ts.placeholder((batch, channels, size, size), name="x")
    w1 = ts.placeholder((mid, channels, 3, 3), name="w1")
    w2 = ts.placeholder((channels, mid, 3, 3), name="w2")
    p1 = pad(x, 1, "pad1")
    c1 = conv3x3(p1, w1, "conv1")
    r = ts.compute(c1.shape, lambda *i: ts.maximum(c1[i], 0.0), name="relu")
    p2 = pad(r, 1, "pad2")
    c2 = conv3x3(p2, w2, "conv2")
    return ConvChain(x, w1, w2, p1, c1, r, p2, c2)


def reference(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """NumPy: conv2(relu(conv1(x))) with zero padding 1, in float64."""
    def conv(a: np.ndarray, w: np.ndarray) -> np.ndarray:
        n, _, h, wd = a.shape
        ap = np.pad(a.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, w.shape[0], h, wd))
        for dy in range(3):
            for dx in range(3):
                out += np.einsum("oc,nchw->nohw", w[:, :, dy, dx], ap[:, :, dy:dy + h, dx:dx + wd])
        return out
    return conv(np.maximum(conv(x, w1), 0), w2)


def _block(extent: int, preferred: int) -> int:
    return max(d for d in range(1, min(extent, preferred) + 1) if extent % d == 0)


def register_tile(s: ts.Schedule, out: ts.Tensor, f_block: int, x_block: int, rows: int | None = None):
    """Give ``out`` a register-tiled kernel; returns its loops. With ``rows``, the output rows are first
    split into bands: loops (n, y.outer, f.outer, y.inner, x.outer, f.inner, x.inner); else
    (n, f.outer, y, x.outer, f.inner, x.inner)."""
    cache = s.cache_write(out, "local")
    n, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, _block(out.shape[1], f_block))
    xo, xi = s[out].split(x, _block(out.shape[3], x_block))
    loops: tuple[IterVar, ...]
    if rows is None:
        loops = (n, fo, y, xo, fi, xi)
    else:
        yo, yi = s[out].split(y, rows)
        loops = (n, yo, fo, yi, xo, fi, xi)
    s[out].reorder(*loops)
    s[cache].compute_at(s[out], xo)
    cn, cf, cy, cx = s[cache].op.axis
    rc, ry, rx = s[cache].op.reduce_axis
    s[cache].reorder(cn, cy, rc, ry, rx, cf, cx)
    s[cache].unroll(cf)
    s[cache].vectorize(cx)
    s[out].vectorize(xi)
    return loops


def unfused(chain: ConvChain, f_block: int = 8, x_block: int = 56) -> ts.Schedule:
    """Every stage computed in full, each convolution register-tiled (``f_block`` filters x ``x_block``
    columns) and parallel over filter blocks; the relu inlined."""
    s = ts.create_schedule(chain.conv2.op)
    s[chain.relu].compute_inline()
    for conv in (chain.conv1, chain.conv2):
        _, fo, *_ = register_tile(s, conv, f_block, x_block)
        s[conv].parallel(fo)
    for p in (chain.pad1, chain.pad2):
        s[p].parallel(s[p].op.axis[1])
        s[p].vectorize(s[p].op.axis[3])
    return s


def fused(chain: ConvChain, rows: int = 28, f_block: int = 8, x_block: int = 56) -> ts.Schedule:
    """conv2 in parallel bands of ``rows`` output rows, with pad1, conv1 and pad2 computed per band (their
    halo rows recomputed by neighbouring bands); the same register tiles as :func:`unfused`."""
    s = ts.create_schedule(chain.conv2.op)
    s[chain.relu].compute_inline()
    register_tile(s, chain.conv1, f_block, x_block)
    _, yo, *_ = register_tile(s, chain.conv2, f_block, x_block, rows=rows)
    s[chain.conv2].parallel(yo)
    for stage in (chain.pad2, chain.conv1, chain.pad1):
        s[stage].compute_at(s[chain.conv2], yo)
    for p in (chain.pad1, chain.pad2):
        s[p].vectorize(s[p].op.axis[3])
    return s
