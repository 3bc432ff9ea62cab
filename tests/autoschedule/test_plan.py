"""Tests of schedules as data: JSON round trips, applying a plan, and plans that do not fit."""
import json

import numpy as np
import pytest

import tesched as ts
from tesched.autoschedule.auto import explanation_of
from tesched.autoschedule.plan import Plan, StagePlan, apply_plan
from tests.autoschedule.helpers import blur, data, matmul_relu


def test_plan_round_trips_through_json():
    inputs, outputs, _ = matmul_relu()
    plan = explanation_of(ts.auto_schedule(outputs)).plan
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again.key() == plan.key() and again.stages[0].reasons == plan.stages[0].reasons


def test_reasons_do_not_change_the_key():
    p = StagePlan(1, "bx", "inline")
    assert Plan((p,)).key() == Plan((p.with_("because"),)).key()
    assert Plan((p,)).key() != Plan((p.with_(placement="root"),)).key()


def test_applied_plan_computes_the_same():
    inputs, outputs, reference = blur(9, 13)
    plan = Plan((StagePlan(1, "bx", "at", host=2, level=0, vectorize=True),
                 StagePlan(2, "by", "root", tile=(4, 13), parallel=1, vectorize=True)))
    s = apply_plan(ts.create_schedule(outputs[0].op), plan)
    a = data(11, 15)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_plans_that_do_not_fit():
    inputs, outputs, _ = blur()
    with pytest.raises(ValueError, match="stage 1 is bx, the plan names C"):
        apply_plan(ts.create_schedule(outputs[0].op), Plan((StagePlan(1, "C", "inline"),)))
    with pytest.raises(ValueError, match="placement 'nowhere' is not one of"):
        StagePlan(1, "bx", "nowhere")
    with pytest.raises(ValueError, match="needs a host stage"):
        StagePlan(1, "bx", "at")
    with pytest.raises(ValueError, match="not a schedule plan"):
        Plan.from_json({"nothing": []})
    bad = Plan((StagePlan(1, "bx", "at", host=2), StagePlan(2, "by", "root", tile=(3,))))
    with pytest.raises(ValueError, match="does not give one size per axis"):
        apply_plan(ts.create_schedule(outputs[0].op), bad)


def test_store_level_makes_a_sliding_window_and_round_trips():
    inputs, outputs, reference = blur(24, 20)
    plan = Plan((StagePlan(1, "bx", "at", host=2, level=1, store_level=0, vectorize=True),
                 StagePlan(2, "by", "root", tile=(1, 20), band=(8, 20), parallel=1, vectorize=True)))
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))).key() == plan.key()
    s = apply_plan(ts.create_schedule(outputs[0].op), plan)
    ts.check_schedule(s)
    text = str(ts.lower(s, inputs + outputs))
    assert "folded modulo 4" in text
    a = data(26, 22)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_store_levels_that_do_not_fit():
    inputs, outputs, _ = blur(24, 20)
    with pytest.raises(ValueError, match="store_level 0 needs placement 'at'"):
        StagePlan(1, "bx", "root", store_level=0)
    inside = Plan((StagePlan(1, "bx", "at", host=2, level=0, store_level=1),
                   StagePlan(2, "by", "root", tile=(1, 20), band=(8, 20))))
    with pytest.raises(ValueError, match="store_level 1 is inside the loop it is computed at"):
        apply_plan(ts.create_schedule(outputs[0].op), inside)


def test_scatter_plans_round_trip_and_refuse_what_does_not_fit():
    img = ts.placeholder((8, 6), "int32", name="img")
    ry, rx = ts.reduce_axis((0, 8), name="ry"), ts.reduce_axis((0, 6), name="rx")
    hist = ts.scatter_add((4,), img[ry, rx], 1.0, [ry, rx], name="hist")
    plan = Plan((StagePlan(1, "hist", "root", scatter="private", copies=4),))
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))).key() == plan.key()
    s = apply_plan(ts.create_schedule(hist.op), plan)
    a = np.random.default_rng(0).integers(0, 4, (8, 6)).astype(np.int32)
    np.testing.assert_allclose(ts.build(s, [img, hist])(a), np.bincount(a.ravel(), minlength=4))
    with pytest.raises(ValueError, match="scatter 'many' with 0 copies is not one of"):
        StagePlan(1, "hist", "root", scatter="many")
    with pytest.raises(ValueError, match="private: at least 2 copies"):
        StagePlan(1, "hist", "root", scatter="private", copies=1)
    with pytest.raises(ValueError, match="scatter 'atomic' needs a root scatter stage"):
        apply_plan(ts.create_schedule(hist.op), Plan((StagePlan(0, "img", "root", scatter="atomic"),)))
