"""The polyhedral model of a schedule: statements, their iteration domains, loop vectors and accesses.

Each computed (not inlined) stage gives one statement, or two for a reduction (``init`` and ``update``).
A statement's coordinates are the stage's axes (``s0...``, then reduce axes ``r0...``), preceded, for a
stage computed inside another (``compute_at``), by the values of the enclosing loops (``p0...``): the
statement ``P_at[p..., s...]`` runs once per point ``s`` of P that the consumer's iteration ``p`` needs.
Every statement also has a *loop vector*: the affine (floor/mod) value of each enclosing loop, outermost
first, as isl text over its coordinates.

This module holds the data and the queries on it (isl text of expressions, loop and access maps). The
lowering fills it in by phases, each its own module: stage models and statements (:mod:`.stages`),
iteration domains and footprints (:mod:`.domains`), buffers (:mod:`.buffers`), tensorize matching
(:mod:`.tensorize`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import islpy as isl

from tesched.arith import linear
from tesched.errors import InternalError, LoweringError, ScheduleError
from tesched.ir.nodes import Buffer, BufferScope
from tesched.poly.affine import NotAffine, to_isl
from tesched.poly.fused import FusedGroup
from tesched.schedule.inline import inline_bodies
from tesched.ir.kinds import LoopKind
from tesched.schedule.schedule import Schedule
from tesched.schedule.stage import Stage
from tesched.te.expr import Expr, Param, Var
from tesched.te.intrinsic import TensorIntrin
from tesched.te.param import params_of, refuse_in_extent
from tesched.te.tensor import ComputeOp, IterType, IterVar, PlaceholderOp, Tensor, TensorRead
from tesched.te.visit import collect, walk


class StatementKind(StrEnum):
    """What an isl statement does: evaluate a stage's expression (``compute``), a reduction's ``init`` and
    ``update``, set a ``compute_at`` buffer's origin (``alloc``), call a tensor intrinsic, or prefetch
    what a later iteration reads (``prefetch``)."""

    COMPUTE = "compute"
    INIT = "init"
    UPDATE = "update"
    ALLOC = "alloc"
    CALL_RESET = "call_reset"
    CALL_UPDATE = "call_update"
    CALL_BODY = "call_body"
    PREFETCH = "prefetch"

    @property
    def is_call(self) -> bool:
        return self in (StatementKind.CALL_RESET, StatementKind.CALL_UPDATE, StatementKind.CALL_BODY)


@dataclass(eq=False)
class LoopSpace:
    """A statement described by its loop values, as TVM iterates: ``names`` (the enclosing loops' values,
    then the statement's own loops), its coordinates as isl expressions of them (``inverse``), and the
    constraints that make the loop values of one coordinate point unique (``conds``). isl's AST generator
    runs on this description: a band per loop is then a plain loop value, and isl never inverts the
    nested floors and modulos of split and fused loops (which can take it exponential time)."""

    names: list[str]
    inverse: list[str]
    conds: list[str]
    params: str                     # isl parameter prefix of the model
    _domain: isl.Set | None = field(default=None, repr=False)
    _coordinates: isl.MultiAff | None = field(default=None, repr=False)

    def coordinates(self, stmt: "Statement") -> isl.MultiAff:
        """``stmt[loop values] -> stmt[coordinates]``."""
        if self._coordinates is None:
            self._coordinates = isl.MultiAff(f"{self.params}{{ {stmt.name}[{', '.join(self.names)}] -> "
                                             f"{stmt.name}[{', '.join(self.inverse)}] }}")
        return self._coordinates

    def domain(self, stmt: "Statement") -> isl.Set:
        """The loop values of the instances of ``stmt`` that run: its domain's preimage (a substitution,
        exact because the coordinates-to-loops map is a bijection under ``conds``)."""
        if self._domain is None:
            valid = isl.Set(f"{self.params}{{ {stmt.name}[{', '.join(self.names)}] : "
                            f"{' and '.join(self.conds) or 'true'} }}")
            self._domain = stmt.domain.preimage_multi_aff(self.coordinates(stmt)).intersect(valid).coalesce()
        return self._domain


@dataclass(eq=False)
class Statement:
    """One isl statement: ``name[coords]`` over ``domain``, with its loop vector ``loops``."""

    name: str
    kind: StatementKind
    stage: "StageModel"
    coords: list[str]
    loops: list[str]                # full loop vector (prefix coordinates, then own loops)
    loop_vars: list[IterVar]        # the leaf variable of each own loop
    _domain: isl.Set | None = field(default=None, repr=False)
    space: LoopSpace | None = None  # over its loop values (None: ``coords`` already are loop values)

    @property
    def domain(self) -> isl.Set:
        """The instances that run (set by the domains phase, :mod:`.domains`)."""
        if self._domain is None:
            raise InternalError(f"the domain of {self.name} is used before the domains phase")
        return self._domain

    @domain.setter
    def domain(self, value: isl.Set) -> None:
        self._domain = value

    @property
    def has_domain(self) -> bool:
        return self._domain is not None

    @property
    def loop_coords(self) -> list[str]:
        """The statement's coordinates in the loop space (what isl's AST gives back for an instance)."""
        return self.coords if self.space is None else self.space.names

    @property
    def loop_domain(self) -> isl.Set:
        """The domain over :attr:`loop_coords`."""
        return self.domain if self.space is None else self.space.domain(self)


@dataclass
class Region:
    """Where one intrinsic tensor lives in tesched's buffers: tensor, origin coordinates (functions of the
    loops outside the region) and, per intrinsic dimension, which tensor dimension it follows."""

    tensor: Tensor
    origin: list[Expr]
    dims: list[int]


@dataclass
class TensorizeMatch:
    """How a tensorized stage maps onto its intrinsic (see :mod:`.tensorize`)."""

    intrin: TensorIntrin
    position: int
    kind: str                                   # "body" or "update" (with "reset" at the init)
    regions: list[Region]                       # inputs in intrinsic order, then the output
    absorbed: list["StageModel"] = field(default_factory=list)
    origins: dict = field(default_factory=dict)   # Var -> dimension: the stage's region origin there
    partial: list[str] = field(default_factory=list)   # axes not tiled exactly: partial tiles run plain loops


@dataclass(eq=False)
class StageModel:
    stage: Stage
    op: ComputeOp
    body: Expr
    tag: str                        # isl tuple name of the tensor, e.g. "T3"
    axes: list[IterVar]
    raxes: list[IterVar]
    coord: dict[int, str]           # id(axis) -> isl coordinate name
    leaf_expr: dict[int, str]       # id(iter var) -> isl expression over coordinates
    leaf_extent: dict[int, int | None]
    loop_name: dict[int, str] = field(default_factory=dict)   # id(leaf) -> isl name of its loop value
    axis_value: dict[int, str] = field(default_factory=dict)  # id(axis) -> isl expression of loop values
    loop_conds: list[tuple[bool, str]] = field(default_factory=list)  # (of a reduce loop, constraint)
    parent: "StageModel | None" = None
    level: int | None = None        # position of the attach loop in parent's loops
    prefix_len: int = 0
    store_parent: "StageModel | None" = None    # where the buffer is allocated (store_at): None at the
    store_level: int | None = None               # root; the compute_at place unless hoisted
    store_len: int = 0              # loop prefix values the buffer depends on (<= prefix_len)
    statements: list[Statement] = field(default_factory=list)
    alloc: Statement | None = None
    footprint: isl.Map | None = None
    storage: isl.Map | None = None  # hoisted storage (store_at outside compute_at): store prefix -> box
    realized: isl.Set | None = None  # a root stage's bounded region (``bound``), if smaller than its tensor
    computed: isl.Map | None = None  # loop prefix -> region computed there (the footprint, less what
    #                                  earlier iterations sharing a hoisted buffer computed)
    buffer: Buffer | None = None
    buffers: list[Buffer] = field(default_factory=list)   # one per output (``buffer`` is the first)
    origin: list = field(default_factory=list)          # a local buffer's origin per dim, before folding
    offset_pwaffs: list = field(default_factory=list)   # per dim: isl.PwAff of the prefix, or None
    tensorized: "TensorizeMatch | None" = None
    calls: list[Statement] = field(default_factory=list)
    absorbed_by: "StageModel | None" = None         # computed by the intrinsic call of that stage
    target: TensorRead | None = None                # a scatter's element written (and read) by its update,
    #                                                   or the element an update definition writes
    update_of: "StageModel | None" = None           # an update definition: its tensor's pure definition
    fused_into: "StageModel | None" = None          # ``compute_with``: the stage whose loops it shares,
    fused_level: int = -1                           # down to this level of them
    prefetches: list = field(default_factory=list)  # :class:`.prefetch.PrefetchPlan` per ``Stage.prefetch``
    tail_init: Statement | None = None              # tensorized: the init run as plain loops (partial tiles,
    tail_main: Statement | None = None              # or an intrinsic without reset), and the main statement
    model_leaves: list[IterVar] | None = None       # the loops modelled, where a fuse is kept out (:mod:`.fused`)
    groups: list[FusedGroup] = field(default_factory=list)   # those fuses

    @property
    def emitted(self) -> list[Statement]:
        """The statements placed in the schedule tree (intrinsic calls replace a tensorized nest)."""
        return self.calls or self.statements

    @property
    def storage_tag(self) -> str:
        """The isl name of the storage it writes: its own tag, or its pure definition's for an update."""
        return self.tag if self.update_of is None else self.update_of.tag

    @property
    def scatters(self) -> bool:
        """Whether it is a scatter (its update accumulates into a computed element)."""
        return self.target is not None and self.update_of is None

    @property
    def tail(self) -> list[Statement]:
        """The plain statements a tensorized stage runs besides its intrinsic calls."""
        return [s for s in (self.tail_init, self.tail_main) if s is not None]

    @property
    def n_loops(self) -> int:
        return self.tensorized.position if self.tensorized is not None else len(self.leaves)

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def leaves(self) -> list[IterVar]:
        """The stage's loops in the model, outermost first: its leaves, except that a fuse over a symbolic
        extent stands for the loops it fuses (see :mod:`.fused`)."""
        return self.stage.leaf_iter_vars if self.model_leaves is None else self.model_leaves

    def group_of(self, var: IterVar) -> FusedGroup | None:
        """The fuse kept out of the model that loop ``var`` is a component of, if any."""
        return next((g for g in self.groups if any(c is var for c in g.components)), None)

    def level_of(self, ivar: IterVar) -> int:
        """The position in :attr:`leaves` of the innermost model loop derived from the user's ``ivar``
        (the level a stage computed or stored at ``ivar`` sits at)."""
        leaf = self.stage.leaf_iter_vars[self.stage.leaf_position(ivar)]
        group = next((g for g in self.groups if any(p is leaf for p in g.pieces)), None)
        if group is not None and group.factor is not None and leaf is group.pieces[0]:
            raise ScheduleError(f"stage {self.name}: loop {leaf.name} splits {group.describe()}, a fuse over a "
                                "symbolic extent, whose blocks are formed only after the loops it fuses are "
                                "generated; place a stage (compute_at, store_at, prefetch) at "
                                f"{group.pieces[1].name} or at a loop outside {leaf.name}")
        last = leaf if group is None else group.components[-1]
        return next(k for k, v in enumerate(self.leaves) if v is last)

    def loop_label(self, var: IterVar) -> str:
        """The name of model loop ``var`` for messages (a component of a kept-out fuse: the fuse's)."""
        group = self.group_of(var)
        return var.name if group is None else group.describe()

    def user_loop(self, var: IterVar) -> IterVar:
        """The user's loop at model loop ``var``'s level: for a component of a kept-out fuse, the fused loop
        (or the inner loop of its split), where a stage placed there sits."""
        group = self.group_of(var)
        return var if group is None else group.pieces[-1]

    def loop_kind(self, var: IterVar) -> LoopKind:
        """The kind of model loop ``var`` (a component of a kept-out fuse: the fuse's, for the checks)."""
        group = self.group_of(var)
        return group.check_kind if group is not None else self.stage.iter_var_attrs.get(var, LoopKind.SERIAL)

    @property
    def tensor(self) -> Tensor:
        return self.op.output(0)

    @property
    def main(self) -> Statement:
        """The statement that evaluates the body (``update`` for reductions)."""
        return self.statements[-1]

    @property
    def init(self) -> Statement | None:
        return self.statements[0] if len(self.statements) == 2 else None

    @property
    def first_reduce(self) -> int | None:
        for k, v in enumerate(self.leaves):
            if v.iter_type == IterType.COMM_REDUCE:
                return k
        return None

    @property
    def hoisted(self) -> bool:
        """Whether the buffer lives outside the loop the stage is computed at (``store_at``), so the
        iterations in between share it (a sliding window)."""
        return self.parent is not None and self.store_len < self.prefix_len

    def chain(self) -> list[tuple["StageModel", int]]:
        """The (stage, loop level) pairs enclosing this stage, outermost first."""
        if self.parent is None or self.level is None:
            return []
        return self.parent.chain() + [(self.parent, self.level)]

    def inside(self, stage: "StageModel", level: int) -> bool:
        """Whether this stage's computation runs inside loop ``level`` of ``stage``."""
        return self is stage or any(s is stage and lv >= level for s, lv in self.chain())


def piece_constants(pa: isl.PwAff) -> list[int] | None:
    """The constant value of every piece of ``pa``, or None if some piece is not constant."""
    values = []
    for _, aff in pa.get_pieces():
        if not aff.is_cst():
            return None
        values.append(int(aff.get_constant_val().to_python()))
    return values


class PolyModel:
    """The statements of a schedule with their parameters; filled in by the lowering's model phases."""

    def __init__(self, sch: Schedule, arg_tensors: list[Tensor]):
        self.schedule = sch
        self.arg_tensors = arg_tensors
        self.bodies = inline_bodies(sch, linear.simplify)
        self.params = self._collect_params()
        self.param_names = {id(p): f"N{k}" for k, p in enumerate(self.params)}
        self.param_prefix = f"[{', '.join(self.param_names.values())}] -> " if self.params else ""
        self.context = isl.Set(self.param_prefix + "{ : " + (
            " and ".join(f"{n} > 0" for n in self.param_names.values()) or "true") + " }")
        self.stages: list[StageModel] = []
        self.by_op: dict[int, StageModel] = {}
        self.statements: dict[str, Statement] = {}
        # id(read) -> dimensions the bounds check could not prove (checked when the kernel runs)
        self.unproven: dict[int, frozenset[int]] = {}
        self._read_ops: dict[int, tuple[Expr, set[int]]] = {}     # id(stage) -> (its body, ids of the ops it reads)

    @property
    def param_env(self) -> dict[str, Expr]:
        """isl parameter name -> the size variable it stands for."""
        return {self.param_names[id(p)]: p for p in self.params}

    def index_statements(self) -> None:
        """Name every statement of every stage (intrinsic calls included) in :attr:`statements`."""
        self.statements = {s.name: s for sm in self.stages
                           for s in sm.statements + sm.calls + ([sm.alloc] if sm.alloc is not None else [])
                           + [p.statement for p in sm.prefetches] + sm.tail}

    def isl_of(self, e: object, coord: dict[int, str]) -> str:
        names = dict(self.param_names)
        names.update(coord)
        return to_isl(e, names)

    def _collect_params(self) -> list[Var]:
        """The size variables (isl parameters); the runtime parameters go to :attr:`scalars`."""
        found: dict[int, Var] = {}

        def scan(e: object) -> None:
            if isinstance(e, Expr):
                for node in walk(e):
                    if isinstance(node, Var) and not isinstance(node, (IterVar, Param)):
                        found.setdefault(id(node), node)

        bodies = []
        for st in self.schedule.stages:
            shape, ranges, body = list(st.op.output(0).shape), [], []
            if isinstance(st.op, ComputeOp):
                body = [self.bodies.get(id(st.op), st.op.body)]
                ranges = [b for rv in st.op.reduce_axis for b in (rv.range.min, rv.range.extent)]
            refuse_in_extent(shape + ranges, f"the shape or a reduction extent of {st.op.name}")
            for e in shape + body + ranges:
                scan(e)
            bodies += body
        self.scalars: list[Param] = params_of(bodies)
        return list(found.values())

    def tensor_domain(self, tensor: Tensor, tag: str, dims: frozenset[int] | None = None) -> isl.Set:
        """``tag[s...]`` over the tensor's box (only along ``dims`` when given: free along the others)."""
        coords = [f"s{k}" for k in range(tensor.ndim)]
        conds = [f"0 <= {c} < {self.isl_shape(d, tensor)}" for k, (c, d) in enumerate(zip(coords, tensor.shape))
                 if dims is None or k in dims]
        return isl.Set(f"{self.param_prefix}{{ {tag}[{', '.join(coords)}] : {' and '.join(conds) or 'true'} }}")

    def isl_shape(self, dim: object, tensor: Tensor) -> str:
        try:
            return self.isl_of(dim, {})
        except NotAffine as err:
            raise LoweringError(f"shape {tensor.shape} of {tensor.name} is not affine in its size "
                                f"variables: {err}") from None

    def reads_of(self, reader: StageModel, tensor: Tensor) -> list[tuple[Expr, ...]]:
        """The indices of every read of ``tensor`` by ``reader`` (of any output of its operation: the
        outputs of a multi-output compute are computed together, over one domain)."""
        return [r.indices for r in collect(reader.body, TensorRead) if r.tensor.op is tensor.op]

    def readers(self, sm: StageModel) -> list[StageModel]:
        """The stages that read ``sm``'s tensor (each body is walked once, not once per producer)."""
        return [r for r in self.stages if id(sm.tensor.op) in self._reads(r)]

    def _reads(self, reader: StageModel) -> set[int]:
        found = self._read_ops.get(id(reader))
        if found is None or found[0] is not reader.body:
            ops = {id(r.tensor.op) for r in collect(reader.body, TensorRead)}
            found = self._read_ops[id(reader)] = (reader.body, ops)
        return found[1]

    def loop_map(self, stmt: Statement, upto: int) -> isl.Map:
        """``stmt[coords] -> [first `upto` loop values]``, restricted to the statement's domain."""
        text = (f"{self.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] -> "
                f"[{', '.join(stmt.loops[:upto])}] }}")
        return isl.Map(text).intersect_domain(stmt.domain)

    def access_map(self, stmt: Statement, target_tag: str, indices: tuple, loose: bool = False) -> isl.Map:
        """``stmt[coords] -> target[indices]``; raises NotAffine for non-affine indices, unless ``loose``:
        then a non-affine index may be any value (intersect the range with the tensor's box to get the
        whole dimension, the footprint of a data-dependent index)."""
        coord = stmt.stage.coord
        idx = [self._index_text(i, coord, k if loose else None) for k, i in enumerate(indices)]
        text = f"{self.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] -> {target_tag}[{', '.join(idx)}] }}"
        return isl.Map(text).intersect_domain(stmt.domain)

    def _index_text(self, index: object, coord: dict[int, str], free: int | None) -> str:
        try:
            return self.isl_of(index, coord)
        except NotAffine:
            if free is None:
                raise
            return f"any{free}"

    def placeholder_buffers(self) -> dict[int, Buffer]:
        out: dict[int, Buffer] = {}
        for st in self.schedule.stages:
            if isinstance(st.op, PlaceholderOp):
                t = st.op.output(0)
                out[id(t)] = Buffer(t.name, list(t.shape), t.dtype, BufferScope.ARG)
        return out

    def footprint_extent(self, sm: StageModel, dim: int) -> int | None:
        """The extent of a computed-at stage's region along ``dim`` when it is the same for every
        iteration of the loop it is computed at (no clipped tiles), else None."""
        fp = sm.footprint
        assert fp is not None, f"{sm.name} is not computed at a loop"
        size = fp.dim_max(dim).sub(fp.dim_min(dim)).add_constant_val(isl.Val(1))
        values = piece_constants(size)
        return values[0] if values is not None and len(set(values)) == 1 else None

