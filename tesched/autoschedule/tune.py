"""``tune``: measured search around ``auto_schedule``, recorded in a tuning database.

The search (Ansor/Droplet style) starts from the analytical plan and proceeds in rounds. Each round
proposes up to ``batch`` new candidates: the sliding-window variant of the best plan so far and its
tile-size neighbours (coordinate descent), then random one-decision mutations of the best few (evolution), skipping plans already tried.
Every proposal is applied to a fresh schedule and checked with the dependence analysis; an illegal one is
recorded as failed and costs no measurement. Legal ones are built in parallel and timed one at a time
per host (:mod:`.measure`) on the executor's workers, and each result is appended to the database. A plan
the database already holds for this workload and target is not measured again: its recorded time is
used, so an interrupted run resumes where it stopped, and a run with the same seed over the same
database replays the same proposals and returns the same best plan. A trial counts whether it was
measured, replayed or rejected, and the search stops after ``trials`` trials or when
``1 - CONFIRM_SHARE`` of ``timeout`` is spent. Single timings on a busy machine mislead, so the best few
plans and the analytical one (the *finalists*) are then timed again, up to :data:`CONFIRM_ROUNDS` rounds
one after another (rounds after the first only while ``timeout`` lasts), and the least median wins; these confirmations are recorded too (``confirm``), and a
replay that measured nothing new takes them from the database.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from tesched.autoschedule.auto import Explanation, as_outputs, auto_schedule, explanation_of, record
from tesched.autoschedule.database import TuningDatabase, TuningRecord, median_seconds, seconds_or_inf
from tesched.autoschedule.machine import host_machine
from tesched.autoschedule.measure import MeasureTask, measure, param_values, random_inputs, result, submit
from tesched.autoschedule.mutate import mutate, sliding_neighbours, tile_neighbours
from tesched.autoschedule.plan import Plan, apply_plan
from tesched.autoschedule.progress import Progress
from tesched.autoschedule.workload import workload_hash
from tesched.driver.build import build
from tesched.driver.kernel import Kernel
from tesched.errors import ScheduleError
from tesched.lower.pipeline import check_schedule
from tesched.schedule.schedule import Schedule, create_schedule
from tesched.te.tensor import Tensor

BATCH = 8
ELITE = 4
FINALISTS = 3
CONFIRM_ROUNDS = 3
CONFIRM_SHARE = 0.15


@dataclass(frozen=True)
class Trial:
    """One candidate: its plan, seconds (None if it failed), error, and whether it came from the database."""

    plan: Plan
    seconds: float | None
    error: str | None = None
    from_database: bool = False


@dataclass
class TuneResult:
    """The best schedule found, its kernel and time, and every trial in order."""

    schedule: Schedule
    kernel: Kernel
    best_seconds: float
    plan: Plan
    history: list[Trial] = field(default_factory=list)


def _default_executor() -> concurrent.futures.Executor:
    workers = max(1, min(2, os.cpu_count() or 1))
    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def tune(outputs: Any, args: Sequence[Tensor], trials: int = 64, timeout: float = 60.0,
         db: str | os.PathLike | None = "tuning.json", seed: int = 0, executor: Any = None,
         progress: bool = True, candidate_timeout: float = 30.0) -> TuneResult:
    """Search schedules for ``outputs`` by measuring them, starting from ``auto_schedule``.

    Parameters
    ----------
    outputs
        A tensor or a list of tensors (one schedule for all).
    args
        The kernel's tensors in call order (inputs and outputs), as for ``build``.
    trials
        Candidates to try (measured, replayed from ``db`` or rejected as illegal).
    timeout
        Seconds for the whole search; it stops proposing once they are spent.
    db
        The tuning database (JSON lines), read to resume and appended to; ``None`` for none.
    seed
        Seed of the search's random choices (and of the measured inputs).
    executor
        A ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` whose workers build and time
        candidates; by default two local processes.
    progress
        Show a progress bar (tqdm if installed, else a status line).
    candidate_timeout
        Seconds after which a candidate still building or running is recorded as failed.

    Returns
    -------
    TuneResult
        ``.schedule``, ``.kernel``, ``.best_seconds``, ``.history`` (and ``.plan``).
    """
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"tune: trials must be a positive int, got {trials!r}")
    if timeout <= 0:
        raise ValueError(f"tune: timeout must be positive, got {timeout!r}")
    ops = as_outputs(outputs)
    args = list(args)
    start = time.perf_counter()
    base = auto_schedule(ops)
    first = explanation_of(base)
    assert first is not None
    fresh = create_schedule(ops)
    machine = host_machine()
    workload, target = workload_hash(fresh), machine.key()
    database = TuningDatabase(db)
    known = database.lookup(workload, target)
    rng = random.Random(seed)
    history: list[Trial] = []
    tried: dict[str, Trial] = {}
    own_executor = executor is None
    pool = _default_executor() if own_executor else executor
    bar = Progress(trials, f"tune {', '.join(op.name for op in ops)}", progress)
    queue: list[Plan] = [first.plan]
    search_until = start + timeout * (1 - CONFIRM_SHARE)
    measured = False
    try:
        while len(history) < trials and time.perf_counter() < search_until:
            batch = _propose(fresh, queue, tried, history, rng, min(BATCH, trials - len(history)))
            if not batch:
                break
            pending = []
            for plan in batch:
                key = plan.key()
                if key in known:
                    rec = known[key]
                    _finish(tried, history, Trial(plan, rec.seconds, rec.error, True), bar)
                    continue
                if time.perf_counter() >= search_until:
                    break
                error = _illegal(ops, plan)
                if error is not None:
                    trial = Trial(plan, None, error)
                    database.add(TuningRecord(workload, target, plan, None, error))
                    _finish(tried, history, trial, bar)
                    continue
                pending.append((plan, submit(pool, measure, MeasureTask(tuple(ops), tuple(args), plan, seed, machine.target))))
            for plan, future in pending:
                res = result(future, candidate_timeout)
                database.add(TuningRecord(workload, target, plan, res.seconds, res.error))
                _finish(tried, history, Trial(plan, res.seconds, res.error), bar)
                measured = True
        finalists = _finalists(history, first.plan)
        confirmed = database.confirmations(workload, target)
        if measured or not all(p.key() in confirmed for p in finalists):
            for round_ in range(CONFIRM_ROUNDS if len(finalists) > 1 else 0):
                for plan in finalists[round_ % len(finalists):] + finalists[:round_ % len(finalists)]:
                    if round_ and time.perf_counter() - start >= timeout:
                        break
                    task = MeasureTask(tuple(ops), tuple(args), plan, seed, machine.target)
                    res = result(submit(pool, measure, task), candidate_timeout)
                    database.add(TuningRecord(workload, target, plan, res.seconds, res.error, confirm=True))
            confirmed = database.confirmations(workload, target)
    finally:
        bar.close()
        if own_executor:
            pool.shutdown(wait=False, cancel_futures=True)
    return _best(ops, args, history, first, start, finalists, confirmed)


def _finalists(history: list[Trial], first: Plan) -> list[Plan]:
    """The :data:`FINALISTS` fastest distinct plans, and the analytical plan if it ran."""
    ranked = sorted((t for t in history if t.seconds is not None), key=seconds_or_inf)
    plans = [t.plan for t in ranked[:FINALISTS]]
    if any(t.plan.key() == first.key() and t.seconds is not None for t in history) and \
            first.key() not in {p.key() for p in plans}:
        plans.append(first)
    return plans


def _finish(tried: dict[str, Trial], history: list[Trial], trial: Trial, bar: Progress) -> None:
    tried[trial.plan.key()] = trial
    history.append(trial)
    done = [t.seconds for t in history if t.seconds is not None]
    bar.update(min(done) if done else None)


def _illegal(ops: list, plan: Plan) -> str | None:
    try:
        sch = create_schedule(ops)
        apply_plan(sch, plan)
        check_schedule(sch)
    except (ScheduleError, ValueError, TypeError) as err:
        return f"illegal: {err}"
    return None


def _propose(sch: Schedule, queue: list[Plan], tried: dict[str, Trial], history: list[Trial],
             rng: random.Random, count: int) -> list[Plan]:
    out: list[Plan] = []
    seen = set(tried)

    def take(plan: Plan) -> None:
        key = plan.key()
        if key not in seen and len(out) < count:
            seen.add(key)
            out.append(plan)

    while queue:
        take(queue.pop(0))
    ranked = sorted((t for t in history if t.seconds is not None), key=seconds_or_inf)
    if ranked:
        best = ranked[0].plan
        for plan in (sliding_neighbours(sch, best) + tile_neighbours(sch, best))[: max(1, count // 2)]:
            take(plan)
        elite = [t.plan for t in ranked[:ELITE]]
        for _ in range(count * 20):
            if len(out) >= count:
                break
            take(mutate(sch, rng.choice(elite), rng))
    return out


def _best(ops: list, args: list[Tensor], history: list[Trial], first: Explanation, start: float,
          finalists: list[Plan], confirmed: dict[str, list[TuningRecord]]) -> TuneResult:
    done = [t for t in history if t.seconds is not None]
    if not done:
        errors = "; ".join(sorted({str(t.error) for t in history})[:3])
        raise ScheduleError(f"tune: no candidate could be built and timed ({errors})")
    timed = [(median_seconds(confirmed[p.key()]), p) for p in finalists if p.key() in confirmed]
    if timed:
        seconds, plan = min(timed, key=lambda item: item[0])
    else:
        best = min(done, key=seconds_or_inf)
        seconds, plan = seconds_or_inf(best), best.plan
    sch = create_schedule(ops)
    apply_plan(sch, plan)
    kernel = build(sch, args, name="tuned")
    reference = create_schedule(ops)
    apply_plan(reference, first.plan)
    _check_same(kernel, build(reference, args, name="auto"), args)
    record(sch, Explanation(plan, first.machine, time.perf_counter() - start, [],
                            f"tune ({len(history)} trials, best {seconds * 1e3:.3f} ms)"))
    return TuneResult(sch, kernel, seconds, plan, history)


def _check_same(kernel: Kernel, reference: Kernel, args: list[Tensor]) -> None:
    """The tuned kernel must compute what the analytical schedule computes (on seeded inputs)."""
    arrays = random_inputs(args, 1234)
    expected = [a.copy() for a in arrays]
    values = param_values(kernel.signature.scalars)
    kernel(*arrays, **values)
    reference(*expected, **values)
    for t, got, want in zip([t for t in args if isinstance(t, Tensor)], arrays, expected):
        if not np.allclose(got, want, rtol=1e-3, atol=1e-3, equal_nan=True):
            raise ScheduleError(f"tune: the best schedule computes a different {t.name} than auto_schedule's")
