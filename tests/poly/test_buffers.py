"""Buffers of stages stored outside the loop they are computed at: their extent and folding."""
from __future__ import annotations

import numpy as np
import pytest
from .helpers import model_of

import tesched as ts
from tesched.poly.buffers import fold_is_safe


def blur_schedule(n: int = 12, m: int = 6, strips: int | None = None):
    A = ts.placeholder((n + 2, m + 2), name="A")
    bx = ts.compute((n + 2, m), lambda y, x: A[y, x] + A[y, x + 1] + A[y, x + 2], name="blur_x")
    by = ts.compute((n, m), lambda y, x: bx[y, x] + bx[y + 1, x] + bx[y + 2, x], name="blur_y")
    s = ts.create_schedule(by.op)
    y = s[by].op.axis[0]
    if strips is None:
        s[bx].store_root()
        s[bx].compute_at(s[by], y)
    else:
        yo, yi = s[by].split(y, factor=strips)
        s[bx].store_at(s[by], yo)
        s[bx].compute_at(s[by], yi)
    return s, [A, by]


def stage(model, name):
    return next(sm for sm in model.stages if sm.name == name)


def test_a_three_row_window_folds_to_four_rows_and_no_fewer():
    model = model_of(*blur_schedule())
    sm = stage(model, "blur_x")
    assert sm.buffer.folds == {0: 4} and sm.buffer.shape == [4, 6]
    assert fold_is_safe(model, sm, 0, 4) and fold_is_safe(model, sm, 0, 8)
    assert not fold_is_safe(model, sm, 0, 2)      # a row would be overwritten while still read
    assert not fold_is_safe(model, sm, 1, 4)      # every column of a row is live at once


def test_hoisted_storage_per_strip_covers_the_strip_and_its_halo():
    model = model_of(*blur_schedule(n=16, strips=8))
    sm = stage(model, "blur_x")
    assert sm.store_len == 1 and sm.prefix_len == 2 and sm.hoisted
    assert sm.buffer.folds == {0: 4}
    assert str(sm.storage.dim_max(0)) != str(sm.storage.dim_min(0))


def test_a_strip_too_short_to_fold_keeps_its_rows():
    model = model_of(*blur_schedule(n=16, strips=1))    # each strip is one row: nothing slides
    sm = stage(model, "blur_x")
    assert sm.buffer.folds == {} and sm.buffer.shape == [3, 6]


def test_the_ir_shows_the_fold_and_the_c_indexes_modulo():
    s, args = blur_schedule()
    assert "dimension 0 folded modulo 4" in str(ts.lower(s, args))
    assert "% 4)" in ts.build(s, args).c_source        # the row index modulo the fold


@pytest.mark.parametrize("store", ["root", "at"])
def test_the_origin_of_a_hoisted_buffer_follows_its_storage_loop(store):
    s, args = blur_schedule(n=16, strips=None if store == "root" else 8)
    text = str(ts.lower(s, args))
    assert text.index("allocate blur_x") < text.index("produce blur_x")
    assert text.count("allocate blur_x") == 1


def test_every_output_of_a_multi_output_stage_is_folded_alike(rand):
    """A sliding window over a two-output producer: both buffers keep 2 rows, indexed modulo 2 (the second
    output once kept the unfolded index into a folded-size buffer and wrote past its end)."""
    A = ts.placeholder((9, 6), name="A")
    B0, B1 = ts.compute((9, 6), lambda i, j: (A[i, j] * 2.0, A[i, j] + 1.0), name="B")
    O = ts.compute((8, 6), lambda i, j: B0[i, j] + B1[i + 1, j], name="O")
    s = ts.create_schedule(O.op)
    s[B0].compute_at(s[O], O.op.axis[0])
    s[B1].store_root()
    f = ts.build(s, [A, O], name="two_output_window")
    assert str(f.lowered).count("dimension 0 folded modulo 2") == 2
    a = rand((9, 6))
    np.testing.assert_allclose(f(a), a[:-1] * 2 + a[1:] + 1, rtol=1e-6)
