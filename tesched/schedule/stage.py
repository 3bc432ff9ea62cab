"""The schedule of one operation: its loops after split/fuse/reorder, their kinds, and its placement.

Primitives (``split``, ``tile``, ``reorder``, ``fuse``, ``compute_at``, ``compute_inline``,
``compute_root``, ``store_at``, ``store_root``, ``bound``, ``bound_extent``, ``vectorize``, ``unroll``,
``parallel``, ``tensorize``) only record what was asked,
Halide-style, after checking their arguments; they never build loops. Loop variables made by ``split`` are
named ``<parent>.outer``/``<parent>.inner``, by ``fuse`` ``<outer>.<inner>.fused``, as in TVM. The schedule
that owns the stages (:mod:`.schedule`) is seen through the :class:`StageGraph` protocol.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Callable, Concatenate, Iterable, ParamSpec, Protocol, Sequence, SupportsIndex, TypeVar

from tesched.errors import ScheduleError
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.schedule.storage import AxisBound, checked_bound
from tesched.te.expr import Expr, as_expr
from tesched.te.intrinsic import TensorIntrin
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, PlaceholderOp, Range, Tensor, TensorRead
from tesched.te.visit import walk


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


@dataclass(frozen=True, eq=False)
class Singleton:
    """The loop of one iteration that ``fuse()`` of no axes adds outermost (TVM's ``Singleton``)."""

    iter_var: IterVar


Relation = Split | Fuse | Singleton


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


_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")


def atomic(primitive: Callable[Concatenate["Stage", _Args], _Result]) -> Callable[Concatenate["Stage", _Args], _Result]:
    """Make a primitive all-or-nothing: if it raises, the stage is left exactly as it was before the call
    (``tile(i, i, 2, 2)`` does not leave ``i`` split)."""

    @functools.wraps(primitive)
    def run(self: "Stage", *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        saved = {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in vars(self).items()}
        try:
            return primitive(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return run


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
        axes = list(op.axis) + list(op.reduce_axis)
        self.all_iter_vars: list[IterVar] = list(axes)
        self.leaf_iter_vars: list[IterVar] = list(axes)
        self.relations: list[Relation] = []
        self.iter_var_attrs: dict[IterVar, LoopKind] = {}
        self.loop_origins: dict[IterVar, str] = {}     # loop variable -> the primitive that made it
        self.pragmas: dict[IterVar, dict[str, bool | int]] = {}   # loop -> C loop hints (``pragma``)
        self.prefetches: list[tuple[Tensor, IterVar, int]] = []    # (tensor, loop, offset), ``prefetch``
        self.specializations: list[Expr] = []                      # conditions of ``specialize``
        self.attach_type = AttachType.ROOT
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.is_output = False
        self.tensorize_spec: tuple | None = None
        self.store_type: AttachType | None = None     # None: stored where computed
        self.store_stage: Stage | None = None
        self.store_ivar: IterVar | None = None
        self.bounds: dict[IterVar, AxisBound] = {}

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
            elif isinstance(rel, Fuse):
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
            elif isinstance(rel, Fuse) and id(rel.fused) in value:
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
        """Fuse consecutive loops (outermost first) into one, as TVM's ``fuse``.

        With no axes, adds an outermost loop of one iteration and returns it (TVM's ``fuse()``): a place
        to ``compute_at`` that encloses every loop of this stage. Data-parallel and reduction loops may be
        fused together (TVM's rule: the fused loop is a reduction loop). That is legal because a reduction
        loop only reorders the updates of each element, and the dependence check still judges the result:
        the reduction's initialisation runs before the fused loop, so every element is cleared before its
        first update. Such a mixed loop cannot be ``parallel`` (it updates elements in turn) nor
        ``vectorize``-d (its lanes would update different elements), and ``rfactor`` needs a loop that only
        reduces."""
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

    def mixes_reduction(self, ivar: IterVar) -> bool:
        """Whether loop ``ivar`` fuses a data-parallel loop with a reduction loop."""
        kinds: set[IterType] = set()
        for rel in self.relations:
            if isinstance(rel, Fuse) and rel.fused is ivar:
                kinds |= {v.iter_type for v in (rel.outer, rel.inner)}
                if self.mixes_reduction(rel.outer) or self.mixes_reduction(rel.inner):
                    return True
            elif isinstance(rel, Split) and ivar in (rel.outer, rel.inner):
                return self.mixes_reduction(rel.parent)
        return len(kinds) > 1

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
            owner = next((st.name for st in self.schedule.stages if isinstance(ivar, IterVar)
                          and any(v is ivar for v in st.all_iter_vars)), None)
            raise ScheduleError(f"{primitive} on stage {self.name}: {getattr(ivar, 'name', ivar)!r} is not "
                                f"a loop of {self.name} (its loops are: {self._names(self.leaf_iter_vars)})"
                                + (f"; it is a loop of {owner}" if owner else ""))
        if kind is LoopKind.PARALLEL and self.mixes_reduction(ivar):
            raise ScheduleError(
                f"{primitive} on stage {self.name}: loop {ivar.name} fuses data-parallel and reduction loops "
                f"(a reduction loop), so consecutive iterations update the same {self.name} element; "
                "parallelize a data-parallel loop")
        if kind is LoopKind.PARALLEL and ivar.iter_type == IterType.COMM_REDUCE:
            raise ScheduleError(
                f"{primitive} on stage {self.name}: loop {ivar.name} runs over a reduction axis, so its "
                f"iterations all update the same {self.name} element (a loop-carried dependence); "
                f"parallelize a data-parallel loop, or rfactor the reduction first")
        if kind is LoopKind.VECTORIZED and self.mixes_reduction(ivar):
            raise ScheduleError(
                f"vectorize on stage {self.name}: loop {ivar.name} fuses data-parallel and reduction loops, so "
                f"its lanes would update different elements of {self.name} in turn; vectorize a loop that "
                "is only data-parallel or only a reduction")
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
    def specialize(self, condition: Expr) -> None:
        """Add a fast path of this stage for when ``condition`` (on size variables, ``ts.var``) holds at
        run time (Halide's ``Func::specialize``): the stage's loop nest is generated twice, once knowing
        the condition, once not, and the kernel picks one when it runs. Knowing ``n % 16 == 0``, a split
        of ``n`` by 16 has no tail: no guard, no remainder loop, whole SIMD vectors. The schedule of both
        paths is the same. Conditions are comparisons of affine expressions of the sizes (``n % 16 == 0``,
        ``n >= 64``) joined by ``&``, ``|`` and ``~``; with several, the first that holds picks its path.
        The stage must be computed at the root (its loop nest is the unit that is duplicated).
        """
        self._compute_only("specialize")
        if not isinstance(condition, Expr) or condition.dtype != "bool":
            raise ScheduleError(f"specialize of {self.name}: the condition must be a comparison of size "
                                f"variables such as n % 16 == 0, got {condition!r}")
        loops = [v.name for v in walk(condition) if isinstance(v, IterVar)]
        reads = [n for n in walk(condition) if isinstance(n, TensorRead)]
        if loops or reads:
            what = f"loop variable {loops[0]}" if loops else f"a read of {reads[0].tensor.name}"
            raise ScheduleError(f"specialize of {self.name}: the condition uses {what}; it may only use size "
                                "variables (ts.var), known when the kernel is called")
        self.specializations = self.specializations + [condition]

    @atomic
    def prefetch(self, tensor: Tensor, var: IterVar, offset: int = 1) -> None:
        """At the start of each iteration of loop ``var``, prefetch into cache the region of ``tensor``
        that iteration ``var + offset`` will read (TVM's ``s[B].prefetch(tensor, var, offset)``, Halide's
        ``prefetch(func, var, offset)``): one ``__builtin_prefetch`` per cache line of the region, which
        comes from the exact footprint of this stage's reads (isl), so nothing outside it is touched. Nothing
        is prefetched past the loop's last iteration.

        Parameters
        ----------
        tensor : Tensor
            An input, or a stage computed at the root, that this stage reads.
        var : IterVar
            One of this stage's current loops.
        offset : int
            How many iterations ahead (1 or more).
        """
        self._check_leaf(var, "prefetch")
        if not isinstance(tensor, Tensor):
            raise ScheduleError(f"prefetch on stage {self.name}: expected the tensor to prefetch, got "
                                f"{type(tensor).__name__}")
        steps = _positive_int(offset, f"prefetch offset of {self.name}.{var.name}")
        self.prefetches = self.prefetches + [(tensor, var, steps)]

    @atomic
    def pragma(self, var: IterVar, pragma_type: str, pragma_value: bool | int | None = None) -> None:
        """Attach a C loop hint to loop ``var`` (TVM's ``pragma``). Only these are accepted, and only
        their values reach C (never the text given):

        - ``"ivdep"`` (value True): ``#pragma GCC ivdep``, gcc may assume the iterations are independent.
          The dependence check verifies it: a loop that carries any dependence (a reduction loop
          included) is refused.
        - ``"unroll"`` (a count from 1 to 65535): ``#pragma GCC unroll count``, gcc unrolls the loop.
        - ``"unroll_explicit"`` (a bool): False keeps the loops marked ``unroll`` at or inside ``var`` as
          loops with ``#pragma GCC unroll`` (gcc unrolls them) instead of copying their bodies in the
          generated C; True (the default behaviour) copies them.

        gcc has no per-loop unroll-and-jam pragma; write it as a schedule instead (checked by the
        dependence analysis): ``o, i = split(var, factor)``, ``reorder`` ``i`` inside the inner loops,
        then ``unroll(i)``.
        """
        self._check_leaf(var, "pragma")
        where = f"pragma on stage {self.name}, loop {var.name}"
        if pragma_type == "unroll_and_jam":
            raise ScheduleError(f"{where}: gcc has no unroll-and-jam loop pragma; write it as a schedule: "
                                f"split({var.name}, factor), reorder the inner part inside the inner loops, "
                                "unroll it")
        if not isinstance(pragma_type, str) or pragma_type not in ("ivdep", "unroll", "unroll_explicit"):
            raise ScheduleError(f"{where}: unknown pragma {pragma_type!r}; the pragmas are 'ivdep', "
                                "'unroll' (a count) and 'unroll_explicit' (a bool)")
        value: bool | int
        if pragma_type == "unroll":
            if isinstance(pragma_value, bool) or not isinstance(pragma_value, int) \
                    or not 1 <= pragma_value <= 65535:
                raise ScheduleError(f"{where}: 'unroll' needs a count from 1 to 65535, got {pragma_value!r}")
            value = pragma_value
        else:
            default = True if pragma_type == "ivdep" else None
            value_given = default if pragma_value is None else pragma_value
            if not isinstance(value_given, bool) or (pragma_type == "ivdep" and value_given is not True):
                want = "True" if pragma_type == "ivdep" else "a bool"
                raise ScheduleError(f"{where}: {pragma_type!r} takes {want}, got {pragma_value!r}")
            value = value_given
        self.pragmas = {**self.pragmas, var: {**self.pragmas.get(var, {}), pragma_type: value}}

    @atomic
    def tensorize(self, var: IterVar, tensor_intrin) -> None:
        """Replace loop ``var`` and every loop inside it by a call of ``tensor_intrin`` (see
        :mod:`tesched.poly.tensorize`); the match is checked when lowering."""
        self._check_leaf(var, "tensorize")
        if not isinstance(tensor_intrin, TensorIntrin):
            raise TypeError("tensorize: the intrinsic must come from ts.decl_tensor_intrin")
        self.tensorize_spec = (var, tensor_intrin)

    # placement ------------------------------------------------------------------------------------
    def _check_placement(self, primitive: str, parent: "Stage", scope: object) -> None:
        """Check that loop ``scope`` of ``parent`` can hold this stage (``compute_at``/``store_at``)."""
        if not isinstance(parent, Stage) or parent.schedule is not self.schedule:
            raise ScheduleError(f"{primitive} of {self.name}: the parent must be a stage of the same "
                                "schedule, e.g. s[consumer]")
        where = f"{parent.name}.{getattr(scope, 'name', scope)}"
        if parent is self:
            raise ScheduleError(f"{primitive} of {self.name} at {where}: a stage cannot be computed or "
                                "stored inside itself")
        if self.is_output:
            raise ScheduleError(f"{primitive} of {self.name} at {where}: it is an output of the schedule; "
                                "outputs are computed and stored at the root")
        if not isinstance(scope, IterVar) or scope not in parent.all_iter_vars:
            owner = next((st.name for st in self.schedule.stages if isinstance(scope, IterVar)
                          and any(v is scope for v in st.all_iter_vars)), None)
            belongs = f"; it is a loop of {owner}" if owner else ""
            raise ScheduleError(f"{primitive} of {self.name}: {getattr(scope, 'name', scope)!r} is not a "
                                f"loop of {parent.name} (its loops are: "
                                f"{parent._names(parent.leaf_iter_vars)}){belongs}")
        if not self.schedule.reads_transitively(parent.op, self.op):
            readers = [st.name for st in self.schedule.stages if self in self.schedule.producers(st)]
            raise ScheduleError(f"{primitive} of {self.name} at {parent.name}.{scope.name}: {parent.name} "
                                f"does not read {self.name}, so no loop of {parent.name} is a legal "
                                f"place; stages that read it: {', '.join(readers) or 'none'}")
        enclosing: Stage | None = parent
        while enclosing is not None and enclosing.attach_type is AttachType.SCOPE:
            if enclosing.attach_stage is self:
                raise ScheduleError(f"{primitive} of {self.name} at {parent.name}.{scope.name}: "
                                    f"{parent.name} is itself computed inside {self.name} (a cycle)")
            enclosing = enclosing.attach_stage

    @atomic
    def compute_at(self, parent: "Stage", scope: IterVar) -> None:
        """Compute this stage inside loop ``scope`` of ``parent``: per iteration of that loop, exactly
        the region the loop's body reads (its polyhedral footprint), into a buffer local to it (or to
        the loop given to :meth:`store_at`)."""
        self._compute_only("compute_at")
        self._check_placement("compute_at", parent, scope)
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.SCOPE, parent, scope

    @atomic
    def store_at(self, parent: "Stage", scope: IterVar) -> None:
        """Allocate this stage's buffer inside loop ``scope`` of ``parent``, at or outside the loop it is
        computed at (Halide's ``store_at``).

        The iterations of the loops between the storage level and the ``compute_at`` level share the
        buffer: each computes only the part of its region that earlier iterations have not computed (a
        sliding window), so those loops must run in order (not ``parallel`` or ``vectorize``). Where the
        region slides along a dimension within a bounded window, the buffer keeps only a power-of-two
        number of slices along it (a circular buffer, indexed modulo its size).

        Parameters
        ----------
        parent : Stage
            The stage whose loop holds the buffer (the ``compute_at`` stage or one enclosing it).
        scope : IterVar
            A loop of ``parent`` enclosing the ``compute_at`` loop (or that loop itself).

        Example
        -------
        >>> s[blur_x].compute_at(s[blur_y], y)      # computed per row of blur_y...
        >>> s[blur_x].store_at(s[blur_y], yo)       # ...reusing rows within each strip yo
        """
        self._compute_only("store_at")
        self._check_placement("store_at", parent, scope)
        self.store_type, self.store_stage, self.store_ivar = AttachType.SCOPE, parent, scope

    @atomic
    def store_root(self) -> None:
        """Allocate this stage's buffer outside every loop (Halide's ``store_root``); with ``compute_at``
        the rows (slices) computed by earlier iterations are reused, see :meth:`store_at`."""
        self._compute_only("store_root")
        self.store_type, self.store_stage, self.store_ivar = AttachType.ROOT, None, None

    @atomic
    def bound(self, axis: IterVar, min: int, extent: int) -> None:
        """Realize exactly ``[min, min + extent)`` of ``axis`` (Halide's ``bound``).

        A stage computed at the root computes only that part of its tensor; a stage computed at a loop
        computes that range of ``axis`` at every iteration. A reader needing more of it, or an output
        whose whole dimension is not that range, raises ``ScheduleError``.

        Parameters
        ----------
        axis : IterVar
            One of the stage's own axes (``s[T].op.axis[k]``), not a reduce axis or a split loop.
        min, extent : int
            The first index realized and how many.
        """
        self._compute_only("bound")
        self.bounds[axis] = checked_bound(self.name, self.op, self.is_output, axis, min, extent, "bound")

    @atomic
    def bound_extent(self, axis: IterVar, extent: int) -> None:
        """Realize ``extent`` points of ``axis``, from where the readers' region starts (Halide's
        ``bound_extent``): a stage computed at a loop gets a constant-size region per iteration; a reader
        needing more than ``extent`` points raises ``ScheduleError``."""
        self._compute_only("bound_extent")
        self.bounds[axis] = checked_bound(self.name, self.op, self.is_output, axis, None, extent, "bound_extent")

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
        """Compute (and store) this stage in full, at the outermost level, before its readers."""
        self._compute_only("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.ROOT, None, None
        self.store_type, self.store_stage, self.store_ivar = None, None, None
