"""Automatic scheduling: ``auto_schedule`` (analytical), ``tune`` (measured search), ``explain_schedule``,
and what ``ts.build(..., tuned=...)`` applies.

- :mod:`.pipeline`  the stages and what the cost model knows of each;
- :mod:`.cost`      the cost model (documented in its docstring);
- :mod:`.decide`    the analytical decisions, :mod:`.plan` schedules as data and how they are applied;
- :mod:`.auto`      ``auto_schedule`` and ``explain_schedule``; :mod:`.gpu` their GPU path (block and
  thread tiles, shared-memory staging: sizes in :mod:`tesched.nn.gpu_tiles`);
- :mod:`.tune`      the search; :mod:`.mutate` its neighbourhoods; :mod:`.measure` builds and timed runs
  on any executor (local processes, ``dask.distributed``); :mod:`.database` the tuning records;
  :mod:`.workload` workload hashes; :mod:`.progress` the progress bar;
- :mod:`.build`     ``apply_tuned``: a tuning record applied to a schedule before ``ts.build``.
"""
from tesched.autoschedule.auto import auto_schedule, explain_schedule
from tesched.autoschedule.machine import Machine
from tesched.autoschedule.plan import Plan, StagePlan
from tesched.autoschedule.tune import TuneResult, tune

__all__ = ["Machine", "Plan", "StagePlan", "TuneResult", "auto_schedule", "explain_schedule", "tune"]
