"""Exact polyhedral facts about a pipeline's declarations, for cost models (the automatic scheduler).

Everything here is computed from the ``te`` declarations alone (no schedule, no lowering): a stage's
reads, with stages marked as inlined substituted into their readers; the stride of each read along each
axis (contiguity, reuse); and, for a rectangular tiling of a *host* stage's data-parallel axes, the
region of every other tensor the tile touches, as tesched's ``compute_at`` computes it (the bounding
box of the exact footprint, clipped at the tensor's borders, composed through the stages computed at
the same tile): the buffer's extents, the box volume of an interior tile, and the exact number of points
computed over all tiles (halo recompute included), counted by isl.

What it does not do: choose schedules, time anything, or check a schedule's legality (that is
:mod:`tesched.poly.deps`, reached through ``Schedule.check``). Shapes must be constant; a symbolic size
or a non-affine read raises :class:`NotModelable` naming the stage, and callers keep such stages out of
tiled groups.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

import islpy as isl

from tesched.poly.affine import NotAffine, to_isl
from tesched.te.expr import Expr
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


def _affine(op: ComputeOp, e: Expr) -> str:
    try:
        return to_isl(e, _names(op))
    except NotAffine as err:
        raise NotModelable(f"stage {op.name} reads at a non-affine index ({err})") from None


def reads(op: ComputeOp, inlined: Collection[Operation] = ()) -> list[Read]:
    """Every distinct read of a tensor in ``op``'s body (reads of ``inlined`` ops expanded), with strides."""
    body = inlined_body(op, inlined)
    parts = body.children() if isinstance(body, Reduce) else (body,)
    axes = _axes(op)
    found: list[Read] = []
    seen: set[tuple] = set()
    for part in parts:
        for r in collect(part, TensorRead):
            key = (id(r.tensor), tuple(repr(i) for i in r.indices))
            if key in seen:
                continue
            seen.add(key)
            found.append(Read(r.tensor, r.indices, tuple(_stride(op, r, a, axes) for a in range(len(axes)))))
    return found


def _stride(op: ComputeOp, read: TensorRead, axis: int, axes: list[IterVar]) -> int | None:
    try:
        shape = constant_shape(read.tensor)
        flat = "0"
        for idx, extent in zip(read.indices, shape):
            flat = f"({flat}) * {extent} + ({to_isl(idx, _names(op))})"
    except (NotAffine, NotModelable):
        return None
    coords = ", ".join(f"a{k}" for k in range(len(axes)))
    try:
        aff = isl.PwAff(f"{{ [{coords}] -> [({flat})] }}")
    except isl.Error:
        return None
    pieces = aff.get_pieces()
    if len(pieces) != 1:
        return None
    value = pieces[0][1].get_coefficient_val(isl.dim_type.in_, axis)
    return int(value.to_python()) if value.is_int() else None


def _domain_text(op: ComputeOp) -> tuple[str, str]:
    """(``S[a0, ...]``, constraints) of ``op``'s iteration domain."""
    conds = []
    for k, v in enumerate(_axes(op)):
        lo, ext = v.range.min, v.range.extent
        if not isinstance(lo, int) or not isinstance(ext, int):
            raise NotModelable(f"stage {op.name}: axis {v.name} has a symbolic range")
        conds.append(f"{lo} <= a{k} < {lo + ext}")
    coords = ", ".join(f"a{k}" for k in range(len(_axes(op))))
    return f"[{coords}]", " and ".join(conds) or "true"


def _tensor_set(tensor: Tensor) -> isl.Set:
    return _box_set(constant_shape(tensor))


@functools.lru_cache(maxsize=256)
def _box_set(shape: tuple[int, ...]) -> isl.Set:
    coords = ", ".join(f"x{k}" for k in range(len(shape)))
    conds = " and ".join(f"0 <= x{k} < {d}" for k, d in enumerate(shape)) or "true"
    return isl.Set(f"{{ [{coords}] : {conds} }}")


def _size(tensor: Tensor) -> int:
    size = 1
    for d in constant_shape(tensor):
        size *= d
    return size


def _tiled_instances(host: ComputeOp, tile: Sequence[int], reduce_tile: Sequence[int] | None) -> isl.Map:
    """``[tile index] -> host[instance]``: the host's instances in each tile."""
    axes = _axes(host)
    sizes = list(tile) + (list(reduce_tile) if reduce_tile is not None else [])
    if len(tile) != len(host.axis):
        raise ValueError(f"tile of {host.name}: {len(tile)} sizes for {len(host.axis)} axes")
    if reduce_tile is not None and len(reduce_tile) != len(host.reduce_axis):
        raise ValueError(f"reduce_tile of {host.name}: {len(reduce_tile)} sizes for {len(host.reduce_axis)} axes")
    space, conds = _domain_text(host)
    ts_ = [f"t{k}" for k in range(len(sizes))]
    links = [f"t{k} = floor((a{k} - {axes[k].range.min})/{int(size)})"
             for k, size in enumerate(sizes)]
    if any(int(s) < 1 for s in sizes):
        raise ValueError(f"tile of {host.name}: sizes must be positive, got {list(sizes)}")
    return isl.Map(f"{{ [{', '.join(ts_)}] -> {space} : {' and '.join([conds] + links)} }}")


def _access(op: ComputeOp, read: Read) -> isl.Map:
    space, conds = _domain_text(op)
    idx = ", ".join(_affine(op, i) for i in read.indices)
    return isl.Map(f"{{ {space} -> [{idx}] : {conds} }}")


def _boxed(region: isl.Map, tensor: Tensor) -> isl.Map:
    """Per tile, the bounding box of ``region``, clipped to the tensor (what ``compute_at`` computes)."""
    n = tensor.ndim
    coords = ", ".join(f"x{k}" for k in range(n))
    box = isl.Map.from_domain_and_range(region.domain(), _tensor_set(tensor))
    for d in range(n):
        for bound, op in ((region.dim_min(d), ">="), (region.dim_max(d), "<=")):
            rel = isl.Map(f"{{ [v] -> [{coords}] : x{d} {op} v }}")
            box = box.intersect(isl.Map.from_pw_aff(bound).apply_range(rel))
    return box.coalesce()


def _region(tensor: Tensor, box: isl.Map) -> Region:
    sizes = [box.dim_max(d).sub(box.dim_min(d)).add_constant_val(isl.Val(1)) for d in range(tensor.ndim)]
    extents = [int(size.as_map().range().dim_max_val(0).to_python()) for size in sizes]
    volume = 1
    for e in extents:
        volume *= e
    return Region(tensor, tuple(extents), volume, _computed_points(box, sizes), _size(tensor))


def _computed_points(box: isl.Map, sizes: list[isl.PwAff]) -> int:
    """Points of the box summed over tiles (see :func:`points_by_constant_pieces`), else tile by tile."""
    total = points_by_constant_pieces(box, sizes)
    return _summed_over_tiles(box, sizes) if total is None else total


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


MAX_ENUMERATED_TILES = 1 << 14


def _summed_over_tiles(box: isl.Map, sizes: list[isl.PwAff]) -> int:
    """Box volumes summed tile by tile (extents that vary with the tile, e.g. clipped at a border)."""
    tiles = box.domain()
    if int(tiles.count_val().to_python()) > MAX_ENUMERATED_TILES:
        return int(box.wrap().count_val().to_python())
    total = [0]

    def add(point: isl.Point) -> None:
        volume = 1
        for size in sizes:
            volume *= int(size.eval(point).to_python())
        total[0] += volume

    tiles.foreach_point(add)
    return total[0]


def tile_regions(host: ComputeOp, tile: Sequence[int], computed_at_tile: Sequence[ComputeOp] = (),
                 inlined: Collection[Operation] = (), reduce_tile: Sequence[int] | None = None
                 ) -> dict[str, Region]:
    """Regions touched per tile of ``host``, by tensor name.

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
    touched: dict[int, isl.Map] = {}          # id(op of tensor) -> [tile] -> elements read
    tensors: dict[int, Tensor] = {}
    regions: dict[str, Region] = {}
    instances = _tiled_instances(host, tile, reduce_tile)
    for k, op in enumerate([host] + list(computed_at_tile)):
        if k > 0:
            if id(op) not in touched:
                raise ValueError(f"{op.name} is computed at the tile of {host.name} but no stage of the tile "
                                 "reads it (list consumers before producers)")
            box = _boxed(touched.pop(id(op)).coalesce(), tensors.pop(id(op)))
            regions[op.name] = _region(op.output(0), box)
            instances = _instances_of(op, box)
        for read in reads(op, inlined):
            part = instances.apply_range(_access(op, read)).intersect_range(_tensor_set(read.tensor))
            key = id(read.tensor.op)
            touched[key] = touched[key].union(part) if key in touched else part
            tensors[key] = read.tensor
    for key, part in touched.items():
        regions.setdefault(tensors[key].name, _region(tensors[key], _boxed(part.coalesce(), tensors[key])))
    return regions


def _instances_of(op: ComputeOp, region: isl.Map) -> isl.Map:
    """``[tile] -> op[instance]`` for the points of ``region`` (every reduce step of each point)."""
    space, conds = _domain_text(op)
    n = len(op.axis)
    data = ", ".join(f"a{k}" for k in range(n))
    to_point = isl.Map(f"{{ {space} -> [{data}] : {conds} }}")
    return region.apply_range(to_point.reverse())


def register_footprint(host: ComputeOp, tile: Sequence[int], inlined: Collection[Operation] = ()
                       ) -> Mapping[str, Region]:
    """Per single step of every reduce loop, what a ``tile`` of ``host``'s outputs reads: the values a
    register tile loads per step (reduce tile of 1 along every reduce axis)."""
    return tile_regions(host, tile, (), inlined, [1] * len(host.reduce_axis))
