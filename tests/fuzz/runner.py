"""Run numbered fuzz cases in a child process and tally what came back.

The parent starts ``python -m tests.fuzz.worker KIND FIRST LAST``; the child announces each case before
running it and prints one JSON line of result after it. If the child dies (a segfault) or stays silent
longer than the case timeout (a hang), the announced case is recorded as ``crash`` or ``hang`` and a new
child continues from the next case. This module knows nothing of what a case does.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAILURES = ("wrong", "crash", "hang", "error", "unnamed")


@dataclass
class Tally:
    """Results of one fuzzer: a status per case, and the records of failures and of lowering times."""

    kind: str
    statuses: Counter = field(default_factory=Counter)
    failures: list[dict] = field(default_factory=list)
    lower_times: list[float] = field(default_factory=list)         # wall seconds of each lowering
    lower_cpu_times: list[float] = field(default_factory=list)     # CPU seconds of each lowering
    rejections: Counter = field(default_factory=Counter)
    echo: bool = False                 # print each failure to stderr as it comes (a long run's progress)

    def add(self, record: dict) -> None:
        self.statuses[record["status"]] += 1
        if record.get("lower_s") is not None:
            self.lower_times.append(record["lower_s"])
        if record.get("lower_cpu_s") is not None:
            self.lower_cpu_times.append(record["lower_cpu_s"])
        if record["status"] in FAILURES or record.get("slow"):
            self.failures.append(record)
            if self.echo:
                print(f"  {self.kind}:{record.get('case')} {record['status']}{' (slow)' if record.get('slow') else ''}"
                      f" {json.dumps(record, default=str)[:400]}", file=sys.stderr, flush=True)
        if record["status"] == "rejected":
            self.rejections[record.get("detail", "")[:90]] += 1

    @property
    def total(self) -> int:
        return sum(self.statuses.values())


def _labels(kind: str, case: int) -> dict:
    """What case ``case`` of ``kind`` is (its pipeline, mutation or row), for a case that left no record."""
    from .worker import fuzzer
    return fuzzer(kind).describe_case(case)


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_cases(kind: str, first: int, last: int, timeout: float = 120.0, env: dict | None = None,
              progress: bool = False) -> Tally:
    """Run cases ``first..last-1`` of fuzzer ``kind`` in child processes, restarting after a crash."""
    tally = Tally(kind, echo=progress)
    child_env = dict(os.environ)
    child_env["PYTHONPATH"] = str(ROOT) + os.pathsep + child_env.get("PYTHONPATH", "")
    child_env.update(env or {})
    start = first
    while start < last:
        failed_at = _run_child(kind, start, last, timeout, child_env, tally, progress)
        if failed_at is None:
            break
        start = failed_at + 1
    return tally


def _run_child(kind: str, first: int, last: int, timeout: float, env: dict, tally: Tally,
               progress: bool) -> int | None:
    """Run cases from ``first`` in one child; the case it died or hung on, or None if it finished."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker", kind, str(first), str(last)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]
    current, deadline = None, time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            proc.kill()
            proc.wait()
            case = first if current is None else current
            tally.add({**_labels(kind, case), "case": case, "status": "hang",
                       "detail": f"no answer in {timeout:.0f} s"})
            return case
        if line is None:
            code = proc.wait()
            if current is None and code == 0:
                return None
            if current is None:
                raise RuntimeError(f"the {kind} fuzzer's worker failed outside any case:\n{''.join(errors)}")
            case = current
            tally.add({**_labels(kind, case), "case": case, "status": "crash",
                       "detail": f"child exited with {code}: {''.join(errors)[-600:]}"})
            return case
        message = json.loads(line)
        if "start" in message:
            current, deadline = message["start"], time.monotonic() + timeout
            continue
        tally.add(message)
        current = None
        if progress and tally.total % 100 == 0:
            print(f"  {kind}: {tally.total} cases", file=sys.stderr, flush=True)
