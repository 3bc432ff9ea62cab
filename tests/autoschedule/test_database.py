"""Tests of the tuning database: append and read back, corrupt lines reported by number and skipped."""
import pytest

from tesched.autoschedule.database import TuningDatabase, TuningRecord
from tesched.autoschedule.plan import Plan, StagePlan


def plan(tile):
    return Plan((StagePlan(1, "out", "root", tile=(tile,)),))


def test_records_are_appended_and_read_back(tmp_path):
    path = tmp_path / "db.json"
    db = TuningDatabase(path)
    db.add(TuningRecord("w", "t", plan(4), 2.0))
    db.add(TuningRecord("w", "t", plan(8), 1.0))
    db.add(TuningRecord("w", "t", plan(16), None, "timed out"))
    db.add(TuningRecord("w", "other", plan(2), 0.5))
    again = TuningDatabase(path)
    assert len(again.records) == 4
    assert again.best("w", "t").plan.key() == plan(8).key()
    assert again.lookup("w", "t")[plan(16).key()].error == "timed out"
    assert again.best("nothing", "t") is None


def test_corrupt_lines_are_reported_with_their_number(tmp_path):
    path = tmp_path / "db.json"
    TuningDatabase(path).add(TuningRecord("w", "t", plan(4), 2.0))
    with open(path, "a") as f:
        f.write("{not json\n")
        f.write('{"workload": "w", "target": "t", "plan": {"stages": []}, "seconds": "fast"}\n')
        f.write("\n")
    with pytest.warns(UserWarning):
        TuningDatabase(path).add(TuningRecord("w", "t", plan(8), 1.0))
    with pytest.warns(UserWarning) as caught:
        db = TuningDatabase(path)
    messages = [str(w.message) for w in caught]
    assert any("line 2: skipped a corrupt record" in m for m in messages)
    assert any("line 3: skipped a corrupt record (seconds must be a number" in m for m in messages)
    assert len(db.records) == 2 and db.best("w", "t").seconds == 1.0


def test_memory_only_database():
    db = TuningDatabase(None)
    db.add(TuningRecord("w", "t", plan(4), 2.0))
    assert db.best("w", "t").seconds == 2.0


def test_confirmations_decide_the_best_plan():
    db = TuningDatabase(None)
    db.add(TuningRecord("w", "t", plan(4), 1.0))
    db.add(TuningRecord("w", "t", plan(8), 2.0))
    for seconds in (3.0, 2.5, 9.0):
        db.add(TuningRecord("w", "t", plan(4), seconds, confirm=True))
    for seconds in (2.0, 2.2, 1.9):
        db.add(TuningRecord("w", "t", plan(8), seconds, confirm=True))
    assert db.lookup("w", "t")[plan(4).key()].seconds == 1.0      # trials only
    best = db.best("w", "t")
    assert best.plan.key() == plan(8).key() and best.seconds == 2.0
