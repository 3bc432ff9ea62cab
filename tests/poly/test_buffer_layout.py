"""Layouts a schedule asks of a stage's buffer, beside the ones tesched chooses: ``reorder_storage`` (the
dimensions' order in memory, any rank, with tiles, caches, vectors, symbolic sizes and storage_align) and
``fold_storage`` (a circular buffer of a chosen size, proved safe by isl or refused with the safe size).
Every kernel is checked against NumPy."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tesched as ts
from tesched.errors import ScheduleError
from tesched.ir.nodes import Buffer, BufferScope

from .test_buffers import blur_schedule


@pytest.mark.parametrize("shape, order, strides", [
    ((4, 5, 3), (2, 1, 0), [1, 4, 20]),
    ((4, 5, 3), (0, 2, 1), [15, 1, 5]),
    ((2, 3), (1, 0), [1, 2]),
])
def test_strides_follow_the_memory_order(shape, order, strides):
    buf = Buffer("T", list(shape), "float32", BufferScope.LOCAL, order=order)
    assert buf.strides() == strides and buf.element_count() == int(np.prod(shape))
    assert not buf.row_major and Buffer("T", list(shape), "float32", BufferScope.LOCAL).row_major


def test_order_and_alignment_compose():
    buf = Buffer("T", [4, 6], "float32", BufferScope.LOCAL, aligns={1: (8, 0)}, order=(1, 0))
    # dimension 0 is innermost (stride 1), dimension 1's stride 4 is raised to 8
    assert buf.strides() == [1, 8] and buf.element_count() == 48


def _three_stage(shape, order_of, schedule):
    """``g = f(A) + 1`` through an intermediate ``f`` whose storage is reordered by ``order_of(f)``."""
    A = ts.placeholder(shape, name="A")
    f = ts.compute(shape, lambda *i: A[i] * 2.0, name="f")
    g = ts.compute(shape, lambda *i: f[i] + 1.0, name="g")
    s = ts.create_schedule(g.op)
    axes = order_of(f)
    if axes:
        s[f].reorder_storage(*axes)
    schedule(s, f, g)
    return s, A, f, g


@settings(max_examples=12, deadline=None)
@given(rank=st.integers(2, 4), data=st.data())
def test_any_storage_order_computes_the_same(rank, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    permutation = data.draw(st.permutations(range(rank)))
    placement = data.draw(st.sampled_from(["root", "at_outer", "at_inner"]))
    vectorize = data.draw(st.booleans())

    def schedule(s, f, g):
        if placement != "root":
            s[f].compute_at(s[g], g.op.axis[0 if placement == "at_outer" else rank - 2])
        if vectorize:
            s[g].vectorize(g.op.axis[-1])

    s, A, f, g = _three_stage(shape, lambda f: [f.op.axis[d] for d in permutation], schedule)
    kernel = ts.build(s, [A, g], name=f"reordered_{rank}_{''.join(map(str, permutation))}_{placement}_{vectorize}")
    if list(permutation) != sorted(permutation) and placement == "root":
        assert "reorder_storage" in str(kernel.lowered)
    a = np.random.default_rng(rank).random(shape, dtype=np.float32)
    np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


def test_reordered_column_buffer_is_what_c_indexes():
    """Stored column-major, the intermediate's element (i, j) lives at ``j * rows + i``."""
    s, A, f, g = _three_stage((6, 10), lambda f: [f.op.axis[1], f.op.axis[0]], lambda s, f, g: None)
    with ts.Target("x86-64"):
        code = ts.build(s, [A, g], name="column_major_intermediate")
    assert "stored in dimension order [1, 0]" in str(code.lowered)
    assert re.search(r"f_\d+\[\(\(6 \* i1\w*\) \+ i0\w*\)\] = ", code.c_source), code.c_source
    kernel = ts.build(s, [A, g], name="column_major_intermediate")
    a = np.random.default_rng(0).random((6, 10), dtype=np.float32)
    np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


def test_a_subset_of_axes_keeps_the_others_in_place():
    s, A, f, g = _three_stage((2, 3, 4), lambda f: [f.op.axis[2], f.op.axis[0]], lambda s, f, g: None)
    assert s[f].storage_order == (2, 1, 0)
    a = np.random.default_rng(1).random((2, 3, 4), dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [A, g], name="subset_order")(a), a * 2 + 1, rtol=1e-6)


def test_reordered_cache_with_symbolic_sizes():
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, m), name="A")
    B = ts.compute((n, m), lambda i, j: A[i, j] * 3.0, name="B")
    s = ts.create_schedule(B.op)
    cache = s.cache_read(A, "global", [B])
    s[cache].reorder_storage(s[cache].op.axis[1], s[cache].op.axis[0])
    kernel = ts.build(s, [A, B], name="symbolic_reordered_cache")
    for shape in [(3, 7), (8, 2)]:
        a = np.random.default_rng(2).random(shape, dtype=np.float32)
        np.testing.assert_allclose(kernel(a), a * 3, rtol=1e-6)


@pytest.mark.parametrize("bad, message", [
    (lambda s, f, g: s[f].reorder_storage(f.op.axis[0]), "two or more distinct axes"),
    (lambda s, f, g: s[f].reorder_storage(f.op.axis[0], f.op.axis[0]), "two or more distinct axes"),
    (lambda s, f, g: s[f].reorder_storage(g.op.axis[0], f.op.axis[1]), "is not an axis of f"),
])
def test_bad_reorder_storage_names_the_stage(bad, message):
    s, A, f, g = _three_stage((3, 4), lambda f: [], lambda s, f, g: None)
    with pytest.raises(ScheduleError, match=message):
        bad(s, f, g)


def test_reordering_an_argument_or_an_inlined_stage_is_refused():
    s, A, f, g = _three_stage((3, 4), lambda f: [], lambda s, f, g: None)
    s[g].reorder_storage(g.op.axis[1], g.op.axis[0])
    with pytest.raises(ScheduleError, match="reorder_storage of g: it is a kernel argument"):
        ts.build(s, [A, g], name="reordered_output")
    s, A, f, g = _three_stage((3, 4), lambda f: [f.op.axis[1], f.op.axis[0]], lambda s, f, g: s[f].compute_inline())
    with pytest.raises(ScheduleError, match="reorder_storage of f: it is inlined"):
        ts.build(s, [A, g], name="reordered_inline")


# fold_storage -------------------------------------------------------------------------------------
def _blur_reference(a: np.ndarray) -> np.ndarray:
    bx = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    return bx[:-2] + bx[1:-1] + bx[2:]


@pytest.mark.parametrize("fold", [3, 5, 7])
def test_a_chosen_fold_is_used_when_safe(fold, rand):
    s, args = blur_schedule(n=12, m=6)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], fold)
    kernel = ts.build(s, args, name=f"blur_fold_{fold}")
    assert f"dimension 0 folded modulo {fold}" in str(kernel.lowered)
    a = rand((14, 8))
    np.testing.assert_allclose(kernel(a), _blur_reference(a.astype(np.float64)), rtol=1e-5)


def test_an_unsafe_fold_names_the_smallest_safe_one():
    s, args = blur_schedule(n=12, m=6)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], 2)
    with pytest.raises(ScheduleError, match=r"fold_storage of blur_x\.y by 2: .*the smallest safe fold is 3"):
        ts.build(s, args, name="blur_fold_2")


def test_a_fold_as_large_as_the_storage_folds_nothing(rand):
    s, args = blur_schedule(n=12, m=6)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], 14)
    kernel = ts.build(s, args, name="blur_fold_all")
    assert "folded" not in str(kernel.lowered)
    a = rand((14, 8))
    np.testing.assert_allclose(kernel(a), _blur_reference(a.astype(np.float64)), rtol=1e-5)


def test_strips_fold_within_each_strip(rand):
    s, args = blur_schedule(n=12, m=6, strips=4)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], 3)
    kernel = ts.build(s, args, name="blur_strips_fold_3")
    a = rand((14, 8))
    np.testing.assert_allclose(kernel(a), _blur_reference(a.astype(np.float64)), rtol=1e-5)


@pytest.mark.parametrize("place", ["compute_at", "compute_root"])
def test_folding_where_nothing_is_kept_across_iterations_is_refused(place):
    s, A, f, g = _three_stage((6, 4), lambda f: [], lambda s, f, g: None)
    if place == "compute_at":
        s[f].compute_at(s[g], g.op.axis[0])
    s[f].fold_storage(f.op.axis[0], 2)
    why = "it is stored where it is computed" if place == "compute_at" else "it is computed at the root"
    with pytest.raises(ScheduleError, match=f"fold_storage of f: {why}"):
        ts.build(s, [A, g], name=f"fold_unhoisted_{place}")


def test_one_folded_dimension_per_buffer():
    s, args = blur_schedule(n=12, m=6)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], 3)
    with pytest.raises(ScheduleError, match="dimension y is already folded"):
        bx.fold_storage(bx.op.axis[1], 3)
    with pytest.raises(ScheduleError, match="factor"):
        bx.fold_storage(bx.op.axis[0], 0)


@pytest.mark.parametrize("order", list(itertools.permutations(range(2)))[1:])
def test_a_folded_and_reordered_buffer(order, rand):
    s, args = blur_schedule(n=12, m=6)
    bx = next(st for st in s.stages if st.name == "blur_x")
    bx.fold_storage(bx.op.axis[0], 4)
    bx.reorder_storage(*[bx.op.axis[d] for d in order])
    kernel = ts.build(s, args, name="blur_fold_reordered")
    a = rand((14, 8))
    np.testing.assert_allclose(kernel(a), _blur_reference(a.astype(np.float64)), rtol=1e-5)
