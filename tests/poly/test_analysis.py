"""Tests of tesched.poly.analysis: reads with strides, tile regions (extents, exact computed points with
halos, clipped borders and pyramid accesses, checked by brute force; gathers), register footprints, and
what it refuses."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.poly import analysis as an


def blur(h, w):
    A = ts.placeholder((h + 2, w + 2), name="A")
    bx = ts.compute((h + 2, w), lambda y, x: A[y, x] + A[y, x + 1] + A[y, x + 2], name="bx")
    by = ts.compute((h, w), lambda y, x: bx[y, x] + bx[y + 1, x] + bx[y + 2, x], name="by")
    return A, bx, by


def brute_force_points(h, w, rows, cols):
    """Points of bx the box footprint computes over all (rows x cols) tiles of by, clipped."""
    total = 0
    for ty, tx in itertools.product(range(-(-h // rows)), range(-(-w // cols))):
        y0, y1 = ty * rows, min(h, (ty + 1) * rows) - 1 + 2
        x0, x1 = tx * cols, min(w, (tx + 1) * cols) - 1
        total += (y1 - y0 + 1) * (x1 - x0 + 1)
    return total


def test_reads_give_strides_and_reuse():
    n = 8
    a, b = ts.placeholder((n, n), name="a"), ts.placeholder((n, n), name="b")
    k = ts.reduce_axis((0, n), name="k")
    c = ts.compute((n, n), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="c")
    strides = {r.tensor.name: r.strides for r in an.reads(c.op)}
    assert strides == {"a": (n, 0, 1), "b": (0, 1, n)}      # axes i, j, k


def test_reads_through_inlined_stages():
    A, bx, by = blur(6, 5)
    direct = an.reads(by.op)
    assert {r.tensor.name for r in direct} == {"bx"} and len(direct) == 3
    inlined = an.reads(by.op, [bx.op])
    assert {r.tensor.name for r in inlined} == {"A"} and len(inlined) == 9
    assert all(r.strides == (7, 1) for r in inlined)


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 9), rows=st.integers(1, 13), cols=st.integers(1, 10))
def test_tile_regions_are_exact(h, w, rows, cols):
    A, bx, by = blur(h, w)
    regions = an.tile_regions(by.op, (rows, cols), [bx.op])
    r = regions["bx"]
    assert r.extents == (min(rows, h) + 2, min(cols, w))
    assert r.computed == brute_force_points(h, w, rows, cols)
    assert r.size == (h + 2) * w
    assert regions["A"].extents == (min(rows, h) + 2, min(cols, w) + 2)


def test_whole_tensor_tile_has_no_redundancy():
    A, bx, by = blur(10, 7)
    r = an.tile_regions(by.op, (10, 7), [bx.op])["bx"]
    assert r.redundancy == 1.0 and r.volume == 12 * 7


def test_register_footprint_counts_one_reduction_step():
    n = 64
    a, b = ts.placeholder((n, n), name="a"), ts.placeholder((n, n), name="b")
    k = ts.reduce_axis((0, n), name="k")
    c = ts.compute((n, n), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="c")
    regions = an.register_footprint(c.op, (8, 32))
    assert regions["a"].extents == (8, 1) and regions["b"].extents == (1, 32)


def test_producer_must_be_read_by_the_tile():
    A, bx, by = blur(4, 4)
    other = ts.compute((4, 4), lambda y, x: A[y, x] * 2.0, name="other")
    with pytest.raises(ValueError, match="other is computed at the tile of by but no stage"):
        an.tile_regions(by.op, (2, 4), [other.op])


def test_symbolic_sizes_are_not_modelable():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(an.NotModelable, match="symbolic"):
        an.tile_regions(B.op, (4,))


def test_gather_touches_its_whole_dimension_or_what_clamps_it():
    idx = ts.placeholder((8,), dtype="int32", name="idx")
    C = ts.placeholder((8, 6), name="C")
    G = ts.compute((8, 6), lambda i, j: C[idx[i], j], name="G")
    regions = an.tile_regions(G.op, (4, 2))
    assert regions["C"].extents == (8, 2) and regions["idx"].extents == (4,)
    assert regions["C"].computed == 2 * 3 * 8 * 2          # every tile: all 8 rows of its 2 columns
    assert [r.strides for r in an.reads(G.op) if r.tensor.name == "C"] == [(None, 1)]
    V = ts.placeholder((8, 6), name="V")
    lut = ts.compute((8, 6), lambda i, j: C[ts.cast("int32", ts.clamp(V[i, j], 0.0, 1.0) * 4.0 + 0.5), j], name="lut")
    assert an.tile_regions(lut.op, (8, 6))["C"].extents == (5, 6)     # rows 0..4: the clamp bounds it


def pyramid_step(n, up):
    """A 2x downsampling ([1 2 1] at 2x) or upsampling (x // 2, (x + 1) // 2) of a computed level."""
    A = ts.placeholder((2 * n + 3,), name="A")
    P = ts.compute((2 * n + 3,), lambda x: A[x] * 2.0, name="P")
    if up:
        m = 2 * (2 * n + 3)
        out = ts.compute((m,), lambda x: P[ts.min(x // 2, 2 * n + 2)] + P[ts.min((x + 1) // 2, 2 * n + 2)],
                         name="out")
    else:
        out = ts.compute((n + 1,), lambda x: P[ts.max(2 * x - 1, 0)] + P[2 * x] + P[2 * x + 1], name="out")
    return P, out


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 20), size=st.integers(1, 9), up=st.booleans())
def test_pyramid_regions_are_exact(n, size, up):
    P, out = pyramid_step(n, up)
    extent = int(out.shape[0])
    boxes = []
    for start in range(0, extent, size):
        xs = range(start, min(start + size, extent))
        touched = ([min(x // 2, 2 * n + 2) for x in xs] + [min((x + 1) // 2, 2 * n + 2) for x in xs] if up else
                   [i for x in xs for i in (max(2 * x - 1, 0), 2 * x, 2 * x + 1)])
        boxes.append(max(touched) - min(touched) + 1)
    region = an.tile_regions(out.op, (size,), [P.op])["P"]
    assert region.extents == (max(boxes),) and region.computed == sum(boxes)
    assert an.tile_regions(out.op, (size,), [P.op])["A"].computed == sum(boxes)


def test_bad_tile_arguments():
    A, bx, by = blur(4, 4)
    with pytest.raises(ValueError, match="tile of by: 1 sizes for 2 axes"):
        an.tile_regions(by.op, (2,))
    with pytest.raises(ValueError, match="must be positive"):
        an.tile_regions(by.op, (0, 2))
    assert np.isclose(an.tile_regions(by.op, (1, 4), [bx.op])["bx"].redundancy, 3 * 4 * 4 / 24)


def test_footprints_of_one_tiling_follow_only_the_members_a_list_adds(monkeypatch):
    """TileFootprints keeps the composition after every prefix of a member list: asking again for a
    prefix (members stored whole after a round) or for a longer list reads only the new members' boxes,
    and every answer equals tile_regions computed afresh."""
    A = ts.placeholder((20, 18), name="A")
    p = ts.compute((20, 18), lambda y, x: A[y, x] * 2.0, name="p")
    q = ts.compute((19, 18), lambda y, x: p[y, x] + p[y + 1, x], name="q")
    r = ts.compute((18, 17), lambda y, x: q[y, x] + q[y + 1, x + 1], name="r")
    boxes = []
    real = an._read_box
    monkeypatch.setattr(an, "_read_box", lambda *a: boxes.append(a[0].tensor.name) or real(*a))
    feet = an.TileFootprints(r.op, (4, 17))
    for members, new_reads in (([q.op, p.op], ["p", "p", "A"]), ([q.op], []), ([q.op, p.op], [])):
        before = len(boxes)
        got = feet.regions(members)
        assert boxes[before:] == new_reads
        assert got == an.tile_regions(r.op, (4, 17), members)
    assert an.TileFootprints(r.op, (4, 17)).regions([q.op])["p"].extents == (6, 18)
