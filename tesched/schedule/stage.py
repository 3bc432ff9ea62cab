"""The schedule of one operation: its loops after split/fuse/reorder, their kinds, and its placement.

Primitives (``split``, ``tile``, ``reorder``, ``fuse``, ``compute_at``, ``compute_inline``,
``compute_root``, ``vectorize``, ``unroll``, ``parallel``, ``tensorize``) only record what was asked,
Halide-style, after checking their arguments; they never build loops. Loop variables made by ``split`` are
named ``<parent>.outer``/``<parent>.inner``, by ``fuse`` ``<outer>.<inner>.fused``, as in TVM. The schedule
that owns the stages (:mod:`.schedule`) is seen through the :class:`StageGraph` protocol.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence, SupportsIndex, TypeVar

from tesched.errors import ScheduleError
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.te.expr import Expr, as_expr
from tesched.te.intrinsic import TensorIntrin
from tesched.te.scatter import ScatterOp
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, PlaceholderOp, Tensor


@dataclass(frozen=True, eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None

    @property
    def parts(self) -> int:
        """``nparts`` of a split made with it (a split has a factor or a number of parts)."""
        assert self.nparts is not None, "a split by factor has no number of parts"
        return self.nparts


@dataclass(frozen=True, eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


def as_op(x: Operation | Tensor, what: str = "schedule") -> Operation:
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"{what}: expected a Tensor or an Operation, got {type(x).__name__} {x!r}")


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise ScheduleError(f"{what} must be a positive int, got {value!r}")
    number = operator.index(value)
    if number <= 0:
        raise ScheduleError(f"{what} must be positive, got {number}")
    return number


_Primitive = TypeVar("_Primitive", bound=Callable[..., Any])


def atomic(primitive: _Primitive) -> _Primitive:
    """Make a primitive all-or-nothing: if it raises, the stage is left exactly as it was before the call
    (``tile(i, i, 2, 2)`` does not leave ``i`` split)."""

    @functools.wraps(primitive)
    def run(self: "Stage", *args: Any, **kwargs: Any) -> Any:
        saved = {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in vars(self).items()}
        try:
            return primitive(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return run  # type: ignore[return-value]


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


class Stage:
    """The schedule of one operation: its loops (``leaf_iter_vars``) and where it is computed."""

    def __init__(self, op: Operation, schedule: "StageGraph"):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        axes = op.loop_axes if isinstance(op, ComputeOp) else []
        self.all_iter_vars: list[IterVar] = list(axes)
        self.leaf_iter_vars: list[IterVar] = list(axes)
        self.relations: list[Split | Fuse] = []
        self.iter_var_attrs: dict[IterVar, LoopKind] = {}
        self.loop_origins: dict[IterVar, str] = {}     # loop variable -> the primitive that made it
        self.attach_type = AttachType.ROOT
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.is_output = False
        self.atomic_updates = False     # a scatter's updates run as atomic additions (see ``atomic``)
        self.tensorize_spec: tuple | None = None

    # helpers --------------------------------------------------------------------------------------
    def replace_op(self, op: ComputeOp) -> None:
        """Point this stage at a rewritten operation (dataflow primitives); the old one still maps here."""
        self.op = op
        self.schedule.stage_map[id(op)] = self

    @property
    def name(self) -> str:
        """The name of the stage's operation."""
        return self.op.name

    def __repr__(self) -> str:
        return f"Stage({self.name}, {self.attach_type})"

    def _compute_only(self, primitive: str) -> None:
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(f"{primitive}: {self.name} is an input (placeholder); it has no loops")

    def _names(self, ivars: Iterable[IterVar]) -> str:
        return ", ".join(v.name for v in ivars)

    def _check_leaf(self, ivar: object, primitive: str) -> IterVar:
        self._compute_only(primitive)
        if not isinstance(ivar, IterVar):
            raise ScheduleError(f"{primitive} on stage {self.name}: expected an axis (IterVar), "
                                f"got {type(ivar).__name__}")
        if ivar not in self.all_iter_vars:
            raise ScheduleError(f"{primitive} on stage {self.name}: axis {ivar.name} is not a loop of "
                                f"{self.name} (its loops are: {self._names(self.leaf_iter_vars)})")
        if ivar not in self.leaf_iter_vars:
            raise ScheduleError(f"{primitive} on stage {self.name}: axis {ivar.name} was already split "
                                f"or fused; use one of its current loops: {self._names(self.leaf_iter_vars)}")
        return ivar

    def _replace_leaves(self, old: Sequence[IterVar], new: Sequence[IterVar]) -> None:
        pos = self.leaf_iter_vars.index(old[0])
        self.leaf_iter_vars[pos:pos + len(old)] = list(new)
        self.all_iter_vars.extend(new)

    def loop_origin(self, ivar: IterVar) -> str:
        """The primitive call that made loop variable ``ivar`` (``split(i, factor=32)``), or
        ``axis i`` for an axis of the stage's own computation."""
        return self.loop_origins.get(ivar, f"axis {ivar.name}")

    def descendants(self, ivar: IterVar) -> list[IterVar]:
        """``ivar`` and every loop variable derived from it by split and fuse."""
        out = [ivar]
        for rel in self.relations:
            if isinstance(rel, Split) and rel.parent in out:
                out += [rel.outer, rel.inner]
            elif isinstance(rel, Fuse) and (rel.outer in out or rel.inner in out):
                out.append(rel.fused)
        return out

    def leaf_position(self, ivar: IterVar) -> int:
        """Position, in the current loop order, of the innermost loop derived from ``ivar``."""
        derived = set(map(id, self.descendants(ivar)))
        positions = [k for k, v in enumerate(self.leaf_iter_vars) if id(v) in derived]
        return max(positions)

    def extents(self) -> dict[int, int | None]:
        """Trip count of every loop variable by ``id``; None where it depends on a symbolic size."""
        out: dict[int, int | None] = {}
        for v in self.all_iter_vars:
            if v.dom is not None:
                ext = v.dom.extent
                out[id(v)] = ext if isinstance(ext, int) else None
        for rel in self.relations:
            if isinstance(rel, Split):
                pext = out[id(rel.parent)]
                factor = rel.factor if rel.factor is not None else (
                    None if pext is None else -(-pext // rel.parts))
                out[id(rel.outer)] = None if pext is None or factor is None else -(-pext // factor)
                out[id(rel.inner)] = factor if pext is None or factor is None else min(factor, pext)
            else:
                o, i = out[id(rel.outer)], out[id(rel.inner)]
                out[id(rel.fused)] = None if o is None or i is None else o * i
        return out

    def split_factor(self, rel: Split) -> int:
        """The inner extent of a split (for ``nparts``, derived from the constant parent extent)."""
        if rel.factor is not None:
            return rel.factor
        pext = self.extents()[id(rel.parent)]
        if pext is None:
            raise ScheduleError(f"split of {self.name}.{rel.parent.name} with nparts needs a constant "
                                "extent; use factor= for symbolic sizes")
        return -(-pext // rel.parts)

    def root_values(self, leaf_values: dict[int, "Expr"]) -> dict[int, "Expr"]:
        """Values of the axes (and every intermediate loop variable) given values of the leaves."""
        value = dict(leaf_values)
        extents = self.extents()

        def plus_min(e, v: IterVar):
            lo = 0 if v.dom is None else v.dom.min
            return e if isinstance(lo, int) and lo == 0 else e + lo

        for rel in reversed(self.relations):
            if isinstance(rel, Split):
                if id(rel.outer) in value and id(rel.inner) in value:
                    base = value[id(rel.outer)] * self.split_factor(rel) + value[id(rel.inner)]
                    value[id(rel.parent)] = plus_min(as_expr(base), rel.parent)
            elif id(rel.fused) in value:
                inner_ext = extents[id(rel.inner)]
                if inner_ext is None:
                    raise ScheduleError(f"fuse of {self.name}.{rel.outer.name}: inner extent must be constant")
                value[id(rel.outer)] = plus_min(value[id(rel.fused)] // inner_ext, rel.outer)
                value[id(rel.inner)] = plus_min(value[id(rel.fused)] % inner_ext, rel.inner)
        return value

    # loop transformations -------------------------------------------------------------------------
    @atomic
    def split(self, parent: IterVar, factor: int | None = None,
              nparts: int | None = None) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)`` with ``inner`` of extent ``factor`` (or ``outer`` of
        extent ``nparts``). Non-dividing factors are fine: the remainder is guarded."""
        self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {self.name}.{parent.name}: give exactly one of factor, nparts")
        factor = None if factor is None else _positive_int(factor, f"split factor of {self.name}.{parent.name}")
        nparts = None if nparts is None else _positive_int(nparts, f"split nparts of {self.name}.{parent.name}")
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
    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse consecutive loops (outermost first) into one."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise ScheduleError(f"fuse on stage {self.name}: no axes given")
        for a in args:
            self._check_leaf(a, "fuse")
        positions = [self.leaf_iter_vars.index(a) for a in args]
        if positions != list(range(positions[0], positions[0] + len(args))):
            raise ScheduleError(f"fuse on stage {self.name}: axes {self._names(args)} are not consecutive "
                                f"loops in this order (current order: {self._names(self.leaf_iter_vars)})")
        kinds = {a.iter_type == IterType.COMM_REDUCE for a in args}
        if len(kinds) > 1:
            raise ScheduleError(f"fuse on stage {self.name}: cannot fuse reduction and data-parallel axes "
                                f"({self._names(args)})")
        fused = args[0]
        for nxt in args[1:]:
            new = IterVar(None, f"{fused.name}.{nxt.name}.fused", fused.iter_type)
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

    # loop kinds -----------------------------------------------------------------------------------
    @atomic
    def _annotate(self, ivar: IterVar, kind: LoopKind) -> None:
        primitive = {LoopKind.PARALLEL: "parallel", LoopKind.VECTORIZED: "vectorize", LoopKind.UNROLLED: "unroll"}[kind]
        self._compute_only(primitive)
        if not isinstance(ivar, IterVar) or ivar not in self.all_iter_vars:
            raise ScheduleError(f"{primitive} on stage {self.name}: {getattr(ivar, 'name', ivar)!r} is not "
                                f"a loop of {self.name} (its loops are: {self._names(self.leaf_iter_vars)})")
        # a scatter's loops are its points: the dependence check decides whether they may run in parallel
        if kind is LoopKind.PARALLEL and ivar.iter_type == IterType.COMM_REDUCE and not isinstance(self.op, ScatterOp):
            raise ScheduleError(
                f"{primitive} on stage {self.name}: loop {ivar.name} runs over a reduction axis, so its "
                f"iterations all update the same {self.name} element (a loop-carried dependence); "
                f"parallelize a data-parallel loop, or rfactor the reduction first")
        previous = self.iter_var_attrs.get(ivar)
        if previous not in (None, kind):
            raise ScheduleError(f"{primitive} on stage {self.name}: loop {ivar.name} is already {previous}")
        self.iter_var_attrs[ivar] = kind

    def vectorize(self, var: IterVar) -> None:
        """SIMD over ``var``. On a reduction loop (innermost), lanes keep separate partial results that
        are combined after the loop (this reassociates a floating-point sum)."""
        self._annotate(var, LoopKind.VECTORIZED)

    def parallel(self, var: IterVar) -> None:
        """Run the iterations of loop ``var`` on several threads (an OpenMP parallel loop).

        Parameters
        ----------
        var : IterVar
            A data-parallel loop of this stage; the dependence check refuses one that carries a
            dependence, and a reduction loop must be ``rfactor``-ed first.

        Example
        -------
        >>> io, ii = s[C].split(C.op.axis[0], factor=32)
        >>> s[C].parallel(io)
        """
        self._annotate(var, LoopKind.PARALLEL)

    def unroll(self, var: IterVar) -> None:
        """Copy the body of loop ``var`` once per iteration (its extent must be a constant; after
        unrolling, small local buffers indexed by it can live in registers).

        Parameters
        ----------
        var : IterVar
            A loop of this stage with a constant extent (split with a constant factor first).
        """
        self._annotate(var, LoopKind.UNROLLED)

    @atomic
    def tensorize(self, var: IterVar, tensor_intrin) -> None:
        """Replace loop ``var`` and every loop inside it by a call of ``tensor_intrin`` (see
        :mod:`tesched.poly.tensorize`); the match is checked when lowering."""
        self._check_leaf(var, "tensorize")
        if not isinstance(tensor_intrin, TensorIntrin):
            raise TypeError("tensorize: the intrinsic must come from ts.decl_tensor_intrin")
        self.tensorize_spec = (var, tensor_intrin)

    # placement ------------------------------------------------------------------------------------
    @atomic
    def compute_at(self, parent: "Stage", scope: IterVar) -> None:
        """Compute this stage inside loop ``scope`` of ``parent``: per iteration of that loop, exactly
        the region the loop's body reads (its polyhedral footprint), into a buffer local to it."""
        self._compute_only("compute_at")
        if not isinstance(parent, Stage) or parent.schedule is not self.schedule:
            raise ScheduleError(f"compute_at of {self.name}: the parent must be a stage of the same "
                                "schedule, e.g. s[consumer]")
        where = f"{parent.name}.{getattr(scope, 'name', scope)}"
        if parent is self:
            raise ScheduleError(f"compute_at of {self.name} at {where}: a stage cannot be computed inside "
                                "itself")
        if self.is_output:
            raise ScheduleError(f"compute_at of {self.name} at {where}: it is an output of the schedule; "
                                "outputs are computed at the root")
        if not isinstance(scope, IterVar) or scope not in parent.all_iter_vars:
            owner = next((st.name for st in self.schedule.stages if isinstance(scope, IterVar)
                          and any(v is scope for v in st.all_iter_vars)), None)
            belongs = f"; it is a loop of {owner}" if owner else ""
            raise ScheduleError(f"compute_at of {self.name}: {getattr(scope, 'name', scope)!r} is not a loop "
                                f"of {parent.name} (its loops are: {parent._names(parent.leaf_iter_vars)})"
                                f"{belongs}")
        if not self.schedule.reads_transitively(parent.op, self.op):
            readers = [st.name for st in self.schedule.stages if self in self.schedule.producers(st)]
            raise ScheduleError(f"compute_at of {self.name} at {parent.name}.{scope.name}: {parent.name} "
                                f"does not read {self.name}, so no loop of {parent.name} is a legal "
                                f"place; stages that read it: {', '.join(readers) or 'none'}")
        enclosing: Stage | None = parent
        while enclosing is not None and enclosing.attach_type is AttachType.SCOPE:
            if enclosing.attach_stage is self:
                raise ScheduleError(f"compute_at of {self.name} at {parent.name}.{scope.name}: {parent.name} "
                                    f"is itself computed inside {self.name} (a cycle)")
            enclosing = enclosing.attach_stage
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.SCOPE, parent, scope

    @atomic
    def compute_inline(self) -> None:
        """Substitute this stage's expression into every reader; it gets no loops or buffer."""
        self._compute_only("compute_inline")
        if self.is_output:
            raise ScheduleError(f"compute_inline of {self.name}: it is an output of the schedule")
        if isinstance(self.op, ComputeOp) and self.op.reduce_axis:
            raise ScheduleError(f"compute_inline of {self.name}: it is a reduction (over "
                                f"{self._names(self.op.reduce_axis)}); only elementwise stages can be "
                                "inlined, use compute_at instead")
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.INLINE, None, None

    @atomic
    def compute_root(self) -> None:
        """Compute this stage in full, at the outermost level, before its readers."""
        self._compute_only("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.ROOT, None, None

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
