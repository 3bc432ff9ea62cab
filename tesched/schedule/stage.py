"""A stage's schedule as users see it (:class:`Stage`): its loop transformations (``split``, ``tile``,
``fuse``, ``reorder``) here, with the loop kinds and hints (:mod:`.loop_hints`) and the placement
(:mod:`.placement`) it inherits, over the state and queries of :mod:`.stage_base`.

Primitives only record what was asked, Halide-style, after checking their arguments; they never build
loops. Loop variables made by ``split`` are named ``<parent>.outer``/``<parent>.inner``, by ``fuse``
``<outer>.<inner>.fused``, as in TVM. The schedule that owns the stages (:mod:`.schedule`) is seen through
the :class:`StageGraph` protocol.
"""
from __future__ import annotations

from typing import Protocol

from tesched.errors import ScheduleError
from tesched.schedule.kinds import ThreadAxis
from tesched.schedule.loop_hints import LoopHints
from tesched.schedule.placement import Placement
from tesched.schedule.stage_base import Fuse, Relation, Singleton, Split, as_op, atomic, positive_int
from tesched.te.scatter import ScatterOp
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, Range, Tensor
from tesched.te.update import UpdateOp

__all__ = ["Fuse", "Relation", "Singleton", "Split", "Stage", "StageGraph", "as_op"]


class StageGraph(Protocol):
    """What a stage needs of the schedule that owns it (implemented by :class:`~.schedule.Schedule`)."""

    stages: list["Stage"]
    stage_map: dict[int, "Stage"]

    def __getitem__(self, key: "Operation | Tensor | Stage") -> "Stage": ...
    def producers(self, stage: "Stage") -> list["Stage"]: ...
    def reads_transitively(self, consumer: Operation, producer: Operation) -> bool: ...
    def stage_of_tensor(self, tensor: Tensor) -> "Stage | None": ...
    def canonical(self, tensor: Tensor) -> Tensor: ...
    def insert_stage(self, op: ComputeOp, before: "Stage | None" = None,
                     after: "Stage | None" = None) -> "Stage": ...


class Stage(LoopHints, Placement):
    """The schedule of one operation: its loops (``leaf_iter_vars``) and where it is computed."""

    def update(self, index: int = 0) -> "Stage":
        """The stage of update definition ``index`` of this stage's tensor (Halide's ``f.update(0)``), from
        the stage of its pure definition or of any of its updates."""
        base = self.op.base if isinstance(self.op, UpdateOp) else self.op
        found = [st for st in self.schedule.stages if isinstance(st.op, UpdateOp) and st.op.base is base]
        match = next((st for st in found if st.op.position == index), None)
        if match is None:
            raise ScheduleError(f"update({index!r}) of {base.name}: it has {len(found)} update definition(s) in "
                                f"this schedule" + (f" (0 to {len(found) - 1})" if found else ""))
        return match

    # loop transformations -------------------------------------------------------------------------
    @atomic
    def split(self, parent: IterVar, factor: int | None = None,
              nparts: int | None = None) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)`` with ``inner`` of extent ``factor`` (or ``outer`` of
        extent ``nparts``). Non-dividing factors are fine: the remainder is guarded."""
        self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {self.name}.{parent.name}: give exactly one of factor, nparts")
        factor = None if factor is None else positive_int(factor, f"split factor of {self.name}.{parent.name}")
        nparts = None if nparts is None else positive_int(nparts, f"split nparts of {self.name}.{parent.name}")
        outer = IterVar(None, f"{parent.name}.outer", parent.iter_type)
        inner = IterVar(None, f"{parent.name}.inner", parent.iter_type)
        self.relations.append(Split(parent, outer, inner, factor, nparts))
        self._replace_leaves([parent], [outer, inner])
        how = f"factor={factor}" if factor is not None else f"nparts={nparts}"
        self.loop_origins[outer] = self.loop_origins[inner] = f"split({parent.name}, {how})"
        return outer, inner

    @atomic
    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: int,
             y_factor: int) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split two loops and order them ``x.outer, y.outer, x.inner, y.inner``."""
        xo, xi = self.split(x_parent, x_factor)
        yo, yi = self.split(y_parent, y_factor)
        self.reorder(xo, yo, xi, yi)
        for v in (xo, yo, xi, yi):
            self.loop_origins[v] = f"tile({x_parent.name}, {y_parent.name}, {x_factor}, {y_factor})"
        return xo, yo, xi, yi

    @atomic
    def gpu_tile(self, x: IterVar, y: IterVar, x_factor: int,
                 y_factor: int) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """``tile`` two loops and bind the four parts to a GPU grid (Halide's ``gpu_tile``): ``y`` (the
        inner, contiguous axis, as in ``tile``) gives ``blockIdx.x``/``threadIdx.x`` and ``x`` gives
        ``blockIdx.y``/``threadIdx.y``, so neighbouring threads touch neighbouring elements.

        Returns
        -------
        tuple of IterVar
            ``(x.outer, y.outer, x.inner, y.inner)``: bound to blockIdx.y, blockIdx.x, threadIdx.y,
            threadIdx.x.
        """
        xo, yo, xi, yi = self.tile(x, y, x_factor, y_factor)
        for loop, tag in ((xo, "blockIdx.y"), (yo, "blockIdx.x"), (xi, "threadIdx.y"), (yi, "threadIdx.x")):
            self.bind(loop, ThreadAxis(tag))
        return xo, yo, xi, yi

    @atomic
    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse consecutive loops (outermost first) into one, as TVM's ``fuse``.

        With no axes, adds an outermost loop of one iteration and returns it (TVM's ``fuse()``): a place
        to ``compute_at`` that encloses every loop of this stage. Data-parallel and reduction loops may be
        fused together (TVM's rule: the fused loop is a reduction loop). That is legal because a reduction
        loop only reorders the updates of each element, and the dependence check still judges the result:
        the reduction's initialisation runs before the fused loop, so every element is cleared before its
        first update. Such a mixed loop cannot be ``parallel`` (it updates elements in turn) nor
        ``vectorize``-d (its lanes would update different elements), and ``rfactor`` needs a loop that only
        reduces.

        The inner loop may run over a symbolic size ``n`` (``fused = i * n + j``, not affine): the
        lowering then models the loops it fuses, in the fused loop's order, and generates one loop with
        ``i = fused // n`` and ``j = fused % n`` (as TVM and Halide) when the fused loop is ``parallel``,
        ``vectorize``-d, has a pragma or is split by a constant factor (see ``tesched.poly.fused``). That
        loop costs a division per iteration; split by a constant factor, each block runs row by row over
        consecutive ``j`` (one division per row, vectorizable inner part). Such a
        fused loop cannot be unrolled, its split parts cannot be split or fused again, and the loops it fuses
        must all be data-parallel or all reduction loops."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            self._compute_only("fuse")
            one = IterVar(Range(0, 1), "singleton", IterType.DATA_PAR)
            self.relations.append(Singleton(one))
            self.leaf_iter_vars.insert(0, one)
            self.all_iter_vars.append(one)
            self.loop_origins[one] = "fuse()"
            return one
        for a in args:
            self._check_leaf(a, "fuse")
        positions = [self.leaf_iter_vars.index(a) for a in args]
        if positions != list(range(positions[0], positions[0] + len(args))):
            raise ScheduleError(f"fuse on stage {self.name}: axes {self._names(args)} are not consecutive "
                                f"loops in this order (current order: {self._names(self.leaf_iter_vars)})")
        fused = args[0]
        for nxt in args[1:]:
            kind = IterType.COMM_REDUCE if IterType.COMM_REDUCE in (fused.iter_type, nxt.iter_type) \
                else fused.iter_type
            new = IterVar(None, f"{fused.name}.{nxt.name}.fused", kind)
            self.relations.append(Fuse(fused, nxt, new))
            self._replace_leaves([fused, nxt], [new])
            self.loop_origins[new] = f"fuse({fused.name}, {nxt.name})"
            fused = new
        return fused

    @atomic
    def reorder(self, *args: IterVar) -> None:
        """Put the given loops in this order, in the positions they occupy together."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for a in args:
            self._check_leaf(a, "reorder")
        if len(set(map(id, args))) != len(args):
            raise ScheduleError(f"reorder on stage {self.name}: an axis is given twice ({self._names(args)})")
        positions = sorted(self.leaf_iter_vars.index(a) for a in args)
        for pos, a in zip(positions, args):
            self.leaf_iter_vars[pos] = a

    # keep this method last: in the class body its name hides the all-or-nothing decorator ``atomic``
    def atomic(self) -> "Stage":
        """Make a scatter's updates atomic additions (Halide's ``atomic()``), so that its loops may run
        in ``parallel`` (the dependence check refuses it otherwise, unless each iteration writes its own
        elements): threads adding into the same element no longer race. Only ``sum`` scatters of
        int and float32/float64 elements; a vectorized loop still may not carry the scatter.

        Returns
        -------
        Stage
            This stage (for chaining: ``s[hist].atomic().parallel(ry)``).
        """
        if not isinstance(self.op, ScatterOp):
            raise ScheduleError(f"atomic of {self.name}: only a scatter (ts.scatter) accumulates at computed "
                                "indices; the loops of any other stage write distinct elements")
        body = self.op.body
        if body.combiner != "sum" or body.dtype in ("float16", "bfloat16", "bool"):
            raise ScheduleError(f"atomic of {self.name}: atomic updates are additions of int, float32 or "
                                f"float64 elements; this scatter combines {body.dtype} elements with "
                                f"{body.combiner}: keep its loops serial")
        self.atomic_updates = True
        return self
