"""Tests of the loops of banded hosts: the region and trip count of every outer loop (bands first), the
folded buffer of a sliding window, and the sliding windows ``auto_schedule`` picks (computed right)."""
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.autoschedule import cost
from tesched.autoschedule.auto import explanation_of
from tesched.autoschedule.bands import level_tiles, level_trips
from tesched.autoschedule.machine import Machine
from tesched.autoschedule.plan import StagePlan, apply_plan
from tests.autoschedule.helpers import blur, data, pipelines

SMALL_L1 = Machine(vector_bytes=32, threads=2, registers=16, l1_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=8 << 20)


def test_level_tiles_and_trips_count_band_loops_first():
    plan = StagePlan(2, "by", "root", tile=(1, 64), band=(32, 64))
    assert level_tiles(plan, [100, 256]) == [[32, 256], [32, 64], [1, 64]]
    assert level_trips(plan, [100, 256]) == [4, 4, 32]
    rows = StagePlan(2, "by", "root", tile=(8, 256))
    assert level_tiles(rows, [100, 256]) == [[8, 256]] and level_trips(rows, [100, 256]) == [13]
    ordered = StagePlan(3, "g", "root", tile=(1, 1, 16), outer_order=(1, 2, 0))
    assert level_tiles(ordered, [8, 4, 64]) == [[8, 1, 64], [8, 1, 16], [1, 1, 16]]


def test_folded_extents_fold_the_one_sliding_dimension():
    assert cost.folded_extents((3, 1024), (34, 1024)) == (4, 1024)
    assert cost.folded_extents((5, 256), (68, 256)) == (8, 256)
    assert cost.folded_extents((3, 256), (34, 1024)) == (34, 1024)     # two dimensions differ: no fold
    assert cost.folded_extents((1, 64), (1, 64)) == (1, 64)


def test_auto_schedule_slides_a_window_when_the_buffer_then_fits_in_l1():
    inputs, outputs, reference = blur(256, 1024)
    s = ts.auto_schedule(outputs, SMALL_L1)
    text = ts.explain_schedule(s)
    assert "stored at outer loop 0 (a sliding window" in text and "a loop per row" in text
    bx = next(p for p in explanation_of(s).plan.stages if p.stage == "bx")
    assert bx.store_level == 0 and bx.level == 1
    assert "folded modulo 4" in str(ts.lower(s, inputs + outputs))
    a = data(258, 1026)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-5)


@settings(max_examples=8, deadline=None)
@given(pipelines(st.integers(12, 60), st.integers(6, 48), st.integers(2, 3)), st.sampled_from([4, 8, 16]), st.data())
def test_sliding_windows_on_random_chains_stay_correct(pipeline, band, draw):
    """Every stage computed at a tile of a random chain gets a random sliding window (storage at a loop
    enclosing its compute loop) in bands of random height; the result must not change."""
    A, out, ref = pipeline
    plan = explanation_of(ts.auto_schedule(out, SMALL_L1)).plan
    extents = [int(d) for d in out.shape]
    host = next(p for p in plan.stages if p.stage == out.op.name)
    parallel = draw.draw(st.sampled_from([0, 1]))
    host = host.with_(tile=(1, extents[1]), band=(min(band, extents[0]), extents[1]), parallel=parallel)
    plan = plan.replace_stage(host)
    for p in plan.stages:
        if p.placement == "at" and p.host == host.index and not p.rfactor:
            compute = draw.draw(st.sampled_from([0, 1]))
            store = draw.draw(st.sampled_from([None, 0][: compute + 1]))
            plan = plan.replace_stage(p.with_(level=compute, store_level=store))
    s = ts.create_schedule(out.op)
    try:
        apply_plan(s, plan)
        ts.check_schedule(s)
    except ts.ScheduleError:   # a producer placed inside a loop some reader of it runs outside: refused
        assume(False)
    a = data(*[int(d) for d in A.shape])
    np.testing.assert_allclose(ts.build(s, [A, out])(a), ref(a.astype(np.float64)), rtol=1e-4, atol=1e-4)
