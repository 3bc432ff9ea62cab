"""The cost model of the automatic scheduler: estimated seconds for a stage under a placement and tiling.

Every figure it uses comes from the declarations or from polyhedral counts
(:mod:`tesched.poly.analysis`); nothing is measured. The model, per stage ``S``:

- **work** ``W(S)``: points x reduction extent x scalar operations per point (loads, arithmetic, a call
  counted as :data:`~tesched.autoschedule.pipeline.CALL_COST`). Computing runs at
  ``W / (OPS_PER_SECOND x lanes x threads)``: ``lanes`` when the innermost loop is vectorized,
  ``threads`` when an outer loop with at least ``threads`` iterations is parallel.
- **inlining** ``S`` multiplies its work by the *inline factor*: reads of ``S`` per instance of its
  (materialized) readers, summed over their instances, divided by the points of ``S``. A stencil read
  at 9 offsets has factor 9; an elementwise read, 1. Inlining wins when
  ``factor x ops(S) <= ops(S) + STORE_OPS + factor`` (computing once costs a store, and each read a load),
  and never when ``S`` guards a load with a select (padding: the vectorizer cannot keep such a select).
- **compute at a tile** of a host: ``S`` computes the box of what the tile needs; over all tiles that is
  ``redundancy x points`` (box hulls per tile by interval arithmetic, :mod:`tesched.poly.intervals`: halos
  of overlapping tiles are recomputed). A stage whose box would follow more than :data:`MAX_RESAMPLINGS`
  resampling reads (``2*x``, ``x // 2``: pyramid levels) from the host is stored whole instead. Its buffer is the
  box of one tile; every point computed is written to it and read back (``2 x itemsize`` bytes) at the
  bandwidth of the cache the buffers of one tile fit in (L1, L2, else memory), and each iteration of the
  loop it is computed in costs :data:`ITERATION_OPS` (loop and region set-up).
- **rows**: each contiguous innermost run of a host (a row of its tile) costs :data:`ROW_OPS` for the host
  and for each stage computed in it (loop start, a new prefetch stream), so of two tilings of equal
  traffic the one with longer rows wins.
- **sliding window** (computed at an inner loop, stored at an outer one: ``store_at``): the iterations in
  between share the buffer and compute only what earlier ones did not, so ``S`` computes the points of
  the *storage* loop's box (``redundancy`` of that loop), in a buffer of the compute loop's box, rounded up
  to a power of two along the one dimension it slides in (the fold), or the storage loop's box when the
  boxes differ in more than one dimension. The loops in between run in order, so the storage loop is the
  parallel loop or inside it.
- **compute at the root**: the tensor is written once and read back: ``2 x bytes`` at L2 bandwidth when
  it fits in L2, else at memory bandwidth.
- **register tiles** of a reduction (the *anchor* of its host): a tile of ``u`` rows x ``v`` columns
  (``v`` along the contiguous output axis, in the vector chunks tesched's vectorizer emits: full vectors,
  then halves and quarters) keeps ``u x chunks(v)`` accumulators in vector registers (with its operands
  within the target's register file, :func:`tesched.tiling.fits`: column vectors count only when every row
  reads the same ones, and at most 2 KiB, the size tesched
  promotes); per
  reduction step it issues ``u x v / lanes`` FMAs and loads what the step reads (a contiguous read:
  ``v / lanes`` vectors per row it depends on; an invariant read: one broadcast per row; a strided read:
  ``v`` scalars). The tile with the most FMAs per load wins; non-dividing tiles pay for their remainder.
- **scatters** (``ts.scatter``: a histogram): parallel over their first loop when worth it, each thread
  into a private copy of the tensor (an rfactor, copies summed after) when ``elements x threads x
  PRIVATE_COPY_COST <= points`` (zeroing and summing the copies is small beside the scatter), else with
  atomic additions (a ``sum`` of 32/64-bit elements), else serial.
- **parallel loops**: outer loops are fused until they have ``PARALLEL_ITERATIONS_PER_THREAD x threads``
  iterations; nests below ``PARALLEL_MIN_OPS`` operations stay serial (starting threads costs more).

The model ranks alternatives; its seconds are not predictions of measured times.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.autoschedule.machine import Machine
from tesched.autoschedule.pipeline import StageInfo
from tesched.poly.analysis import Read
from tesched.tiling import fits, vector_chunks

OPS_PER_SECOND = 2.0e9
L1_BYTES_PER_SECOND = 200e9
L2_BYTES_PER_SECOND = 60e9
MEMORY_BYTES_PER_SECOND = 12e9
STORE_OPS = 2
PARALLEL_MIN_OPS = 1 << 18
PARALLEL_ITERATIONS_PER_THREAD = 4
MAX_REDUNDANCY = 1.5
MAX_RESAMPLINGS = 2
PRIVATE_COPY_COST = 8
REGISTER_TILE_BYTES = 2048
ITERATION_OPS = 64
ROW_OPS = 32


def compute_seconds(work: float, machine: Machine, vectorized: bool, parallel: bool, itemsize: int = 4) -> float:
    """Seconds to perform ``work`` scalar operations."""
    speed = OPS_PER_SECOND * (machine.lanes(itemsize) if vectorized else 1) * (machine.threads if parallel else 1)
    return work / speed


def traffic_seconds(nbytes: float, machine: Machine) -> float:
    """Seconds to write ``nbytes`` and read them back."""
    bandwidth = L2_BYTES_PER_SECOND if nbytes <= machine.l2_bytes else MEMORY_BYTES_PER_SECOND
    return 2 * nbytes / bandwidth


def buffer_seconds(nbytes: float, footprint: float, machine: Machine) -> float:
    """Seconds to write ``nbytes`` to buffers of ``footprint`` bytes (per tile) and read them back."""
    bandwidth = (L1_BYTES_PER_SECOND if footprint <= machine.l1_bytes else
                 L2_BYTES_PER_SECOND if footprint <= machine.l2_bytes else MEMORY_BYTES_PER_SECOND)
    return 2 * nbytes / bandwidth


def folded_extents(compute_box: tuple[int, ...], store_box: tuple[int, ...]) -> tuple[int, ...]:
    """The buffer of a sliding window: the storage loop's box, folded to a power of two no smaller than
    the compute loop's box along the one dimension where they differ (none folded if more differ)."""
    differ = [d for d, (c, s) in enumerate(zip(compute_box, store_box)) if c < s]
    if len(differ) != 1:
        return store_box
    d = differ[0]
    fold = 1 << max(compute_box[d] - 1, 0).bit_length()
    return store_box[:d] + (min(fold, store_box[d]),) + store_box[d + 1:]


def inline_wins(info: StageInfo, factor: float) -> bool:
    """Whether substituting ``info`` into its readers (``factor`` evaluations per point) beats storing it."""
    return factor * info.ops <= info.ops + STORE_OPS + factor


def rfactor_lanes(reduce_extent: int, lanes: int) -> int:
    """Lanes of partial sums for an rfactor of a reduction of ``reduce_extent`` (a divisor of it, at most
    the SIMD lanes and, at the full width, at most half the extent); 0 when none fits."""
    return max((w for w in (4, 8, 16, 32, 64) if w <= lanes and reduce_extent % w == 0
                and reduce_extent >= (2 * w if w == lanes else w)), default=0)


def k_unroll(reduce_extent: int) -> int:
    """How far the innermost reduce loop of a register tile is unrolled: its largest divisor up to 4."""
    return max(d for d in range(1, min(4, reduce_extent) + 1) if reduce_extent % d == 0)


def worth_parallel(work: float) -> bool:
    return work >= PARALLEL_MIN_OPS


@dataclass(frozen=True)
class RegisterTile:
    """A register tile: ``u`` rows of axis ``u_axis`` x ``v`` columns of the vector axis."""

    u_axis: int | None
    u: int
    v: int
    fmas_per_load: float
    accumulators: int


def _prefer_divisors(options: set[int], extent: int) -> list[int]:
    """The options that divide ``extent`` (no remainder loop) if there are any besides 1, else all."""
    dividing = sorted(o for o in options if extent % o == 0)
    return dividing if any(o > 1 for o in dividing) else sorted(options)


def register_tiles(reads: list[Read], extents: list[int], vector_axis: int, u_axis: int | None,
                   machine: Machine, itemsize: int) -> list[RegisterTile]:
    """Candidate register tiles, best first (most vector FMAs per load, remainders penalised)."""
    rf = machine.register_file(itemsize)
    lanes = rf.lanes
    v_extent = extents[vector_axis]
    u_extent = extents[u_axis] if u_axis is not None else 1
    v_options = _prefer_divisors({min(v_extent, lanes * m) for m in (1, 2, 3, 4)} |
                                 ({v_extent} if v_extent <= 4 * lanes else set()), v_extent)
    u_options = _prefer_divisors(set(range(1, min(u_extent, 16) + 1)), u_extent)
    shared = u_axis is None or any(r.strides[u_axis] == 0 and r.strides[vector_axis] != 0 for r in reads)
    found = []
    for v in v_options:
        vectors = vector_chunks(v, lanes)
        for u in u_options:
            accumulators = u * vectors
            if not fits(u, vectors, rf, shared) or u * v * itemsize > REGISTER_TILE_BYTES:
                continue
            loads = 0.0
            for r in reads:
                along_v = r.strides[vector_axis]
                along_u = r.strides[u_axis] if u_axis is not None else 0
                rows = u if along_u != 0 else 1
                loads += rows * (1 if along_v == 0 else vectors if along_v == 1 else v)
            waste = (-(-v_extent // v) * v / v_extent) * (-(-u_extent // u) * u / u_extent)
            found.append(RegisterTile(u_axis, u, v, accumulators / max(loads, 1.0) / waste, accumulators))
    found.sort(key=lambda t: (-t.fmas_per_load, -t.accumulators))
    return found
