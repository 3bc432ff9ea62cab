"""The geometry of one tile of a ``compute_at``, read off the lowered model's isl sets (for drawings).

For a stage ``P`` computed inside loop ``l`` of ``C``, one iteration ``p`` of the loops down to ``l``
(the *prefix*, chosen in the middle of its range so that borders do not clip it) computes:

- ``tile``: the elements of ``C`` that iteration writes (C's loop map and write access, from the model);
- ``footprint``: the elements of ``P`` it computes (``P``'s footprint map at ``p``, as lowered);
- ``recomputed``: the part of that footprint that other iterations compute too (the halo, or the whole
  footprint when an outer loop re-executes it), exactly: ``footprint(p) ∩ footprint(D \\ {p})``;
- ``neighbours``: for the iterations next to ``p`` (one prefix coordinate ±1), their tile, their
  footprint, and its overlap with ``p``'s.

Every region is a list of integer boxes (inclusive bounds in tensor coordinates), one per basic set of
the isl set, so a drawing is to scale and is the compiler's own data, not a re-derivation. Nothing is
drawn here (see :mod:`tesched.viz`); sizes must be constant (symbolic sizes give no geometry).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from tesched.poly.model import PolyModel, StageModel

MAX_POINTS = 4096


@dataclass(frozen=True)
class Box:
    """An integer box: ``lo[d] <= x[d] <= hi[d]`` in every dimension."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]

    @property
    def volume(self) -> int:
        out = 1
        for a, b in zip(self.lo, self.hi):
            out *= b - a + 1
        return out


@dataclass(frozen=True)
class Neighbour:
    """An iteration next to the drawn one: where it differs, its tile, its footprint and the overlap."""

    loop: str
    step: int
    prefix: tuple[int, ...]
    tile: tuple[Box, ...]
    footprint: tuple[Box, ...]
    overlap: tuple[Box, ...]


@dataclass(frozen=True)
class TileGeometry:
    """One iteration of the loops enclosing a ``compute_at`` stage, and what it computes (see module)."""

    producer: str
    consumer: str
    loops: tuple[str, ...]              # the prefix loops, outermost first (the last is the attach loop)
    prefix: tuple[int, ...]             # the drawn iteration
    iterations: int                     # how many iterations the prefix has
    producer_shape: tuple[int, ...]
    consumer_shape: tuple[int, ...]
    producer_axes: tuple[str, ...]      # the names of each tensor's dimensions (its stage's axes)
    consumer_axes: tuple[str, ...]
    tile: tuple[Box, ...]
    footprint: tuple[Box, ...]
    recomputed: tuple[Box, ...]
    neighbours: tuple[Neighbour, ...]
    computed_points: int                # points of P computed per iteration (sum of footprint boxes)


def boxes_of(s: isl.Set) -> tuple[Box, ...]:
    """``s`` (a bounded set of integer points, no parameters) as boxes: one per basic set that is a box,
    else one per point (up to :data:`MAX_POINTS`, beyond which the basic set's bounding box stands in)."""
    out: list[Box] = []
    for bset in s.coalesce().get_basic_sets():
        piece = isl.Set.from_basic_set(bset)
        if piece.is_empty():
            continue
        n = piece.dim(isl.dim_type.set)
        box = Box(tuple(int(piece.dim_min_val(d).to_python()) for d in range(n)),
                  tuple(int(piece.dim_max_val(d).to_python()) for d in range(n)))
        count = int(piece.count_val().to_python())
        if count == box.volume or count > MAX_POINTS:
            out.append(box)
        else:
            out.extend(_points(piece, n))
    return tuple(out)


def _points(piece: isl.Set, n: int) -> list[Box]:
    """Every point of ``piece`` as a one-point box."""
    found: list[Box] = []

    def add(pt: isl.Point) -> None:
        found.append(_point_box(pt, n))

    piece.foreach_point(add)
    return found


def _point_box(pt: isl.Point, n: int) -> Box:
    coords = tuple(int(pt.get_coordinate_val(isl.dim_type.set, d).to_python()) for d in range(n))
    return Box(coords, coords)


def _middle_point(domain: isl.Set) -> tuple[int, ...]:
    """A point of ``domain`` near the middle of its range, fixing coordinates outermost first."""
    chosen: list[int] = []
    rest = domain
    for d in range(domain.dim(isl.dim_type.set)):
        lo, hi = int(rest.dim_min_val(d).to_python()), int(rest.dim_max_val(d).to_python())
        for value in ((lo + hi + 1) // 2, lo):
            fixed = rest.fix_val(isl.dim_type.set, d, isl.Val(value))
            if not fixed.is_empty():
                rest = fixed
                chosen.append(value)
                break
    return tuple(chosen)


def _point(space: isl.Space, prefix: tuple[int, ...]) -> isl.Set:
    """The set holding one point of ``space``."""
    point = isl.Set.universe(space)
    for d, v in enumerate(prefix):
        point = point.fix_val(isl.dim_type.set, d, isl.Val(v))
    return point


def _at(relation: isl.Map, prefix: tuple[int, ...]) -> isl.Set:
    """The image of one prefix point under ``relation`` (prefix -> elements)."""
    return relation.intersect_domain(_point(relation.get_space().domain(), prefix)).range()


def _tile_map(model: PolyModel, sm: StageModel) -> isl.Map:
    """prefix -> elements of the consumer written inside that iteration of the prefix loops."""
    parent = sm.parent
    assert parent is not None
    stmt = parent.main
    write = model.access_map(stmt, parent.tag, tuple(parent.axes))
    return model.loop_map(stmt, sm.prefix_len).reverse().apply_range(write)


def _shape(sm: StageModel) -> tuple[int, ...]:
    return tuple(int(d) for d in sm.tensor.shape)


def tile_geometry(model: PolyModel, sm: StageModel) -> TileGeometry | None:
    """The geometry of one iteration of ``sm``'s ``compute_at`` (None for a root stage, a stage computed
    by a tensor intrinsic, or symbolic sizes).

    Parameters
    ----------
    model : PolyModel
        A lowered model (``LoweredFunc.model``).
    sm : StageModel
        One of its stages.

    Returns
    -------
    TileGeometry or None
    """
    if sm.parent is None or sm.footprint is None or sm.absorbed_by is not None or model.params:
        return None
    fp = sm.footprint
    tiles = _tile_map(model, sm)
    domain = fp.domain()
    prefix = _middle_point(domain)
    own = _at(fp, prefix)
    others = fp.subtract_domain(_point(domain.get_space(), prefix)).range()
    loops = tuple(_prefix_loops(sm))
    neighbours = []
    for d, loop in enumerate(loops):
        for step in (-1, 1):
            q = prefix[:d] + (prefix[d] + step,) + prefix[d + 1:]
            if not _point(domain.get_space(), q).is_subset(domain):
                continue
            near = _at(fp, q)
            neighbours.append(Neighbour(loop, step, q, boxes_of(_at(tiles, q)), boxes_of(near),
                                        boxes_of(near.intersect(own))))
    footprint = boxes_of(own)
    return TileGeometry(sm.name, sm.parent.name, loops, prefix, int(domain.count_val().to_python()), _shape(sm),
                        _shape(sm.parent), tuple(a.name for a in sm.axes), tuple(a.name for a in sm.parent.axes),
                        boxes_of(_at(tiles, prefix)), footprint,
                        boxes_of(own.intersect(others)), tuple(neighbours), sum(b.volume for b in footprint))


def _prefix_loops(sm: StageModel) -> list[str]:
    """The names of the loops enclosing ``sm``, outermost first (the prefix coordinates)."""
    names = []
    for stage, level in sm.chain():
        names += [v.name for v in stage.leaves[:level + 1]]
    return names
