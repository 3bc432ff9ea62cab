"""``build(schedule, args, tuned=...)``: the driver's ``build``, applying a tuning record when one matches.

With ``tuned`` naming a tuning database, the best successful record for the schedule's workload and this
target's machine replaces the schedule's decisions: the plan is applied to ``schedule`` itself, which
must still be unscheduled (fresh from ``create_schedule``). Without a matching record a ``UserWarning``
says so and ``auto_schedule`` schedules it instead. Everything else is :func:`tesched.driver.build.build`.
"""
from __future__ import annotations

import os
import warnings
from typing import Literal, Sequence, overload

from tesched.autoschedule.auto import Explanation, auto_schedule, record
from tesched.autoschedule.database import TuningDatabase, seconds_or_inf
from tesched.autoschedule.machine import resolve
from tesched.autoschedule.pipeline import scheduled_by_user
from tesched.autoschedule.plan import apply_plan
from tesched.autoschedule.workload import workload_hash
from tesched.driver.build import build as driver_build
from tesched.driver.gpu import GpuKernel
from tesched.driver.kernel import Kernel
from tesched.errors import ScheduleError
from tesched.lower.func import LoweredFunc
from tesched.schedule.schedule import Schedule
from tesched.target import Target
from tesched.te.tensor import Tensor


# as the driver's build: a GPU target named by its string gives a GpuKernel (see tesched.driver.build)
@overload
def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None,  # type: ignore[overload-overlap]
          target: Literal["opencl", "cuda"], name: str = ..., profile: bool = ...,
          tuned: str | os.PathLike | None = ...) -> GpuKernel: ...


@overload
def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None, target: Target | str | None = None,
          name: str = ..., profile: bool = ..., tuned: str | os.PathLike | None = ...) -> Kernel: ...


def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None,
          target: Target | str | None = None, name: str = "default_function", profile: bool = False,
          tuned: str | os.PathLike | None = None) -> Kernel | GpuKernel:
    """Lower, compile and load a kernel, as :func:`tesched.driver.build.build`.

    Parameters
    ----------
    inputs, args, target, name, profile
        As for the driver's ``build`` (:func:`tesched.driver.build.build`).
    tuned
        A tuning database written by ``tune``: its best record for this workload and machine is applied
        to ``inputs`` (an unscheduled schedule) before building.

    Returns
    -------
    Kernel or GpuKernel
        The compiled kernel (a GpuKernel for ``target="opencl"`` or ``"cuda"``).
    """
    if tuned is not None:
        if not isinstance(inputs, Schedule):
            raise TypeError("build(..., tuned=...) needs a schedule (from create_schedule), not a lowered function")
        apply_tuned(inputs, tuned, target)
    return driver_build(inputs, args, target, name, profile)


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
