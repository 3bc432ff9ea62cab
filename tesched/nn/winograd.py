"""Winograd's minimal filtering F(m x m, 3 x 3) for 3x3 stride-1 convolutions (Lavin and Gray), as tesched
computes with their own schedules.

The output is cut into tiles of m x m; each tile is ``A^T [(G g G^T) * (B^T d B)] A`` for its input tile
``d`` ((m + 2) x (m + 2)) and filter ``g``, summed over input channels. The filter transform ``U = G g
G^T`` is done once, with NumPy, by :func:`transform_weight` (at graph build time for constant weights),
stored ``U[xi, nu, c, k]``; the rest are stages of one kernel:

- ``winograd_split``: the padded input with each row split into its ``m`` phases,
  ``S[n, c, y, r, q] = pad(data)[n, c, y, m*q + r]``, so that later stages read whole rows;
- ``winograd_rows``: ``T1[n, c, ty, xi, r, q] = sum_a BT[xi, a] * S[n, c, m*ty + a, r, q]``;
- ``winograd_input``: ``V[n, xi, nu, c, ty, tx] = sum_b BT[nu, b] * T1[n, c, ty, xi, b % m, tx + b // m]``;
- ``winograd_gemm``: ``M[n, xi, nu, ty, tx, k] = sum_c V[n, xi, nu, c, ty, tx] * U[xi, nu, c, k]`` (one
  matrix product per point of the transformed tile: the bulk of the work, vectorized along output
  channels ``k``);
- ``winograd_cols``: ``T2[n, ty, i, nu, tx, k] = sum_xi AT[i, xi] * M[n, xi, nu, ty, tx, k]``;
- ``winograd_last``: ``Z[n, ty, i, tx, j, k] = sum_nu AT[j, nu] * T2[n, ty, i, nu, tx, k]``;
- ``winograd_conv2d``: ``Y[n, k, ty, i, tx, j] = Z[n, ty, i, tx, j, k]``.

The transforms' sums are written out with their constant coefficients, nonzero terms only (``BT`` and
``AT`` are mostly zeros and ones), as a choice among the rows of the matrix that the schedule resolves by
unrolling the loop over the row. ``Y`` has shape ``(N, K, H/m, m, W/m, m)``: in row-major order that is
exactly the NCHW output, so a reshape to ``(N, K, H, W)`` is free (the graph treats it as a view).
F(4x4, 3x3) does 4x fewer multiplications than direct convolution in the products, F(2x2, 3x3) 2.25x
fewer; both round differently from direct convolution, by a few float32 ulps times the transforms'
magnitudes (:func:`max_error` measures it).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

import tesched as ts
from tesched.nn.pattern import Pattern, compute, op_of
from tesched.nn.schedule import largest_divisor, register_schedule, schedule_injective, schedule_reduction
from tesched.nn.shape import padding4
from tesched.schedule.schedule import Schedule
from tesched.target import current_target
from tesched.te.expr import Expr
from tesched.te.tensor import IterVar, Tensor
from tesched.tiling import RegisterFile, accumulator_tile, divisors

TILES = (4, 2)
"""Output tile sizes supported, preferred first."""

CHOSEN_TILES = (4,)
"""Tile sizes :func:`choose_tile` picks: F(2x2, 3x3) saves 2.25x of the multiplications, and its transforms
cost more than that saves (a 256-channel 14x14 layer: 3.0 ms of processor time against 2.2 ms direct)."""

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
    """``U[xi, nu, c, k] = (G w[k, c] G^T)[xi, nu]`` in the weight's dtype, computed in float64 (output
    channels innermost: the products load vectors of them).

    Parameters
    ----------
    weight
        OIHW 3x3 weights ``(K, C, 3, 3)``.
    m
        The output tile size.

    Returns
    -------
    numpy.ndarray
        ``(m+2, m+2, C, K)``, C-contiguous.
    """
    if weight.ndim != 4 or weight.shape[2:] != (3, 3):
        raise ValueError(f"winograd: weights must be (K, C, 3, 3), got {weight.shape}")
    _, g, _ = matrices(m)
    u = np.einsum("xa,kcab,yb->xyck", g, weight.astype(np.float64), g)
    return np.ascontiguousarray(u.astype(weight.dtype))


MIN_LANE_USE = 0.5
"""The products are vectorized along blocks of output channels; below this fraction of SIMD lanes doing
useful work (24 channels take vectors of 16 and 8 lanes) direct convolution is faster."""


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
    better: both channel counts at least :data:`MIN_CHANNELS`, blocks of output channels that keep at least
    :data:`MIN_LANE_USE` of the SIMD lanes of the products busy, and the largest tile of
    :data:`CHOSEN_TILES` that divides both output sides (so tiles cover the output exactly) into rows of
    at least :data:`MIN_TILE_COLUMNS` tiles."""
    if min(channels, out_channels) < MIN_CHANNELS:
        return None
    lanes = current_target().lanes("float32")
    if lane_use(largest_divisor(out_channels, CHANNEL_BLOCK), lanes) < MIN_LANE_USE:
        return None
    for m in CHOSEN_TILES:
        if out_height % m == 0 and out_width % m == 0 and out_width // m >= MIN_TILE_COLUMNS:
            return m
    return None


def _combination(coefficients: np.ndarray, term) -> Expr:
    """``sum_a coefficients[a] * term(a)`` over the nonzero coefficients, with constant coefficients (a
    coefficient of 1 or -1 adds or subtracts)."""
    total = None
    for index, value in enumerate(coefficients):
        if value == 0:
            continue
        read = term(index)
        part = read if abs(value) == 1 else read * float(abs(value))
        total = (part if value > 0 else -part) if total is None else (total + part if value > 0 else total - part)
    assert total is not None, "a transform matrix row is all zeros"
    return total


def _by_row(index, matrix: np.ndarray, term) -> Expr:
    """The row ``index`` (a loop variable) of ``matrix`` applied by :func:`_combination`: a choice among
    the rows, which folds to one row's terms once the loop over ``index`` is unrolled."""
    expr = _combination(matrix[-1], term)
    for row in range(len(matrix) - 2, -1, -1):
        expr = ts.if_then_else(index == row, _combination(matrix[row], term), expr)
    return expr


def winograd_conv2d(data: Tensor, transformed: Tensor, padding: int | tuple = 1) -> Tensor:
    """The 3x3 stride-1 convolution of NCHW ``data`` by weights already transformed (:func:`transform_weight`,
    ``(m+2, m+2, C, K)``: the tile size ``m`` is read from them), as a ``(N, K, H/m, m, W/m, m)`` tensor
    (the NCHW output, tile by tile; see the module doc)."""
    if data.ndim != 4 or transformed.ndim != 4:
        raise ValueError("winograd_conv2d: data must be NCHW and the weights (m+2, m+2, C, K)")
    alpha = int(transformed.shape[0])
    m = alpha - 2
    at, _, bt = matrices(m)
    n, c, height, width = (int(d) for d in data.shape)
    k = int(transformed.shape[3])
    if transformed.shape != (alpha, alpha, c, k):
        raise ValueError(f"winograd_conv2d: weights {transformed.shape} do not match data {data.shape} "
                         f"(expected ({alpha}, {alpha}, {c}, K))")
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
    rows = compute((n, c, th, alpha, m, tw + 1),
                   lambda b, ci, ty, xi, r, q: _by_row(xi, bt, lambda a: split[b, ci, ty * m + a, r, q]),
                   name="winograd_rows", pattern=Pattern.INJECTIVE, op="winograd_rows")
    tiles = compute((n, alpha, alpha, c, th, tw),
                    lambda b, xi, nu, ci, ty, tx: _by_row(nu, bt, lambda col: rows[b, ci, ty, xi, col % m,
                                                                                     tx + col // m]),
                    name="winograd_input", pattern=Pattern.INJECTIVE, op="winograd_input")
    rc = ts.reduce_axis((0, c), "c")
    product = compute((n, alpha, alpha, th, tw, k),
                      lambda b, xi, nu, ty, tx, ko: ts.sum(tiles[b, xi, nu, rc, ty, tx] * transformed[xi, nu, rc, ko],
                                                           axis=rc),
                      name="winograd_gemm", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_gemm")
    cols = compute((n, th, m, alpha, tw, k),
                   lambda b, ty, i, nu, tx, ko: _by_row(i, at, lambda xi: product[b, xi, nu, ty, tx, ko]),
                   name="winograd_cols", pattern=Pattern.INJECTIVE, op="winograd_cols")
    last = compute((n, th, m, tw, m, k),
                   lambda b, ty, i, tx, j, ko: _by_row(j, at, lambda nu: cols[b, ty, i, nu, tx, ko]),
                   name="winograd_last", pattern=Pattern.INJECTIVE, op="winograd_last")
    return compute((n, k, th, m, tw, m), lambda b, ko, ty, i, tx, j: last[b, ty, i, tx, j, ko],
                   name="winograd_conv2d", pattern=Pattern.OUT_ELEMWISE_FUSABLE, op="winograd_conv2d")


def reference(data: np.ndarray, transformed: np.ndarray, m: int, padding: tuple[int, int, int, int],
              dtype: type = np.float64) -> np.ndarray:
    """What :func:`winograd_conv2d` computes, with NumPy in ``dtype``: the ``(N, K, H/m, m, W/m, m)``
    tiles of the convolution, by the same transforms."""
    a_t, _, b_t = matrices(m)
    at: np.ndarray = a_t.astype(dtype)
    bt: np.ndarray = b_t.astype(dtype)
    top, left, bottom, right = padding
    x: np.ndarray = np.pad(data.astype(dtype), ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, hp, wp = x.shape
    th, tw = (hp - 2) // m, (wp - 2) // m
    alpha = m + 2
    windows = np.lib.stride_tricks.sliding_window_view(x, (alpha, alpha), axis=(2, 3))[:, :, ::m, ::m][:, :, :th, :tw]
    v = np.einsum("xa,nctsab,yb->nxycts", bt, windows, bt)
    product = np.einsum("xyck,nxycts->nxykts", transformed.astype(dtype), v)
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
"""Tiles a band of tile rows holds at most (the band's transformed tiles stay in the L2 cache)."""
MIN_BANDS = 8
"""Bands a layer is cut into at least, when its tile rows allow: enough to keep threads evenly busy."""
CHANNEL_BLOCK = 64
"""Output channels of a register tile of the products, at most (four AVX-512 vectors of float32)."""
TILE_GROUP = 7
"""Tiles of a register tile of the products, at most (7 x 2 vector accumulators with AVX-512; the target's
register file decides, see :func:`product_tile`)."""
MIN_TILE_COLUMNS = 7
"""Tiles a row of tiles holds at least: the transforms before the products are vectorized along it."""


def band_rows(tile_rows: int, tile_columns: int) -> int:
    """Tile rows per band: the largest divisor of ``tile_rows`` whose band holds at most
    :data:`BAND_COLUMNS` tiles and that leaves at least :data:`MIN_BANDS` bands (one row when none does)."""
    fits = [d for d in range(1, tile_rows + 1) if tile_rows % d == 0 and d * tile_columns <= BAND_COLUMNS
            and tile_rows // d >= MIN_BANDS]
    return max(fits) if fits else 1


EPILOGUE_CHANNELS = 16
"""Output channels whose values the epilogue moves back into NCHW order in one unrolled step."""


def product_tile(tile_columns: int, out_channels: int, rf: RegisterFile) -> tuple[int, int]:
    """``(tiles, channels)`` of the products' register tile: tiles dividing a row of ``tile_columns`` tiles
    (at most :data:`TILE_GROUP`) x output channels dividing ``out_channels`` (at most :data:`CHANNEL_BLOCK`),
    chosen by :func:`~tesched.tiling.accumulator_tile` for ``rf``: 7 x 32 with AVX-512, 7 x 8 with AVX2 (7 x 64
    would need 33 AVX-512 registers)."""
    return accumulator_tile(divisors(tile_columns, TILE_GROUP), divisors(out_channels, CHANNEL_BLOCK), rf)


def _pipeline(host: Tensor) -> dict[str, Tensor]:
    """The tensors ``host`` reads, directly or not, by op name."""
    found: dict[str, Tensor] = {}
    seen: set[int] = set()
    frontier = [host]
    while frontier:
        for t in frontier.pop().op.input_tensors:
            if id(t.op) not in seen:
                seen.add(id(t.op))
                found.setdefault(op_of(t) or "", t)
                frontier.append(t)
    return found


def _place(s: Schedule, t: Tensor, host_stage, loop: IterVar, order: tuple[int, ...], unrolled: int) -> None:
    """``t`` computed inside ``loop`` of ``host_stage``, its loops in ``order`` (axis numbers), the axis
    ``unrolled`` unrolled (it selects a row of a transform matrix) and the last one vectorized."""
    stage = s[t]
    stage.compute_at(host_stage, loop)
    axes = list(stage.op.axis)
    stage.reorder(*(axes[a] for a in order))
    stage.unroll(axes[unrolled])
    stage.vectorize(axes[order[-1]])


@register_schedule("winograd_gemm")
def schedule_winograd(s: Schedule, product: Tensor, host: Tensor) -> None:
    """Bands of tile rows in parallel. Per band: the padded input rows it reads, split into phases, their
    row transform and the tile transform (vectorized along a row of tiles); then per block of output
    channels the products (register tiles of tiles x the block, :func:`product_tile`, vectorized along
    output channels, input channels outside), the column and the last transforms (vectorized along output
    channels), and the epilogue (``host``), which reads the block back into NCHW
    order (unrolled over :data:`EPILOGUE_CHANNELS` channels and a tile's columns). The transforms'
    constant coefficients are chosen by unrolled loops, so only their nonzero terms are computed."""
    found = _pipeline(host)
    if found.get("winograd_gemm") is None or found["winograd_gemm"].op is not product.op:
        schedule_reduction(s, product, host)
        return
    n, th, m, tw, _, k = (int(d) for d in found["winograd_last"].shape)
    if tuple(int(d) for d in host.shape) != (n, k, th, m, tw, m):
        out = found["winograd_conv2d"]   # read in another shape: stored whole, its own host
        s[out].compute_root()
        _schedule_bands(s, out, found)
        schedule_injective(s, host)
        return
    _schedule_bands(s, host, found)


def _schedule_bands(s: Schedule, host: Tensor, found: dict[str, Tensor]) -> None:
    """The schedule of :func:`schedule_winograd` for a ``host`` of the output's shape."""
    _, th, m, tw, _, k = (int(d) for d in found["winograd_last"].shape)
    product = found["winograd_gemm"]
    hstage = s[host]
    b, ko, ty, i, tx, j = hstage.op.axis
    tyo, tyi = hstage.split(ty, band_rows(th, tw))
    group, block = product_tile(int(product.shape[4]), k, RegisterFile.of(dtype=product.dtype))
    koo, koi = hstage.split(ko, block)
    kc, kv = hstage.split(koi, largest_divisor(block, EPILOGUE_CHANNELS))
    hstage.reorder(b, tyo, koo, tyi, i, tx, kc, kv, j)
    band = hstage.fuse(b, tyo)
    hstage.parallel(band)
    hstage.unroll(kv)
    hstage.unroll(j)
    _place(s, found["winograd_last"], hstage, koo, (0, 1, 2, 3, 4, 5), unrolled=4)             # (n, ty, i, tx, j, k)
    _place(s, found["winograd_cols"], hstage, koo, (0, 1, 3, 4, 2, 5), unrolled=2)   # (n, ty, i, nu, tx, k)
    _schedule_products(s, product, hstage, koo, group)
    _place(s, found["winograd_input"], hstage, band, (0, 3, 4, 1, 2, 5), unrolled=2)  # (n, xi, nu, c, ty, tx)
    _place(s, found["winograd_rows"], hstage, band, (0, 1, 2, 4, 3, 5), unrolled=3)   # (n, c, ty, xi, r, q)
    sstage = s[found["winograd_split"]]
    sstage.compute_at(hstage, band)
    sstage.vectorize(sstage.op.axis[-1])


def _schedule_products(s: Schedule, product: Tensor, hstage, loop: IterVar, group: int) -> None:
    """The products of a block of output channels, for every point of the transformed tile: register
    tiles of ``group`` tiles x the block's channels (vectorized), accumulated over the input channels."""
    local = s.cache_write(product, "local")
    pstage = s[product]
    pstage.compute_at(hstage, loop)
    pb, pxi, pnu, pty, ptx, pko = pstage.op.axis
    txo, txi = pstage.split(ptx, group)
    pstage.reorder(pb, pxi, pnu, pty, txo, txi, pko)
    pstage.unroll(txi)
    pstage.vectorize(pko)
    lstage = s[local]
    lstage.compute_at(pstage, txo)
    lb, lxi, lnu, lty, ltx, lko = lstage.op.axis
    (rc,) = lstage.op.reduce_axis
    lstage.reorder(lb, lxi, lnu, lty, rc, ltx, lko)
    lstage.unroll(ltx)
    lstage.vectorize(lko)
