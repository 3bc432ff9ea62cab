"""The state of one stage's schedule and the queries on it; the primitives are in the modules that
extend :class:`StageBase`.

A stage records its loops (``leaf_iter_vars``, made from the operation's axes by the ``relations``:
``Split``, ``Fuse``, ``Singleton``), their kinds and hints, and where it is computed and stored. This
module holds that state, the relations, the helpers every primitive uses (argument checks, loop
positions and extents, the values of the axes given the loops) and ``atomic``, which makes a primitive
all-or-nothing. It does not define primitives: loop transformations are in :mod:`.stage`, loop kinds
and hints in :mod:`.loop_hints`, placement in :mod:`.placement`. The schedule that owns the stages is
seen through the :class:`StageOwner` protocol.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Concatenate, Iterable, ParamSpec, Protocol, Sequence, SupportsIndex, TypeVar

from tesched.errors import ScheduleError
from tesched.schedule.kinds import AttachType, LoopKind, ThreadAxis
from tesched.schedule.storage import AxisBound
from tesched.te.expr import Expr, as_expr
from tesched.te.extern_op import ExternOp
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, PlaceholderOp, Tensor
from tesched.te.update import Func


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


def as_op(x: "Operation | Tensor | Func", what: str = "schedule") -> Operation:
    """The operation of ``x``: a tensor's, or a :class:`~tesched.te.update.Func`'s latest definition."""
    if isinstance(x, Func):
        return x.tensor.op
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"{what}: expected a Tensor or an Operation, got {type(x).__name__} {x!r}")


def positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise ScheduleError(f"{what} must be a positive int, got {value!r}")
    number = operator.index(value)
    if number <= 0:
        raise ScheduleError(f"{what} must be positive, got {number}")
    return number


_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")
_S = TypeVar("_S", bound="StageBase")


def atomic(primitive: Callable[Concatenate[_S, _Args], _Result]) -> Callable[Concatenate[_S, _Args], _Result]:
    """Make a primitive all-or-nothing: if it raises, the stage is left exactly as it was before the call
    (``tile(i, i, 2, 2)`` does not leave ``i`` split)."""

    @functools.wraps(primitive)
    def run(self: _S, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        saved = {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in vars(self).items()}
        try:
            return primitive(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return run


class StageOwner(Protocol):
    """What a stage's own state needs of the schedule that owns it."""

    stages: list
    stage_map: dict

    def producers(self, stage: Any) -> list: ...
    def reads_transitively(self, consumer: Operation, producer: Operation) -> bool: ...


class StageBase:
    """The schedule of one operation: its loops (``leaf_iter_vars``) and where it is computed."""

    def __init__(self, op: Operation, schedule: "StageOwner"):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        axes = op.loop_axes if isinstance(op, ComputeOp) else []
        self.all_iter_vars: list[IterVar] = list(axes)
        self.leaf_iter_vars: list[IterVar] = list(axes)
        self.relations: list[Relation] = []
        self.iter_var_attrs: dict[IterVar, LoopKind] = {}
        self.loop_origins: dict[IterVar, str] = {}     # loop variable -> the primitive that made it
        self.pragmas: dict[IterVar, dict[str, bool | int]] = {}   # loop -> C loop hints (``pragma``)
        self.thread_bindings: dict[IterVar, ThreadAxis] = {}       # loop -> GPU index (``bind``)
        self.memory_scope: str | None = None    # the scope a cache stage was made for ("shared", "local")
        self.prefetches: list[tuple[Tensor, IterVar, int]] = []    # (tensor, loop, offset), ``prefetch``
        self.specializations: list[Expr] = []                      # conditions of ``specialize``
        self.storage_aligns: dict[int, tuple[int, int]] = {}       # dimension -> (factor, offset)
        self.storage_order: tuple[int, ...] | None = None          # dimensions, outermost first (``reorder_storage``)
        self.storage_folds: dict[int, int] = {}                    # dimension -> slices kept (``fold_storage``)
        self.attach_type = AttachType.ROOT
        self.attach_stage: StageBase | None = None
        self.attach_ivar: IterVar | None = None
        self.is_output = False
        self.atomic_updates = False     # a scatter's updates run as atomic additions (see ``atomic``)
        self.tensorize_spec: tuple | None = None
        self.store_type: AttachType | None = None     # None: stored where computed
        self.store_stage: StageBase | None = None
        self.store_ivar: IterVar | None = None
        self.with_stage: StageBase | None = None     # ``compute_with``: the stage whose loops it shares,
        self.with_ivar: IterVar | None = None         # down to this loop of it
        self.bounds: dict[IterVar, AxisBound] = {}
        self.bound_alignments: dict[IterVar, tuple[int, int]] = {}  # axis -> (modulus, remainder), ``align_bounds``

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
        """``Stage(C, at D.j.outer, loops: i (32), j (32) vectorized, k (64) reduce)``."""
        if isinstance(self.op, PlaceholderOp):
            return f"Stage({self.name}, input)"
        return f"Stage({self.name}, {self._placement_text()}, loops: {self._loops_text()})"

    def _placement_text(self) -> str:
        if self.attach_type is AttachType.SCOPE and self.attach_stage is not None and self.attach_ivar is not None:
            text = f"at {self.attach_stage.name}.{self.attach_ivar.name}"
        else:
            text = str(self.attach_type)
        if self.store_type is AttachType.ROOT:
            text += ", stored at root"
        elif self.store_stage is not None and self.store_ivar is not None:
            text += f", stored at {self.store_stage.name}.{self.store_ivar.name}"
        if self.with_stage is not None and self.with_ivar is not None:
            text += f", with {self.with_stage.name}.{self.with_ivar.name}"
        return text

    def _loops_text(self) -> str:
        """Each loop in order with its trip count (a size expression, or ``?`` for a part of a split of one)
        and its kind: ``i.outer (8) parallel, j (n), k (64) reduce``."""
        extents = self.extents()
        loops = []
        for v in self.leaf_iter_vars:
            extent = extents.get(id(v))
            count = str(extent) if extent is not None else repr(v.dom.extent) if v.dom is not None else "?"
            kind = self.iter_var_attrs.get(v, LoopKind.SERIAL)
            loops.append(" ".join([f"{v.name} ({count})"] + ([] if kind is LoopKind.SERIAL else [str(kind)])
                                  + (["reduce"] if v.iter_type is IterType.COMM_REDUCE else [])))
        return ", ".join(loops) or "none"

    def _compute_only(self, primitive: str) -> None:
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(f"{primitive}: {self.name} is an input (placeholder); it has no loops")
        if isinstance(self.op, ExternOp) and primitive != "compute_root":
            raise ScheduleError(f"{primitive}: {self.name} is an extern stage, computed by one call of C function "
                                f"{self.op.function} at the root; its loops cannot be scheduled (schedule its "
                                "readers)")

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
