"""What the analytical scheduler knows while it decides: the pipeline, the machine, the plans so far, the
hosts with their anchors and members, and memoised polyhedral figures (reads, tile regions).

Shared by :mod:`.decide` (placement, register tiles) and :mod:`.bands` (bands, sliding windows); it
decides nothing itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from tesched.autoschedule.machine import Machine
from tesched.autoschedule.pipeline import Pipeline
from tesched.autoschedule.plan import StagePlan
from tesched.poly.analysis import Read, Region, TileFootprints, accesses, reads
from tesched.te.tensor import ComputeOp, TensorRead


@dataclass
class DecisionMemo:
    """What the rounds of one decision compute once: each stage's accesses with an inlining, and the
    footprints of stages at a host's tile (per tiling of a host, shared by the lists of its members)."""

    accesses: dict[tuple, list[TensorRead]] = field(default_factory=dict)
    regions: dict[tuple, dict[str, Region]] = field(default_factory=dict)
    footprints: dict[tuple, TileFootprints] = field(default_factory=dict)


@dataclass
class DecideState:
    """The decisions made so far for one pipeline (see the module docstring)."""

    pipe: Pipeline
    machine: Machine
    forced_root: set[int]
    forced_why: dict[int, str] = field(default_factory=dict)       # why a stage of forced_root is, if not its halo
    plans: dict[int, StagePlan] = field(default_factory=dict)
    anchor: dict[int, int] = field(default_factory=dict)            # host -> anchor stage
    members: dict[int, list[int]] = field(default_factory=dict)     # host -> stages computed at it
    resamplings: dict[int, int] = field(default_factory=dict)       # member -> resampling reads up to its host
    reads_memo: dict[tuple, list[Read]] = field(default_factory=dict)
    memo: DecisionMemo = field(default_factory=DecisionMemo)   # shared by the rounds of one decision

    def inlined_ops(self) -> list[ComputeOp]:
        """The operations decided inline so far."""
        return [self.pipe[k].op for k, p in self.plans.items() if p.placement == "inline"]

    def inlined_into(self, op: ComputeOp) -> list[ComputeOp]:
        """The operations decided inline that ``op``'s body expands: read by it directly or through other
        inlined ones (memo keys: deciding a stage elsewhere inline leaves ``op``'s reads as they were)."""
        found: list[int] = []
        todo = [self.pipe.index_of(op)]
        while todo:
            for k in self.pipe[todo.pop()].producers:
                plan = self.plans.get(k)
                if k not in found and plan is not None and plan.placement == "inline":
                    found.append(k)
                    todo.append(k)
        return [self.pipe[k].op for k in sorted(found)]

    def reads(self, op: ComputeOp) -> list[Read]:
        """``analysis.reads`` of ``op`` with the current inlining (memoised)."""
        inlined = self.inlined_into(op)
        key = (id(op), tuple(map(id, inlined)))
        if key not in self.reads_memo:
            self.reads_memo[key] = reads(op, inlined)
        return self.reads_memo[key]

    def accesses(self, op: ComputeOp) -> list[TensorRead]:
        """``analysis.accesses`` of ``op`` with the current inlining (memoised)."""
        inlined = self.inlined_into(op)
        key = ("accesses", id(op), tuple(map(id, inlined)))
        if key not in self.memo.accesses:
            self.memo.accesses[key] = accesses(op, inlined)
        return self.memo.accesses[key]

    def regions(self, host: ComputeOp, tile: Sequence[int], ops: Sequence[ComputeOp]) -> dict[str, Region]:
        """``analysis.tile_regions`` of ``host`` per ``tile`` with ``ops`` computed in it (memoised: the
        footprints of a stage per host loop are computed once per decision)."""
        inlined = self.inlined_ops()
        tiling = (id(host), tuple(tile), frozenset(map(id, inlined)))
        key = (*tiling, tuple(map(id, ops)))
        if key not in self.memo.regions:
            if tiling not in self.memo.footprints:      # its reads: those of this inlining, in any round
                self.memo.footprints[tiling] = TileFootprints(host, tile, inlined, reads_of=self.accesses)
            self.memo.regions[key] = self.memo.footprints[tiling].regions(ops)
        return self.memo.regions[key]
