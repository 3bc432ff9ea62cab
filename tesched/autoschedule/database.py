"""The tuning database: one JSON object per line, appended as trials finish.

Each record holds the workload hash, the target key, the schedule plan as data, the measured seconds
(``null`` for a failed or timed-out candidate, with its ``error``), tesched's version and the time.
Records marked ``confirm`` re-time the finalists of a search side by side; when a workload has them, its
best plan is the one with the least median confirmation time. The
file is only appended to (one ``write`` per record, so concurrent writers do not interleave lines); a
line that is not a valid record is reported with its line number (a ``UserWarning``) and skipped. This
module neither measures nor searches.
"""
from __future__ import annotations

import json
import os
import statistics
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
import math
from typing import Any, Protocol

from tesched.autoschedule.plan import Plan
from tesched.version import __version__


@dataclass(frozen=True)
class TuningRecord:
    """One trial: ``seconds`` is None when the candidate failed (``error`` says why)."""

    workload: str
    target: str
    plan: Plan
    seconds: float | None
    error: str | None = None
    version: str = __version__
    confirm: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"workload": self.workload, "target": self.target, "plan": self.plan.to_json(),
                "seconds": self.seconds, "error": self.error, "version": self.version, "time": time.time(),
                "confirm": self.confirm}

    @classmethod
    def from_json(cls, data: Any) -> "TuningRecord":
        if not isinstance(data, dict):
            raise ValueError("a record must be a JSON object")
        seconds = data.get("seconds")
        if seconds is not None and not isinstance(seconds, (int, float)):
            raise ValueError(f"seconds must be a number or null, got {seconds!r}")
        for key in ("workload", "target"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"field {key!r} is missing or not a string")
        return cls(data["workload"], data["target"], Plan.from_json(data.get("plan") or {}),
                   None if seconds is None else float(seconds), data.get("error"), str(data.get("version", "")),
                   bool(data.get("confirm", False)))


class TuningDatabase:
    """Records of one JSON-lines file (created on first write).

    Parameters
    ----------
    path
        The file; ``None`` keeps records in memory only.
    """

    def __init__(self, path: str | os.PathLike | None):
        self.path = None if path is None else Path(path)
        self.records: list[TuningRecord] = []
        if self.path is not None and self.path.exists():
            self.records = list(self._read(self.path))

    @staticmethod
    def _read(path: Path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield TuningRecord.from_json(json.loads(line))
                except (ValueError, TypeError) as err:
                    warnings.warn(f"tuning database {path}, line {number}: skipped a corrupt record ({err})",
                                  UserWarning, stacklevel=4)

    def add(self, record: TuningRecord) -> None:
        """Keep ``record`` and append it to the file."""
        self.records.append(record)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = json.dumps(record.to_json(), sort_keys=True) + "\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def lookup(self, workload: str, target: str) -> dict[str, TuningRecord]:
        """The first trial record of each plan for this workload and target, by plan key."""
        found: dict[str, TuningRecord] = {}
        for r in self.records:
            if r.workload == workload and r.target == target and not r.confirm:
                found.setdefault(r.plan.key(), r)
        return found

    def confirmations(self, workload: str, target: str) -> dict[str, list[TuningRecord]]:
        """Successful confirmation records of this workload and target, by plan key."""
        found: dict[str, list[TuningRecord]] = {}
        for r in self.records:
            if r.workload == workload and r.target == target and r.confirm and r.seconds is not None:
                found.setdefault(r.plan.key(), []).append(r)
        return found

    def best(self, workload: str, target: str) -> TuningRecord | None:
        """The best plan for this workload and target: least median confirmation time if the workload has
        confirmations, else the fastest successful trial (None if there is neither). The record returned
        carries that time."""
        confirmed = self.confirmations(workload, target)
        if confirmed:
            key = min(confirmed, key=lambda k: median_seconds(confirmed[k]))
            return replace(confirmed[key][0], seconds=median_seconds(confirmed[key]))
        done = [r for r in self.lookup(workload, target).values() if r.seconds is not None]
        return min(done, key=seconds_or_inf) if done else None


class Timed(Protocol):
    """A measurement that may have failed (``seconds`` is then ``None``)."""

    @property
    def seconds(self) -> float | None: ...


def seconds_or_inf(item: Timed) -> float:
    """Sort key of measurements: the seconds measured, failures last."""
    return math.inf if item.seconds is None else item.seconds


def median_seconds(records: list[TuningRecord]) -> float:
    """The median time of successful records."""
    return statistics.median(r.seconds for r in records if r.seconds is not None)
