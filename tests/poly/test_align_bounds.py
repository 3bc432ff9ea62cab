"""``align_bounds``: the region a ``compute_at`` stage computes per iteration widened to aligned blocks
(Halide's rule: the start is ``r`` modulo ``m`` and the extent a multiple of ``m``), cut to the tensor's
domain; results against NumPy, regions read from the polyhedral model."""
from __future__ import annotations

import islpy as isl
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tesched as ts
from tesched.errors import ScheduleError

from .helpers import model_of

N = 23


def _stencil(offsets: tuple[int, ...], modulus: int, remainder: int, split: int | None):
    A = ts.placeholder((N + max(offsets),), name="A")
    g = ts.compute((N + max(offsets),), lambda x: A[x] * 2.0 + 1.0, name="g")
    h = ts.compute((N,), lambda x: sum((g[x + o] for o in offsets[1:]), g[x + offsets[0]]), name="h")
    s = ts.create_schedule(h.op)
    at = h.op.axis[0]
    if split is not None:
        at, _ = s[h].split(at, factor=split)
    s[g].compute_at(s[h], at)
    s[g].align_bounds(g.op.axis[0], modulus, remainder)
    return s, A, g, h


def _regions(s, A, h) -> dict[tuple[int, ...], tuple[int, int]]:
    """Per iteration of the loop ``g`` is computed at: the first and last index of ``g`` computed there."""
    model = model_of(s, [A, h])
    sm = next(m for m in model.stages if m.name == "g")
    out: dict[tuple[int, ...], list[int]] = {}

    def visit(point):
        values = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
                  for k in range(point.get_space().dim(isl.dim_type.set))]
        key, y = tuple(values[:-1]), values[-1]
        lo_hi = out.setdefault(key, [y, y])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], y), max(lo_hi[1], y)

    sm.footprint.wrap().foreach_point(visit)
    return {k: (v[0], v[1]) for k, v in out.items()}


@settings(max_examples=15, deadline=None)
@given(offsets=st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True).map(lambda o: tuple(sorted(o))),
       modulus=st.integers(1, 5), remainder=st.integers(0, 6), split=st.sampled_from([None, 2, 4, 5]))
def test_regions_are_aligned_blocks_and_values_are_right(offsets, modulus, remainder, split):
    s, A, g, h = _stencil(offsets, modulus, remainder, split)
    size = N + max(offsets)
    r = remainder % modulus
    for it, (lo, hi) in _regions(s, A, h).items():
        assert lo == 0 or lo % modulus == r, (it, lo, hi)                 # starts aligned unless cut at 0
        assert hi == size - 1 or (hi + 1 - r) % modulus == 0, (it, lo, hi)  # ends a block unless cut at the end
    kernel = ts.build(s, [A, h], name=f"aligned_{''.join(map(str, offsets))}_{modulus}_{r}_{split}")
    a = np.random.default_rng(modulus).random(size, dtype=np.float32)
    gv = a.astype(np.float64) * 2 + 1
    want = sum(gv[o:o + N] for o in offsets)
    np.testing.assert_allclose(kernel(a), want, rtol=1e-5)


def test_the_needed_region_is_always_inside():
    s, A, g, h = _stencil((0, 1), 4, 1, None)
    for (x,), (lo, hi) in _regions(s, A, h).items():
        assert lo <= x and x + 1 <= hi


def test_lowered_region_is_the_aligned_block():
    s, A, g, h = _stencil((0, 1), 2, 0, None)
    text = str(ts.lower(s, [A, h]))
    assert "allocate g[float32 * 4]" in text and "x - x % 2" in text


def test_bad_align_bounds_names_the_stage_and_axis():
    s, A, g, h = _stencil((0, 1), 2, 0, None)
    with pytest.raises(ScheduleError, match="align_bounds modulus of g.x"):
        s[g].align_bounds(g.op.axis[0], 0)
    with pytest.raises(ScheduleError, match="align_bounds of g: 'x' is not an axis of g"):
        s[g].align_bounds(h.op.axis[0], 2)
    s[g].bound_extent(g.op.axis[0], 4)
    with pytest.raises(ScheduleError, match="align_bounds of g.x: the axis is bound"):
        s[g].align_bounds(g.op.axis[0], 2)
