"""What ``ts.build(schedule, args, tuned=...)`` does before building: apply a tuning record.

With ``tuned`` naming a tuning database, the best successful record for the schedule's workload and this
target's machine replaces the schedule's decisions: the plan is applied to ``schedule`` itself, which
must still be unscheduled (fresh from ``create_schedule``). Without a matching record a ``UserWarning``
says so and ``auto_schedule`` schedules it instead. Building is the driver's.
"""
from __future__ import annotations

import os
import warnings

from tesched.autoschedule.auto import Explanation, auto_schedule, record
from tesched.autoschedule.database import TuningDatabase, seconds_or_inf
from tesched.autoschedule.machine import resolve
from tesched.autoschedule.pipeline import scheduled_by_user
from tesched.autoschedule.plan import apply_plan
from tesched.autoschedule.workload import workload_hash
from tesched.errors import ScheduleError
from tesched.schedule.schedule import Schedule
from tesched.target import Target


def apply_tuned(sch: Schedule, db: str | os.PathLike, target: Target | str | None = None) -> bool:
    """Apply the best record of ``db`` for ``sch``'s workload and ``target`` to ``sch``; without one, warn,
    apply ``auto_schedule`` instead and return False."""
    busy = [f"{st.op.name} ({why})" for st in sch.stages if (why := scheduled_by_user(st))]
    if busy:
        raise ScheduleError(f"build(..., tuned=...): the schedule must be unscheduled, but {', '.join(busy)}")
    machine = resolve(target)
    best = TuningDatabase(db).best(workload_hash(sch), machine.key())
    if best is None:
        warnings.warn(f"build(..., tuned={str(db)!r}): no record for this workload on this machine "
                      f"({machine.key()}); using auto_schedule", UserWarning, stacklevel=3)
        auto_schedule(sch, target)
        return False
    apply_plan(sch, best.plan)
    record(sch, Explanation(best.plan, machine, 0.0, [], f"tuned record of {db} ({seconds_or_inf(best) * 1e3:.3f} ms)"))
    return True
