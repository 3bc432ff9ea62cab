"""Profiling instrumentation: a timer around the whole function and around every ``produce`` block.

``instrument`` wraps loop IR in :class:`~tesched.ir.nodes.Timer` statements, numbered in pre-order
(slot 0 is the whole function), and lists what each one times. It runs after the machine passes, so the
timed code is the code an uninstrumented build runs, plus two clock reads per timed block. A block inside
a ``parallel`` loop is timed on every thread and its counter sums the threads' times (thread-seconds,
which can exceed the wall time). The C generator turns the timers into counters and a reader function;
:mod:`tesched.driver.profile` reads them. This module knows nothing of C.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtMutator
from tesched.ir.kinds import LoopKind


@dataclass(frozen=True)
class TimedRegion:
    """What profile counter ``slot`` times: the function (``stage`` empty) or a stage's produce block."""

    slot: int
    label: str
    stage: str
    parallel: bool


class _Instrument(StmtMutator):
    def __init__(self) -> None:
        self.regions: list[TimedRegion] = []
        self.parallel_depth = 0

    def visit_For(self, s: ir.For) -> ir.Stmt:
        inside = s.kind is LoopKind.PARALLEL
        self.parallel_depth += inside
        out = self.visit_default(s)
        self.parallel_depth -= inside
        return out

    def visit_Produce(self, s: ir.Produce) -> ir.Stmt:
        region = TimedRegion(len(self.regions), f"produce {s.stage}", s.stage, self.parallel_depth > 0)
        self.regions.append(region)
        return ir.Timer(region.slot, region.label, self.visit_default(s), region.parallel)


def instrument(body: ir.Stmt, name: str) -> tuple[ir.Stmt, list[TimedRegion]]:
    """``body`` with timers around itself (slot 0, labelled ``name``) and every produce block.

    Parameters
    ----------
    body : Stmt
        A function's loop IR, after the machine passes.
    name : str
        The function's name (the label of the whole-function timer).

    Returns
    -------
    tuple of (Stmt, list of TimedRegion)
        The instrumented body and what each counter slot times.
    """
    mutator = _Instrument()
    mutator.regions.append(TimedRegion(0, name, "", False))
    timed = mutator.visit(body)
    return ir.Timer(0, name, timed, False), mutator.regions
