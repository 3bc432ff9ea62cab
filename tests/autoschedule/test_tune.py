"""Tests of tune and build(tuned=...): the search records every trial, resumes from its database and
replays it deterministically, records failing candidates without crashing, runs on any executor (a
thread pool, a dask.distributed LocalCluster with two workers), and its best kernel is checked against
NumPy."""
import concurrent.futures
import importlib
import json

import numpy as np
import pytest

import tesched as ts
from tesched.autoschedule import measure as measure_module
from tesched.autoschedule.measure import MeasureResult, MeasureTask, measure
from tesched.autoschedule.plan import Plan, StagePlan
from tests.autoschedule.helpers import blur, data


@pytest.fixture(scope="module")
def pool():
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        yield executor


def test_tune_finds_a_correct_kernel_and_records_trials(tmp_path, pool):
    inputs, outputs, reference = blur(16, 32)
    db = tmp_path / "tuning.json"
    result = ts.tune(outputs, inputs + outputs, trials=5, db=db, executor=pool, progress=False)
    assert len(result.history) == 5 and result.best_seconds > 0
    a = data(18, 34)
    np.testing.assert_allclose(result.kernel(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    trials = [line for line in lines if not line["confirm"]]
    assert len(trials) == 5 and {"workload", "target", "plan", "seconds", "version"} <= set(lines[0])
    finalists = {json.dumps(line["plan"]) for line in lines if line["confirm"]}
    assert 2 <= len(finalists) <= 4 and len(lines) - len(trials) == 3 * len(finalists)
    assert "tune (5 trials" in ts.explain_schedule(result.schedule)

    again = ts.tune(outputs, inputs + outputs, trials=5, db=db, executor=pool, progress=False)
    assert all(t.from_database for t in again.history)
    assert again.plan.key() == result.plan.key() and again.best_seconds == result.best_seconds
    assert len(db.read_text().splitlines()) == len(lines)      # nothing measured again

    more = ts.tune(outputs, inputs + outputs, trials=7, db=db, executor=pool, progress=False)
    assert [t.from_database for t in more.history] == [True] * 5 + [False] * 2

    s = ts.create_schedule(outputs[0].op)
    kernel = ts.build(s, inputs + outputs, tuned=db)
    np.testing.assert_allclose(kernel(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert "tuned record of" in ts.explain_schedule(s)


def test_build_tuned_without_a_record_uses_auto_schedule(tmp_path):
    inputs, outputs, reference = blur(6, 8)
    s = ts.create_schedule(outputs[0].op)
    with pytest.warns(UserWarning, match="no record for this workload .*using auto_schedule"):
        kernel = ts.build(s, inputs + outputs, tuned=tmp_path / "empty.json")
    assert "auto_schedule for by" in ts.explain_schedule(s)
    a = data(8, 10)
    np.testing.assert_allclose(kernel(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)
    s = ts.create_schedule(outputs[0].op)
    s[outputs[0]].vectorize(s[outputs[0]].op.axis[1])
    with pytest.raises(ts.ScheduleError, match="must be unscheduled, but by"):
        ts.build(s, inputs + outputs, tuned=tmp_path / "empty.json")


def test_failed_and_timed_out_candidates_are_recorded(tmp_path, pool, monkeypatch):
    inputs, outputs, _ = blur(8, 16)

    def flaky(task: MeasureTask) -> MeasureResult:
        if task.plan.key().count("true") % 2:        # some candidates fail to build
            return MeasureResult(None, "BuildError: the compiler crashed", "host")
        return measure(task)

    monkeypatch.setattr(importlib.import_module("tesched.autoschedule.tune"), "measure", flaky)
    result = ts.tune(outputs, inputs + outputs, trials=6, db=tmp_path / "db.json", executor=pool, progress=False)
    assert len(result.history) == 6
    failed = [t for t in result.history if t.seconds is None]
    assert all("compiler crashed" in t.error or t.error.startswith("illegal") for t in failed)

    class Stuck:
        def submit(self, fn, task):
            future = concurrent.futures.Future()
            return future                               # never completes

    with pytest.raises(ts.ScheduleError, match="no candidate could be built and timed .*timed out after 0 s"):
        ts.tune(outputs, inputs + outputs, trials=2, db=None, executor=Stuck(), progress=False,
                candidate_timeout=0.01)


def test_measure_reports_errors_as_data():
    inputs, outputs, _ = blur(4, 4)
    bad = Plan((StagePlan(2, "by", "root", tile=(1, 2, 3)),))
    res = measure(MeasureTask(tuple(o.op for o in outputs), tuple(inputs + outputs), bad))
    assert res.seconds is None and "ValueError" in res.error
    with measure_module.host_lock(exclusive=True):
        pass
    assert measure_module.lock_path().exists()


def test_tune_arguments():
    inputs, outputs, _ = blur(4, 4)
    with pytest.raises(ValueError, match="trials must be a positive int"):
        ts.tune(outputs, inputs + outputs, trials=0)
    with pytest.raises(ValueError, match="timeout must be positive"):
        ts.tune(outputs, inputs + outputs, timeout=0)


def test_tune_on_a_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask.distributed is an optional extra "
                                      "(pip install tesched[dask])")
    inputs, outputs, reference = blur(8, 16)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        result = ts.tune(outputs, inputs + outputs, trials=3, db=tmp_path / "db.json", executor=client,
                         progress=False)
    assert len(result.history) == 3 and all(t.seconds is not None for t in result.history)
    a = data(10, 18)
    np.testing.assert_allclose(result.kernel(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_tune_measures_kernels_with_runtime_params(tmp_path, pool):
    A = ts.placeholder((20, 40), name="A")
    gain, flip = ts.param("gain"), ts.param("flip", "bool")
    B = ts.compute((20, 40), lambda i, j: ts.if_then_else(flip, A[i, j] * gain, A[i, j]), name="B")
    C = ts.compute((18, 38), lambda i, j: B[i, j] + B[i + 1, j + 1] + B[i + 2, j + 2], name="C")
    result = ts.tune([C], [A, C, gain, flip], trials=3, db=tmp_path / "db.json", executor=pool, progress=False)
    assert all(t.error is None for t in result.history)
    a = np.random.default_rng(0).random((20, 40), dtype=np.float32)
    for g, f in [(2.0, True), (-0.5, False)]:
        b = a * np.float32(g) if f else a
        np.testing.assert_allclose(result.kernel(a, g, f), b[:18, :38] + b[1:19, 1:39] + b[2:, 2:], rtol=1e-5)
