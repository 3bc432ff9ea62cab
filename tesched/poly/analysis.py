"""Polyhedral facts about a pipeline's declarations, for cost models (the automatic scheduler).

Everything here is computed from the ``te`` declarations alone (no schedule, no lowering): a stage's
reads, with stages marked as inlined substituted into their readers; the stride of each read along each
axis (contiguity, reuse); and, for a rectangular tiling of a *host* stage's loops, the region of every
other tensor the tile touches, as tesched's ``compute_at`` computes it (the bounding box of the
footprint, clipped at the tensor's borders, composed through the stages computed at the same tile): the
buffer's extents, their volume, and the number of points computed over all tiles (halo recompute
included). Regions are boxes bounded by interval arithmetic on the indices, for every tile at once
(:mod:`.intervals`): exact for indices such as ``2*x - 1``, ``x // 2`` or ``min(x + 1, n - 1)``, a
superset for others, and, along a data-dependent index (a gather), the whole dimension or what clamps
it. Their cost grows with the number of stages and reads, not with the depth of a chain of them.

What it does not do: choose schedules, time anything, or check a schedule's legality (that is
:mod:`tesched.poly.deps`, reached through ``Schedule.check``). Shapes must be constant; a symbolic size
raises :class:`NotModelable` naming the stage, and callers keep such stages out of tiled groups.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

import islpy as isl
import numpy as np

from tesched.poly import intervals
from tesched.poly.affine import NotAffine, to_isl
from tesched.poly.intervals import Span
from tesched.te.expr import Expr, Var
from tesched.te.reduction import Reduce
from tesched.te.tensor import ComputeOp, IterVar, Operation, Tensor, TensorRead
from tesched.te.visit import collect, rewrite, substitute


class NotModelable(ValueError):
    """The declarations fall outside what the analysis models (symbolic sizes, non-affine reads)."""


@dataclass(frozen=True)
class Read:
    """One read of ``tensor`` in a stage's body (after inlining): its index expressions and, per axis of
    the stage (data-parallel axes, then reduce axes), how far the row-major flat index moves when that
    axis grows by one (0: the read is reused along that axis; ``None``: not affine in it)."""

    tensor: Tensor
    indices: tuple[Expr, ...]
    strides: tuple[int | None, ...]


@dataclass(frozen=True)
class Region:
    """The part of ``tensor`` one tile of a host stage touches (a box per tile, as ``compute_at`` makes).

    ``extents``: the box's largest extent per dimension (the local buffer's shape); ``volume``: their
    product; ``computed``: points summed over all tiles of the host (exact, clipped at borders), so
    ``redundancy = computed / size`` is the recompute factor of a halo (1.0: none)."""

    tensor: Tensor
    extents: tuple[int, ...]
    volume: int
    computed: int
    size: int

    @property
    def redundancy(self) -> float:
        return self.computed / self.size


def constant_shape(tensor: Tensor) -> tuple[int, ...]:
    """The shape of ``tensor`` as ints; :class:`NotModelable` if a size is symbolic."""
    if not all(isinstance(d, int) for d in tensor.shape):
        raise NotModelable(f"{tensor.name} has a symbolic shape {tensor.shape}")
    return tuple(int(d) for d in tensor.shape)


def inlined_body(op: ComputeOp, inlined: Collection[Operation] = ()) -> Expr:
    """``op``'s body with every read of an op in ``inlined`` replaced by that op's (inlined) body."""
    inline_ids = {id(o) for o in inlined}

    def expand(e: Expr) -> Expr | None:
        if isinstance(e, TensorRead):
            indices = tuple(rewrite(i, expand) for i in e.indices)
            producer = e.tensor.op
            if id(producer) in inline_ids and isinstance(producer, ComputeOp):
                return rewrite(substitute(producer.body, dict(zip(producer.axis, indices))), expand)
            return TensorRead(e.tensor, indices)
        return None

    return rewrite(op.body, expand)


def _axes(op: ComputeOp) -> list[IterVar]:
    return list(op.axis) + list(op.reduce_axis)


def _names(op: ComputeOp) -> dict[int, str]:
    return {id(v): f"a{k}" for k, v in enumerate(_axes(op))}


def reads(op: ComputeOp, inlined: Collection[Operation] = ()) -> list[Read]:
    """Every distinct read of a tensor in ``op``'s body (reads of ``inlined`` ops expanded), with strides."""
    body = inlined_body(op, inlined)
    parts = body.children() if isinstance(body, Reduce) else (body,)
    axes = _axes(op)
    names = _names(op)
    found: list[Read] = []
    seen: set[tuple] = set()
    for part in parts:
        for r in collect(part, TensorRead):
            key = (id(r.tensor), tuple(repr(i) for i in r.indices))
            if key in seen:
                continue
            seen.add(key)
            found.append(Read(r.tensor, r.indices, _strides(r, axes, names)))
    return found


def _strides(read: TensorRead, axes: list[IterVar], names: dict[int, str]) -> tuple[int | None, ...]:
    """How far ``read``'s row-major flat index moves when each axis grows by one (None: not affine in
    it); a data-dependent index that does not involve the axis (the row of a gather ``C[idx[i], j]``,
    along ``j``) does not move."""
    try:
        shape = constant_shape(read.tensor)
    except NotModelable:
        return (None,) * len(axes)
    flat = "0"
    moved: set[int] = set()         # axes a data-dependent index involves
    for idx, extent in zip(read.indices, shape):
        try:
            term = to_isl(idx, names)
        except NotAffine:
            moved |= {id(v) for v in collect(idx, Var)}
            term = "0"
        flat = f"({flat}) * {extent} + ({term})"
    coords = ", ".join(f"a{k}" for k in range(len(axes)))
    try:
        pieces = isl.PwAff(f"{{ [{coords}] -> [({flat})] }}").get_pieces()
    except isl.Error:
        return (None,) * len(axes)
    if len(pieces) != 1:
        return (None,) * len(axes)
    aff = pieces[0][1]
    values = [aff.get_coefficient_val(isl.dim_type.in_, a) for a in range(len(axes))]
    return tuple(int(v.to_python()) if v.is_int() and id(axis) not in moved else None
                 for axis, v in zip(axes, values))


def _size(tensor: Tensor) -> int:
    size = 1
    for d in constant_shape(tensor):
        size *= d
    return size


def points_by_constant_pieces(box: isl.Map, sizes: Sequence[isl.PwAff]) -> int | None:
    """Points of a per-tile box summed over its tiles (the domain of ``box``), given its extent per
    dimension as functions of the tile: per combination of constant pieces of the extents, the number of
    tiles in it times the product (only tiles are counted). None if some piece is not constant."""
    pieces = []
    for size in sizes:
        parts = size.get_pieces()
        if not all(aff.is_cst() for _, aff in parts):
            return None
        pieces.append([(dom, int(aff.get_constant_val().to_python())) for dom, aff in parts])
    total = 0
    for combo in itertools.product(*pieces):
        tiles = box.domain()
        volume = 1
        for dom, extent in combo:
            tiles = tiles.intersect(dom)
            volume *= extent
        if not tiles.is_empty():
            total += int(tiles.count_val().to_python()) * volume
    return total


def accesses(op: ComputeOp, inlined: Collection[Operation] = ()) -> list[TensorRead]:
    """Every distinct read in ``op``'s body (reads of ``inlined`` ops expanded), without strides."""
    found: dict[tuple, TensorRead] = {}
    for r in collect(inlined_body(op, inlined), TensorRead):
        found.setdefault((id(r.tensor), tuple(repr(i) for i in r.indices)), r)
    return list(found.values())


Box = list[Span]


def _axis_spans(op: ComputeOp, box: Box | None, tile: Sequence[int] | None, reduce_tile: Sequence[int] | None,
                ndim: int) -> dict[int, Span]:
    """The interval of every axis of ``op``: ``box`` along its data axes (or, for the host, its ``tile``
    loops), each reduce axis whole or in ``reduce_tile`` loops (grid dimensions after the data axes)."""
    out: dict[int, Span] = {}
    for k, v in enumerate(_axes(op)):
        lo, ext = v.range.min, v.range.extent
        if not isinstance(lo, int) or not isinstance(ext, int):
            raise NotModelable(f"stage {op.name}: axis {v.name} has a symbolic range")
        data = k < len(op.axis)
        if data and box is not None:
            out[id(v)] = box[k]
        elif data and tile is not None:
            out[id(v)] = intervals.tiles(k, ndim, lo, ext, int(tile[k]))
        elif not data and reduce_tile is not None:
            out[id(v)] = intervals.tiles(k, ndim, lo, ext, int(reduce_tile[k - len(op.axis)]))
        else:
            out[id(v)] = (np.array(float(lo)), np.array(float(lo + ext - 1)))
    return out


def _read_box(read: TensorRead, spans: dict[int, Span], memo: dict) -> Box:
    """The box ``read`` touches, clipped to its tensor (empty where a bound crosses the other); ``memo``
    holds the spans of expressions already bounded under ``spans``."""
    shape = constant_shape(read.tensor)
    box = []
    for index, extent in zip(read.indices, shape):
        lo, hi = intervals.span(index, spans, memo)
        box.append((np.maximum(np.ceil(lo), 0.0), np.minimum(np.floor(hi), float(extent - 1))))
    return box


def _union(a: Box, b: Box) -> Box:
    """The bounding box of two boxes (one empty on a tile: the other there)."""
    def empty(box: Box) -> np.ndarray | bool:
        out: np.ndarray | bool = False
        for lo, hi in box:
            out = out | (lo > hi)
        return out

    ea, eb = empty(a), empty(b)
    if not np.any(ea) and not np.any(eb):
        return [intervals.hull(x, y) for x, y in zip(a, b)]
    return [intervals.hull((np.where(ea, ly, la), np.where(ea, hy, ha)), (np.where(eb, la, ly), np.where(eb, ha, hy)))
            for (la, ha), (ly, hy) in zip(a, b)]


def _region(tensor: Tensor, box: Box, counts: list[int]) -> Region:
    lengths = [np.maximum(hi - lo + 1, 0.0) for lo, hi in box]
    extents = tuple(int(length.max()) for length in lengths)
    volume = 1
    for e in extents:
        volume *= e
    return Region(tensor, extents, volume, _summed_over_tiles(lengths, counts), _size(tensor))


def _summed_over_tiles(lengths: list[np.ndarray], counts: list[int]) -> int:
    """Sum over every tile of the grid (``counts`` tiles per grid dimension) of the product of
    ``lengths`` (each broadcast over the grid): per group of grid dimensions that lengths tie together,
    the sum over that group's tiles; a grid dimension no length depends on multiplies by its count."""
    groups: list[tuple[set[int], np.ndarray]] = []
    for length in lengths:
        dims = {d for d, n in enumerate(length.shape) if n > 1}
        joined = [g for g in groups if g[0] & dims]
        product = length
        for g in joined:
            dims |= g[0]
            product = product * g[1]
        if product.size > intervals.MAX_GRID:                  # bound it by its largest tile
            product = np.array(float(product.max()) * float(np.prod([counts[d] for d in dims]))).reshape(
                [1] * len(counts))
            dims = set()
        groups = [g for g in groups if not g[0] & dims] + [(dims, product)]
    total = 1.0
    free = set(range(len(counts)))
    for dims, product in groups:
        free -= dims
        total *= float(product.sum())
    for d in free:
        total *= counts[d]
    return int(round(total))


def tile_regions(host: ComputeOp, tile: Sequence[int], computed_at_tile: Sequence[ComputeOp] = (),
                 inlined: Collection[Operation] = (), reduce_tile: Sequence[int] | None = None,
                 reads_of: Callable[[ComputeOp], Sequence[TensorRead]] | None = None) -> dict[str, Region]:
    """Regions touched per tile of ``host``, by tensor name: per tile, the bounding box of what the tile's
    instances read (interval arithmetic on the indices, evaluated for all tiles at once: see
    :mod:`.intervals`; a data-dependent index touches its whole dimension, or what clamps it), clipped
    at the tensor's borders, composed through the stages computed at the same tile.

    Parameters
    ----------
    host
        The stage whose data-parallel axes are tiled.
    tile
        Tile extent per data-parallel axis of ``host`` (its full extent: one tile along that axis).
    computed_at_tile
        Producers computed inside the tile loop (``compute_at``), consumers before producers: their
        region is the box of what the tile's readers need, and their own reads are followed.
    inlined
        Ops substituted into their readers.
    reduce_tile
        Tile extents of ``host``'s reduce axes (default: whole reductions inside each tile).
    reads_of
        The reads of an op with ``inlined`` expanded (default :func:`accesses`; callers pass a memo).

    Returns
    -------
    dict
        For every stage in ``computed_at_tile`` and every other tensor the group reads, its
        :class:`Region` per tile.

    Example
    -------
    >>> regions = tile_regions(blur_y.op, (8, 512), computed_at_tile=[blur_x.op])
    >>> regions["blur_x"].extents, regions["blur_x"].redundancy     # (10, 512), 1.25
    """
    return TileFootprints(host, tile, inlined, reduce_tile, reads_of).regions(computed_at_tile)


_State = tuple[dict[int, tuple[Tensor, Box]], dict[str, Region]]


class TileFootprints:
    """The regions of :func:`tile_regions` for one tiling of a host, for any list of stages computed at
    its tile: the composition is followed stage by stage (consumers first) and the state after every
    prefix of a list is kept, so a list sharing a prefix with an earlier one (the same members less those
    stored whole after, or more of them) only follows its own stages. Parameters as :func:`tile_regions`."""

    def __init__(self, host: ComputeOp, tile: Sequence[int], inlined: Collection[Operation] = (),
                 reduce_tile: Sequence[int] | None = None,
                 reads_of: Callable[[ComputeOp], Sequence[TensorRead]] | None = None):
        if len(tile) != len(host.axis):
            raise ValueError(f"tile of {host.name}: {len(tile)} sizes for {len(host.axis)} axes")
        if reduce_tile is not None and len(reduce_tile) != len(host.reduce_axis):
            raise ValueError(f"reduce_tile of {host.name}: {len(reduce_tile)} sizes for "
                             f"{len(host.reduce_axis)} axes")
        sizes = list(tile) + list(reduce_tile or ())
        if any(int(s) < 1 for s in sizes):
            raise ValueError(f"tile of {host.name}: sizes must be positive, got {list(sizes)}")
        constant_shape(host.output(0))
        self.host = host
        self.ndim = len(sizes)
        self.reads_of = reads_of or (lambda op: accesses(op, inlined))
        spans = _axis_spans(host, None, tile, reduce_tile, self.ndim)
        self.counts = [int(np.size(spans[id(v)][0])) for v in _axes(host)[:self.ndim]]
        touched: dict[int, tuple[Tensor, Box]] = {}     # id(op of tensor) -> (tensor, box per tile)
        self._follow(host, spans, touched)
        self._states: dict[tuple[int, ...], _State] = {(): (touched, {})}     # by the ids of a prefix

    def regions(self, computed_at_tile: Sequence[ComputeOp] = ()) -> dict[str, Region]:
        """For every stage in ``computed_at_tile`` and every other tensor the group reads, its region."""
        key = tuple(id(op) for op in computed_at_tile)
        done = next(n for n in range(len(key), -1, -1) if key[:n] in self._states)
        saved_touched, saved_regions = self._states[key[:done]]
        touched, regions = dict(saved_touched), dict(saved_regions)
        for n in range(done, len(key)):
            op = computed_at_tile[n]
            if id(op) not in touched:
                raise ValueError(f"{op.name} is computed at the tile of {self.host.name} but no stage of the "
                                 "tile reads it (list consumers before producers)")
            _, box = touched.pop(id(op))
            regions[op.name] = _region(op.output(0), box, self.counts)
            self._follow(op, _axis_spans(op, box, None, None, self.ndim), touched)
            self._states[key[:n + 1]] = (dict(touched), dict(regions))
        for tensor, box in touched.values():
            regions.setdefault(tensor.name, _region(tensor, box, self.counts))
        return regions

    def _follow(self, op: ComputeOp, spans: dict[int, Span], touched: dict[int, tuple[Tensor, Box]]) -> None:
        """Add the boxes ``op`` reads, its axes in ``spans``, to ``touched``."""
        memo: dict = {}
        for read in self.reads_of(op):
            part = _read_box(read, spans, memo)
            key = id(read.tensor.op)
            touched[key] = (read.tensor, _union(touched[key][1], part) if key in touched else part)


def register_footprint(host: ComputeOp, tile: Sequence[int], inlined: Collection[Operation] = ()
                       ) -> Mapping[str, Region]:
    """Per single step of every reduce loop, what a ``tile`` of ``host``'s outputs reads: the values a
    register tile loads per step (reduce tile of 1 along every reduce axis)."""
    return tile_regions(host, tile, (), inlined, [1] * len(host.reduce_axis))
