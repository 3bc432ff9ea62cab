"""Tile geometry of compute_at stages (tesched/poly/tiles.py), checked against regions enumerated by brute
force from the consumer's access pattern, and against the kernel's results."""
import itertools

import numpy as np

import tesched as ts
from tesched.poly.tiles import Box, boxes_of, tile_geometry

N, T = 14, 4


def points(boxes):
    out = set()
    for b in boxes:
        out |= set(itertools.product(*[range(lo, hi + 1) for lo, hi in zip(b.lo, b.hi)]))
    return out


def blur3x3():
    A = ts.placeholder((N, N), name="A")
    B = ts.compute((N, N), lambda i, j: A[i, j] * 2.0, name="B")
    di, dj = ts.reduce_axis((0, 3), name="di"), ts.reduce_axis((0, 3), name="dj")
    C = ts.compute((N - 2, N - 2), lambda i, j: ts.sum(B[i + di, j + dj], axis=[di, dj]), name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    _, jo, _, _ = s[C].tile(i, j, T, T)
    s[B].compute_at(s[C], jo)
    return s, [A, C]


def brute_regions(io: int, jo: int):
    """C's tile (io, jo) and the elements of B it reads, enumerated."""
    rows = range(T * io, min(T * io + T, N - 2))
    cols = range(T * jo, min(T * jo + T, N - 2))
    tile = set(itertools.product(rows, cols))
    reads = {(i + a, j + b) for i, j in tile for a in range(3) for b in range(3)}
    return tile, reads


def test_blur_tile_footprint_halo_and_neighbours_match_brute_force():
    s, args = blur3x3()
    f = ts.lower(s, args)
    a = np.random.default_rng(0).random((N, N), dtype=np.float32)
    b = 2 * a
    want = sum(b[i:N - 2 + i, j:N - 2 + j] for i in range(3) for j in range(3))
    np.testing.assert_allclose(ts.build(f)(a), want, rtol=1e-5)

    sm = next(m for m in f.model.stages if m.name == "B")
    g = tile_geometry(f.model, sm)
    assert g is not None and g.loops == ("i.outer", "j.outer") and g.iterations == 9
    io, jo = g.prefix
    assert 0 < io < 2 and 0 < jo < 2             # an interior tile, unclipped by the borders
    tile, reads = brute_regions(io, jo)
    assert points(g.tile) == tile
    assert points(g.footprint) == reads and g.computed_points == len(reads)
    others = set().union(*(brute_regions(p, q)[1] for p in range(3) for q in range(3) if (p, q) != (io, jo)))
    assert points(g.recomputed) == reads & others
    assert {(n.loop, n.step) for n in g.neighbours} == {("i.outer", -1), ("i.outer", 1), ("j.outer", -1), ("j.outer", 1)}
    for n in g.neighbours:
        n_tile, n_reads = brute_regions(*n.prefix)
        assert points(n.tile) == n_tile and points(n.footprint) == n_reads
        assert points(n.overlap) == n_reads & reads
    assert g.producer_shape == (N, N) and g.consumer_axes == ("i", "j")


def test_root_stages_have_no_tile_geometry():
    A = ts.placeholder((8,), name="A")
    B = ts.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    f = ts.lower(s, [A, B])
    assert tile_geometry(f.model, f.model.stages[0]) is None


def test_boxes_of_splits_non_box_sets_into_points():
    import islpy as isl
    triangle = isl.Set("{ [i, j] : 0 <= j <= i < 3 }")
    got = boxes_of(triangle)
    assert points(got) == {(i, j) for i in range(3) for j in range(i + 1)}
    assert boxes_of(isl.Set("{ [i, j] : 0 <= i < 3 and 2 <= j <= 5 }")) == (Box((0, 2), (2, 5)),)


def test_symbolic_sizes_give_no_geometry():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((n,), lambda i: B[i] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    io, _ = s[C].split(s[C].op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    f = ts.lower(s, [A, C])
    assert tile_geometry(f.model, next(m for m in f.model.stages if m.name == "B")) is None
