"""Winograd's minimal filtering F(m x m, 3 x 3) for 3x3 stride-1 convolutions (Lavin and Gray), as tesched
computes with their own schedules.

The output is cut into tiles of m x m; each tile is ``A^T [(G g G^T) * (B^T d B)] A`` for its input tile
``d`` ((m + 2) x (m + 2)) and filter ``g``, summed over input channels. The filter transform ``U = G g
G^T`` is done once, with NumPy, by :func:`transform_weight` (at graph build time for constant weights);
the rest are stages of one kernel:

- ``winograd_split``: the padded input with each row split into its ``m`` phases,
  ``S[n, c, y, r, q] = pad(data)[n, c, y, m*q + r]``, so that later stages read whole rows;
- ``winograd_rows``: ``T1[n, c, ty, xi, r, q] = sum_a BT[xi, a] * S[n, c, m*ty + a, r, q]``;
- ``winograd_input``: ``V[n, xi, nu, c, ty, tx] = sum_b BT[nu, b] * T1[n, c, ty, xi, b % m, tx + b // m]``
  (written as two sums over the phases, so no index divides);
- ``winograd_gemm``: ``M[n, xi, nu, k, ty, tx] = sum_c U[xi, nu, k, c] * V[n, xi, nu, c, ty, tx]`` (one
  matrix product per point of the transformed tile: the bulk of the work);
- ``winograd_cols``: ``T2[n, k, ty, i, nu, tx] = sum_xi AT[i, xi] * M[n, xi, nu, k, ty, tx]``;
- ``winograd_conv2d``: ``Y[n, k, ty, i, tx, j] = sum_nu AT[j, nu] * T2[n, k, ty, i, nu, tx]``.

``Y`` has shape ``(N, K, H/m, m, W/m, m)``: in row-major order that is exactly the NCHW output, so a
reshape to ``(N, K, H, W)`` is free (the graph treats it as a view), and no index needs a division. The
transform matrices are kernel inputs (:func:`transform_inputs`). F(4x4, 3x3) does 4x fewer
multiplications than direct convolution in the products, F(2x2, 3x3) 2.25x fewer; both round
differently from direct convolution, by a few float32 ulps times the transforms' magnitudes
(:func:`max_error` measures it).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

import tesched as ts
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import largest_divisor, register_schedule, schedule_reduction
from tesched.nn.shape import padding4
from tesched.schedule.schedule import Schedule
from tesched.target import current_target
from tesched.te.tensor import IterVar, Tensor

TILES = (4, 2)
"""Output tile sizes supported, preferred first."""

MIN_CHANNELS = 16
"""Below this many input or output channels the transforms cost more than the products save."""


@lru_cache(maxsize=None)
def matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(AT, G, BT)`` of F(m x m, 3 x 3) in float64 (Lavin and Gray's points 0, +-1, +-2, infinity).

    Parameters
    ----------
    m
        The output tile size, 2 or 4.

    Returns
    -------
    tuple of numpy.ndarray
        ``AT`` (m x (m+2)), ``G`` ((m+2) x 3) and ``BT`` ((m+2) x (m+2)).
    """
    if m == 2:
        at = [[1, 1, 1, 0], [0, 1, -1, -1]]
        g = [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]]
        bt = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    elif m == 4:
        at = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]
        g = [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
             [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]
        bt = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
              [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
    else:
        raise ValueError(f"winograd: tile size {m} is not supported; use one of {TILES}")
    return np.array(at, np.float64), np.array(g, np.float64), np.array(bt, np.float64)


def transform_weight(weight: np.ndarray, m: int) -> np.ndarray:
    """``U[xi, nu, k, c] = (G w[k, c] G^T)[xi, nu]`` in the weight's dtype, computed in float64.

    Parameters
    ----------
    weight
        OIHW 3x3 weights ``(K, C, 3, 3)``.
    m
        The output tile size.

    Returns
    -------
    numpy.ndarray
        ``(m+2, m+2, K, C)``, C-contiguous.
    """
    if weight.ndim != 4 or weight.shape[2:] != (3, 3):
        raise ValueError(f"winograd: weights must be (K, C, 3, 3), got {weight.shape}")
    _, g, _ = matrices(m)
    u = np.einsum("xa,kcab,yb->xykc", g, weight.astype(np.float64), g)
    return np.ascontiguousarray(u.astype(weight.dtype))


def transform_inputs(m: int, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    """The transform matrices the kernel takes as inputs, in ``dtype``: ``BT`` with ``m - 2`` zero columns
    appended (``(m+2) x 2m``, so the input transform reads two whole phases of a row) and ``A``
    (``(m+2) x m``, the output transform's rows contiguous along the tile)."""
    at, _, bt = matrices(m)
    wide = np.zeros((m + 2, 2 * m))
    wide[:, :m + 2] = bt
    return wide.astype(dtype), np.ascontiguousarray(at.T).astype(dtype)


MIN_LANE_USE = 0.5
"""The products' register tiles span the tiles of a band; below this fraction of SIMD lanes doing useful
work (a band of 14 tiles takes vectors of 8, 4 and 2 lanes) direct convolution is faster."""


def lane_use(columns: int, lanes: int) -> float:
    """The fraction of SIMD lanes a row of ``columns`` keeps busy, cut into full vectors of ``lanes`` and
    then halves, quarters... for the rest (as the vectorizer does)."""
    instructions, rest, width = columns // lanes, columns % lanes, lanes // 2
    while rest:
        if rest >= width:
            instructions, rest = instructions + 1, rest - width
        width //= 2
    return columns / (lanes * max(instructions, 1))


def choose_tile(channels: int, out_channels: int, out_height: int, out_width: int) -> int | None:
    """The tile size for a 3x3 stride-1 convolution of this shape, or ``None`` when direct convolution is
    better: both channel counts at least :data:`MIN_CHANNELS`, and the largest tile of :data:`TILES` that
    divides both output sides (so tiles cover the output exactly) and whose bands keep at least
    :data:`MIN_LANE_USE` of the SIMD lanes of the products busy."""
    if min(channels, out_channels) < MIN_CHANNELS:
        return None
    lanes = current_target().vector_bytes // 4
    for m in TILES:
        if out_height % m or out_width % m:
            continue
        rows, columns = out_height // m, out_width // m
        if lane_use(band_rows(rows, columns) * columns, lanes) >= MIN_LANE_USE:
            return m
    return None


def winograd_conv2d(data: Tensor, transformed: Tensor, bt: Tensor, a: Tensor, padding: int | tuple = 1) -> Tensor:
    """The 3x3 stride-1 convolution of NCHW ``data`` by weights already transformed (:func:`transform_weight`),
    as a ``(N, K, H/m, m, W/m, m)`` tensor (the NCHW output, tile by tile; see the module doc). ``bt`` and
    ``a`` are :func:`transform_inputs`."""
    if data.ndim != 4 or transformed.ndim != 4 or bt.ndim != 2 or a.ndim != 2:
        raise ValueError("winograd_conv2d: data must be NCHW, the weights (a, a, K, C), BT (a, 2m) and A (a, m)")
    alpha, m = int(a.shape[0]), int(a.shape[1])
    n, c, height, width = (int(d) for d in data.shape)
    k = int(transformed.shape[2])
    if transformed.shape != (alpha, alpha, k, c) or alpha != m + 2 or tuple(bt.shape) != (alpha, 2 * m):
        raise ValueError(f"winograd_conv2d: weights {transformed.shape}, BT {bt.shape} and A {a.shape} do not "
                         f"match data {data.shape} and tile size {m}")
    top, left, bottom, right = padding4(padding)
    out_h, out_w = height + top + bottom - 2, width + left + right - 2
    if out_h % m or out_w % m or out_h < 1 or out_w < 1:
        raise ValueError(f"winograd_conv2d: the output {out_h}x{out_w} is not a whole number of {m}x{m} tiles")
    th, tw = out_h // m, out_w // m

    def phase(b, ci, y, r, q):
        row, col = y - top, q * m + r - left
        inside = ts.all(row >= 0, row < height, col >= 0, col < width)
        return ts.if_then_else(inside, data[b, ci, row, col], ts.const(0.0, data.dtype))

    split = compute((n, c, out_h + 2, m, tw + 1), phase, name="winograd_split", pattern=Pattern.INJECTIVE,
                    op="winograd_split")
    ra = ts.reduce_axis((0, alpha), "a")
    rows = compute((n, c, th, alpha, m, tw + 1),
                   lambda b, ci, ty, xi, r, q: ts.sum(bt[xi, ra] * split[b, ci, ty * m + ra, r, q], axis=ra),
                   name="winograd_rows", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_rows")
    rr = ts.reduce_axis((0, m), "r")
    tiles = compute((n, alpha, alpha, c, th, tw),
                    lambda b, xi, nu, ci, ty, tx: ts.sum(bt[nu, rr] * rows[b, ci, ty, xi, rr, tx]
                                                         + bt[nu, rr + m] * rows[b, ci, ty, xi, rr, tx + 1], axis=rr),
                    name="winograd_input", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_input")
    rc = ts.reduce_axis((0, c), "c")
    product = compute((n, alpha, alpha, k, th, tw),
                      lambda b, xi, nu, ko, ty, tx: ts.sum(transformed[xi, nu, ko, rc] * tiles[b, xi, nu, rc, ty, tx],
                                                           axis=rc),
                      name="winograd_gemm", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_gemm")
    rx = ts.reduce_axis((0, alpha), "xi")
    cols = compute((n, k, th, m, alpha, tw),
                   lambda b, ko, ty, i, nu, tx: ts.sum(a[rx, i] * product[b, rx, nu, ko, ty, tx], axis=rx),
                   name="winograd_cols", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_cols")
    rn = ts.reduce_axis((0, alpha), "nu")
    return compute((n, k, th, m, tw, m),
                   lambda b, ko, ty, i, tx, j: ts.sum(a[rn, j] * cols[b, ko, ty, i, rn, tx], axis=rn),
                   name="winograd_conv2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_conv2d")


def reference(data: np.ndarray, transformed: np.ndarray, m: int, padding: tuple[int, int, int, int],
              dtype: type = np.float64) -> np.ndarray:
    """What :func:`winograd_conv2d` computes, with NumPy in ``dtype``: the ``(N, K, H/m, m, W/m, m)``
    tiles of the convolution, by the same transforms."""
    at, _, bt = (x.astype(dtype) for x in matrices(m))
    top, left, bottom, right = padding
    x = np.pad(data.astype(dtype), ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, hp, wp = x.shape
    th, tw = (hp - 2) // m, (wp - 2) // m
    alpha = m + 2
    windows = np.lib.stride_tricks.sliding_window_view(x, (alpha, alpha), axis=(2, 3))[:, :, ::m, ::m][:, :, :th, :tw]
    v = np.einsum("xa,nctsab,yb->nxycts", bt, windows, bt)
    product = np.einsum("xykc,nxycts->nxykts", transformed.astype(dtype), v)
    return np.einsum("ix,nxykts,jy->nktisj", at, product, at)


def max_error(weight: np.ndarray, data: np.ndarray, m: int, padding: int = 1) -> float:
    """The largest absolute difference between F(m x m, 3 x 3) in float32 (NumPy, same transforms) and
    direct convolution in float64, relative to the output's largest magnitude."""
    pads = padding4(padding)
    tiles = reference(data, transform_weight(weight.astype(np.float32), m), m, pads, np.float32)
    n, k, th, _, tw, _ = tiles.shape
    y = tiles.reshape(n, k, th * m, tw * m)
    top, left, bottom, right = pads
    xd = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    direct = np.einsum("nchwab,kcab->nkhw", np.lib.stride_tricks.sliding_window_view(xd, (3, 3), axis=(2, 3)),
                       weight.astype(np.float64))
    return float(np.abs(y - direct).max() / max(np.abs(direct).max(), 1e-30))


# schedule ----------------------------------------------------------------------------------------------

BAND_COLUMNS = 32
"""Tiles a band of tile rows holds at most: the columns of the products' register tiles."""
GEMM_ROWS = 8
"""Output channels of a register tile of the products."""


def band_rows(tile_rows: int, tile_columns: int) -> int:
    """Tile rows per band: the divisor of ``tile_rows`` whose band holds the most tiles, at most
    :data:`BAND_COLUMNS` (one row when even that is too many)."""
    fits = [d for d in range(1, tile_rows + 1) if tile_rows % d == 0 and d * tile_columns <= BAND_COLUMNS]
    return max(fits) if fits else 1


def _producer(t: Tensor, op: str) -> Tensor:
    return next(i for i in t.op.input_tensors if op_of(i) == op)


def _row_stage(s: Schedule, t: Tensor, host_stage, loop: IterVar, row_axes: int = 1) -> None:
    """``t`` stored inside ``loop`` of ``host_stage``; each of its rows (its last ``row_axes`` axes, fused
    and vectorized) accumulated in registers (a write cache) over the reductions, then stored once."""
    local = s.cache_write(t, "local")
    stage = s[t]
    stage.compute_at(host_stage, loop)
    axes = list(stage.op.axis)
    stage.vectorize(stage.fuse(*axes[-row_axes:]) if row_axes > 1 else axes[-1])
    lstage = s[local]
    lstage.compute_at(stage, axes[-row_axes - 1])
    laxes = list(lstage.op.axis)
    lstage.reorder(*laxes[:-row_axes], *lstage.op.reduce_axis, *laxes[-row_axes:])
    for r in lstage.op.reduce_axis:
        lstage.unroll(r)
    lstage.vectorize(lstage.fuse(*laxes[-row_axes:]) if row_axes > 1 else laxes[-1])


@register_schedule("winograd_conv2d", producers=("winograd_rows", "winograd_input", "winograd_gemm", "winograd_cols"))
def schedule_winograd(s: Schedule, out: Tensor, host: Tensor) -> None:
    """Bands of tile rows in parallel. Per band: the padded input rows it reads, split into phases,
    their row transform, the tile transform, and the products (register tiles of :data:`GEMM_ROWS`
    output channels x the band's tiles, input channels outside); then per output channel the column
    transform of its products, and per output row the last transform into the row's tiles (vectorized
    along a tile), finished by the epilogue (``host``), vectorized along the row, contiguous in NCHW."""
    if host.shape != out.shape:
        schedule_reduction(s, out, host)
        return
    cols = _producer(out, "winograd_cols")
    product = _producer(cols, "winograd_gemm")
    tiles = _producer(product, "winograd_input")
    rows = _producer(tiles, "winograd_rows")
    split = _producer(rows, "winograd_split")
    hstage = s[host]
    b, ko, ty, i, tx, j = hstage.op.axis
    tyo, tyi = hstage.split(ty, band_rows(int(host.shape[2]), int(host.shape[4])))
    hstage.reorder(b, tyo, ko, tyi, i, tx, j)
    band = hstage.fuse(b, tyo)
    hstage.parallel(band)
    hstage.vectorize(hstage.fuse(tx, j))
    ostage = s[out]
    ostage.compute_at(hstage, i)
    ob, oko, oty, oi, otx, oj = ostage.op.axis
    (rn,) = ostage.op.reduce_axis
    ostage.reorder(ob, oko, oty, oi, otx, rn, oj)
    ostage.unroll(rn)
    ostage.vectorize(oj)
    _row_stage(s, cols, hstage, ko)
    _schedule_products(s, product, hstage, band)
    _row_stage(s, tiles, hstage, band)
    _row_stage(s, rows, hstage, band, row_axes=2)
    sstage = s[split]
    sstage.compute_at(hstage, band)
    sstage.vectorize(sstage.op.axis[-1])


def _schedule_products(s: Schedule, product: Tensor, hstage, band: IterVar) -> None:
    """The band's products, one per point of the transformed tile: register tiles of GEMM_ROWS output
    channels x the band's tiles (tile rows and columns fused), accumulated over the input channels."""
    local = s.cache_write(product, "local")
    pstage = s[product]
    pstage.compute_at(hstage, band)
    pb, pxi, pnu, pko, pty, ptx = pstage.op.axis
    kt, kin = pstage.split(pko, largest_divisor(int(product.shape[3]), GEMM_ROWS))
    pstage.reorder(pb, pxi, pnu, kt, kin, pty, ptx)
    pstage.vectorize(pstage.fuse(pty, ptx))
    lstage = s[local]
    lstage.compute_at(pstage, kt)
    lb, lxi, lnu, lko, lty, ltx = lstage.op.axis
    (rc,) = lstage.op.reduce_axis
    co, ci = lstage.split(rc, largest_divisor(int(rc.dom.extent), 4))
    lstage.reorder(lb, lxi, lnu, co, ci, lko, lty, ltx)
    lstage.unroll(ci)
    lstage.unroll(lko)
    lstage.vectorize(lstage.fuse(lty, ltx))
