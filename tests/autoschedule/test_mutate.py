"""Tests of the search's neighbourhoods: sliding-window variants of row bands, and random one-decision
mutations (storage levels included) that are either rejected by the checks or compute the pipeline."""
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.autoschedule.auto import explanation_of
from tesched.autoschedule.mutate import mutate, sliding_neighbours
from tesched.autoschedule.plan import Plan, StagePlan, apply_plan
from tesched.errors import ScheduleError
from tests.autoschedule.helpers import blur, data


def _blur_rows(h=40, w=24):
    inputs, outputs, reference = blur(h, w)
    plan = Plan((StagePlan(1, "bx", "at", host=2, level=0, vectorize=True),
                 StagePlan(2, "by", "root", tile=(8, w), parallel=1, vectorize=True)))
    return inputs, outputs, reference, plan


def test_sliding_neighbour_of_row_bands():
    inputs, outputs, reference, plan = _blur_rows()
    sch = ts.create_schedule(outputs[0].op)
    (slid,) = sliding_neighbours(sch, plan)
    bx, by = slid.stages
    assert by.band == (8, 24) and by.tile == (1, 24) and bx.level == 1 and bx.store_level == 0
    s = apply_plan(ts.create_schedule(outputs[0].op), slid)
    ts.check_schedule(s)
    a = data(42, 26)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert sliding_neighbours(sch, slid) == []          # already a window: nothing more to slide


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_random_mutations_are_rejected_or_compute_the_pipeline(seed):
    inputs, outputs, reference = blur(20, 36)
    rng = random.Random(seed)
    plan = explanation_of(ts.auto_schedule(outputs)).plan
    for _ in range(3):
        plan = mutate(ts.create_schedule(outputs[0].op), plan, rng)
    s = ts.create_schedule(outputs[0].op)
    try:
        apply_plan(s, plan)
        ts.check_schedule(s)
    except (ScheduleError, ValueError):
        return
    a = data(22, 38)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_store_mutation_keeps_the_storage_outside_the_compute_loop():
    _, outputs, _, rows = _blur_rows()
    sch = ts.create_schedule(outputs[0].op)
    plan = sliding_neighbours(sch, rows)[0]
    plan = plan.replace_stage(plan.stages[0].with_(store_level=None))
    levels = set()
    for seed in range(60):
        new = mutate(sch, plan, random.Random(seed))
        bx = new.stages[0]
        if bx.placement == "at" and bx.store_level is not None:
            levels.add((bx.level, bx.store_level))
            assert bx.level < 0 or bx.store_level <= bx.level
    assert (1, 0) in levels, "some mutation stores the buffer further out"


def test_mutated_store_level_inside_the_compute_loop_is_refused():
    _, outputs, _, rows = _blur_rows()
    plan = sliding_neighbours(ts.create_schedule(outputs[0].op), rows)[0]
    bad = plan.replace_stage(plan.stages[0].with_(level=0, store_level=1))
    with pytest.raises(ValueError, match="inside the loop it is computed at"):
        apply_plan(ts.create_schedule(outputs[0].op), bad)
