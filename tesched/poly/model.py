"""The polyhedral model of a schedule: statements, iteration domains, loop maps, footprints, buffers.

Each computed (not inlined) stage gives one statement, or two for a reduction (``init`` and ``update``).
A statement's coordinates are the stage's axes (``s0...``, then reduce axes ``r0...``), preceded, for a
stage computed inside another (``compute_at``), by the values of the enclosing loops (``p0...``): the
statement ``P_at[p..., s...]`` runs once per point ``s`` of P that the consumer's iteration ``p`` needs.
That set is the *footprint*: ``prefix -> reader instances -> read elements``, computed with isl from the
readers' loop maps and access relations, so clipped borders and overlapping halos come out exact (and
overlapping tiles recompute their halo: Halide's overlapped tiling).

Every statement also has a *loop vector*: the affine (floor/mod) value of each enclosing loop, outermost
first, as isl text over its coordinates. :mod:`.tree` turns these into bands.

A stage computed at a loop gets a local buffer whose shape is the footprint's box (the largest extent over
all iterations of that loop) and whose origin is the footprint's per-iteration minimum.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import islpy as isl

from tesched.errors import LoweringError, ScheduleError
from tesched.ir.nodes import Buffer, BufferScope, OriginVar
from tesched.poly.affine import NotAffine, to_isl
from tesched.schedule.inline import inline_bodies
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.schedule.schedule import Fuse, Schedule, Split, Stage
from tesched.te.expr import Const, Expr, Reduce, Var
from tesched.te.tensor import ComputeOp, IterType, IterVar, PlaceholderOp, Tensor, TensorRead
from tesched.te.visit import collect, walk


def _piece_constants(pa: isl.PwAff) -> list[int] | None:
    """The constant value of every piece of ``pa``, or None if some piece is not constant."""
    values = []
    for _, aff in pa.get_pieces():
        if not aff.is_cst():
            return None
        values.append(int(aff.get_constant_val().to_python()))
    return values


@dataclass(eq=False)
class Statement:
    """One isl statement: ``name[coords]`` over ``domain``, with its loop vector ``loops``."""

    name: str
    kind: str                       # compute | init | update | alloc
    stage: "StageModel"
    coords: list[str]
    loops: list[str]                # full loop vector (prefix coordinates, then own loops)
    loop_vars: list[IterVar]        # the leaf variable of each own loop
    domain: isl.Set | None = None


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
    parent: "StageModel | None" = None
    level: int | None = None        # position of the attach loop in parent's loops
    prefix_len: int = 0
    statements: list[Statement] = field(default_factory=list)
    alloc: Statement | None = None
    footprint: isl.Map | None = None
    buffer: Buffer | None = None
    offset_pwaffs: list = field(default_factory=list)   # per dim: isl.PwAff of the prefix, or None
    tensorized: object = None                       # a TensorizeMatch when tensorized
    calls: list[Statement] = field(default_factory=list)
    absorbed_by: "StageModel | None" = None         # computed by the intrinsic call of that stage

    @property
    def emitted(self) -> list[Statement]:
        """The statements placed in the schedule tree (intrinsic calls replace a tensorized nest)."""
        return self.calls or self.statements

    @property
    def n_loops(self) -> int:
        return self.tensorized.position if self.tensorized is not None else len(self.leaves)  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def leaves(self) -> list[IterVar]:
        return self.stage.leaf_iter_vars

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

    def chain(self) -> list[tuple["StageModel", int]]:
        """The (stage, loop level) pairs enclosing this stage, outermost first."""
        if self.parent is None:
            return []
        return self.parent.chain() + [(self.parent, self.level)]  # type: ignore[list-item]

    def inside(self, stage: "StageModel", level: int) -> bool:
        """Whether this stage's computation runs inside loop ``level`` of ``stage``."""
        return self is stage or any(s is stage and lv >= level for s, lv in self.chain())


class PolyModel:
    """All statements of a schedule, with parameters, domains, footprints and buffers."""

    def __init__(self, sch: Schedule, arg_tensors: list[Tensor]):
        self.schedule = sch
        self.arg_tensors = arg_tensors
        self.bodies = inline_bodies(sch)
        self.params = self._collect_params()
        self.param_names = {id(p): f"N{k}" for k, p in enumerate(self.params)}
        self.param_prefix = f"[{', '.join(self.param_names.values())}] -> " if self.params else ""
        self.context = isl.Set(self.param_prefix + "{ : " + (
            " and ".join(f"{n} > 0" for n in self.param_names.values()) or "true") + " }")
        self.stages: list[StageModel] = []
        self.by_op: dict[int, StageModel] = {}
        for st in sch.stages:
            if isinstance(st.op, ComputeOp) and st.attach_type is not AttachType.INLINE:
                sm = self._stage_model(st, len(self.stages))
                self.stages.append(sm)
                self.by_op[id(st.op)] = sm
        for sm in self.stages:
            self._resolve_attach(sm)
        for sm in self.stages:
            self._make_statements(sm)
        for sm in reversed(self.stages):     # readers before producers
            self._make_domains(sm)
        self.statements: dict[str, Statement] = {}
        self.index_statements()

    # helpers --------------------------------------------------------------------------------------
    def index_statements(self) -> None:
        """Name every statement of every stage (intrinsic calls included) in :attr:`statements`."""
        self.statements = {s.name: s for sm in self.stages
                           for s in sm.statements + sm.calls + ([sm.alloc] if sm.alloc is not None else [])}

    def isl_of(self, e: object, coord: dict[int, str]) -> str:
        names = dict(self.param_names)
        names.update(coord)
        return to_isl(e, names)

    def _collect_params(self) -> list[Var]:
        found: dict[int, Var] = {}

        def scan(e: object) -> None:
            if isinstance(e, Expr):
                for node in walk(e):
                    if isinstance(node, Var) and not isinstance(node, IterVar):
                        found.setdefault(id(node), node)

        for st in self.schedule.stages:
            for dim in st.op.output(0).shape:
                scan(dim)
            if isinstance(st.op, ComputeOp):
                scan(self.bodies[id(st.op)])
                for rv in st.op.reduce_axis:
                    scan(rv.dom.min)
                    scan(rv.dom.extent)
        return list(found.values())

    def tensor_domain(self, tensor: Tensor, tag: str) -> isl.Set:
        coords = [f"s{k}" for k in range(tensor.ndim)]
        conds = [f"0 <= {c} < {self.isl_shape(d, tensor)}" for c, d in zip(coords, tensor.shape)]
        return isl.Set(f"{self.param_prefix}{{ {tag}[{', '.join(coords)}] : {' and '.join(conds) or 'true'} }}")

    def isl_shape(self, dim: object, tensor: Tensor) -> str:
        try:
            return self.isl_of(dim, {})
        except NotAffine as err:
            raise LoweringError(f"shape {tensor.shape} of {tensor.name} is not affine in its size "
                                f"variables: {err}") from None

    # stages and loops -----------------------------------------------------------------------------
    def _stage_model(self, st: Stage, index: int) -> StageModel:
        op: ComputeOp = st.op  # type: ignore[assignment]
        axes, raxes = list(op.axis), list(op.reduce_axis)
        coord = {id(a): f"s{k}" for k, a in enumerate(axes)}
        coord.update({id(r): f"r{k}" for k, r in enumerate(raxes)})
        leaf_expr: dict[int, str] = {}
        leaf_min: dict[int, str] = {}
        extent = st.extents()
        for a in axes + raxes:
            leaf_expr[id(a)] = coord[id(a)]
            leaf_min[id(a)] = self.isl_of(a.dom.min, {})
        for rel in st.relations:
            if isinstance(rel, Split):
                base = f"({leaf_expr[id(rel.parent)]} - ({leaf_min[id(rel.parent)]}))"
                factor = st.split_factor(rel)
                leaf_expr[id(rel.outer)] = f"floor({base}/{factor})"
                leaf_expr[id(rel.inner)] = f"({base} mod {factor})"
                leaf_min[id(rel.outer)] = leaf_min[id(rel.inner)] = "0"
            elif isinstance(rel, Fuse):
                iext = extent[id(rel.inner)]
                if iext is None:
                    raise ScheduleError(f"fuse of {st.name}.{rel.outer.name} and {rel.inner.name}: the inner "
                                        "loop's extent must be a constant")
                leaf_expr[id(rel.fused)] = (f"(({leaf_expr[id(rel.outer)]} - ({leaf_min[id(rel.outer)]}))"
                                            f" * {iext} + ({leaf_expr[id(rel.inner)]} - "
                                            f"({leaf_min[id(rel.inner)]})))")
                leaf_min[id(rel.fused)] = "0"
        body = self.bodies[id(op)]
        return StageModel(st, op, body, f"T{index}", axes, raxes, coord, leaf_expr, extent)

    def _resolve_attach(self, sm: StageModel) -> None:
        st = sm.stage
        for v, kind in st.iter_var_attrs.items():
            if v not in st.leaf_iter_vars:
                raise ScheduleError(f"stage {sm.name}: loop {v.name} is marked {kind} but was later split or "
                                    f"fused; mark one of its current loops "
                                    f"({', '.join(x.name for x in st.leaf_iter_vars)})")
            if kind is LoopKind.UNROLLED and sm.leaf_extent[id(v)] is None:
                raise ScheduleError(f"unroll of {sm.name}.{v.name}: its extent is not a constant; split it "
                                    "with a constant factor and unroll the inner loop")
        if st.attach_type is not AttachType.SCOPE:
            return
        parent = self.by_op.get(id(st.attach_stage.op))  # type: ignore[union-attr]
        if parent is None:
            raise ScheduleError(f"compute_at of {sm.name}: {st.attach_stage.name} was inlined, so it has no "  # type: ignore[union-attr]
                                "loops to compute inside; compute it at a stage that has loops")
        sm.parent = parent
        sm.level = parent.stage.leaf_position(st.attach_ivar)  # type: ignore[arg-type]

    def _make_statements(self, sm: StageModel) -> None:
        prefix_len = sum(lv + 1 for _, lv in sm.chain())
        sm.prefix_len = prefix_len
        pcoords = [f"p{k}" for k in range(prefix_len)]
        scoords = [sm.coord[id(a)] for a in sm.axes]
        rcoords = [sm.coord[id(r)] for r in sm.raxes]
        own = [sm.leaf_expr[id(v)] for v in sm.leaves]
        base = f"S{sm.tag[1:]}"
        if isinstance(sm.body, Reduce):
            spatial = [v for v in sm.leaves if v.iter_type != IterType.COMM_REDUCE]
            sm.statements = [
                Statement(f"{base}_init", "init", sm, pcoords + scoords,
                          pcoords + [sm.leaf_expr[id(v)] for v in spatial], spatial),
                Statement(f"{base}_update", "update", sm, pcoords + scoords + rcoords, pcoords + own,
                          list(sm.leaves)),
            ]
        else:
            sm.statements = [Statement(base, "compute", sm, pcoords + scoords, pcoords + own, list(sm.leaves))]
        if sm.parent is not None:
            sm.alloc = Statement(f"{base}_alloc", "alloc", sm, pcoords, list(pcoords), [])


    # domains and footprints -----------------------------------------------------------------------
    def reads_of(self, reader: StageModel, tensor: Tensor) -> list[tuple[Expr, ...]]:
        return [r.indices for r in collect(reader.body, TensorRead) if r.tensor is tensor]

    def readers(self, sm: StageModel) -> list[StageModel]:
        return [r for r in self.stages if self.reads_of(r, sm.tensor)]

    def loop_map(self, stmt: Statement, upto: int) -> isl.Map:
        """``stmt[coords] -> [first `upto` loop values]``, restricted to the statement's domain."""
        text = (f"{self.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] -> "
                f"[{', '.join(stmt.loops[:upto])}] }}")
        return isl.Map(text).intersect_domain(stmt.domain)

    def access_map(self, stmt: Statement, target_tag: str, indices: tuple) -> isl.Map:
        """``stmt[coords] -> target[indices]``; raises NotAffine for non-affine indices."""
        coord = stmt.stage.coord
        idx = [self.isl_of(i, coord) for i in indices]
        text = f"{self.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] -> {target_tag}[{', '.join(idx)}] }}"
        return isl.Map(text).intersect_domain(stmt.domain)

    def _make_domains(self, sm: StageModel) -> None:
        tdom = self.tensor_domain(sm.tensor, sm.tag)
        rdom = None
        if sm.raxes:
            conds = []
            for r in sm.raxes:
                lo = self.isl_of(r.dom.min, {})
                ext = self.isl_of(r.dom.extent, {})
                conds.append(f"{lo} <= {sm.coord[id(r)]} < ({lo}) + ({ext})")
            rc = ", ".join(sm.coord[id(r)] for r in sm.raxes)
            rdom = isl.Set(f"{self.param_prefix}{{ [{rc}] : {' and '.join(conds)} }}")
        if sm.parent is None:
            spatial = tdom
        else:
            sm.footprint = self._footprint(sm, tdom)
            spatial = sm.footprint.wrap().flatten()
            sm.alloc.domain = sm.footprint.domain().set_tuple_name(sm.alloc.name)  # type: ignore[union-attr]
        for stmt in sm.statements:
            dom = spatial if stmt.kind != "update" else spatial.flat_product(rdom)
            stmt.domain = dom.set_tuple_name(stmt.name)
        self._make_buffer(sm)

    def _footprint(self, sm: StageModel, tdom: isl.Set) -> isl.Map:
        parent, level = sm.parent, sm.level
        assert parent is not None and level is not None
        depth = sm.prefix_len
        readers = self.readers(sm)
        outside = [r for r in readers if not r.inside(parent, level)]
        if outside:
            raise ScheduleError(self._attach_message(sm, outside, readers))
        fp = None
        for reader in readers:
            stmt = reader.main
            lmap = self.loop_map(stmt, depth).reverse()
            for indices in self.reads_of(reader, sm.tensor):
                try:
                    acc = self.access_map(stmt, sm.tag, indices)
                except NotAffine as err:
                    raise ScheduleError(f"compute_at of {sm.name}: {reader.name} reads it at non-affine "
                                        f"indices ({err}), so the region each iteration needs cannot be "
                                        "computed; use compute_root") from None
                part = lmap.apply_range(acc)
                fp = part if fp is None else fp.union(part)
        assert fp is not None
        return self._box(fp.intersect_range(tdom).coalesce(), tdom)

    def _box(self, fp: isl.Map, tdom: isl.Set) -> isl.Map:
        """The per-iteration bounding box of a footprint (Halide's choice): the producer computes a
        rectangle, so its loops stay simple and contiguous; its extent is the buffer's shape anyway."""
        n = fp.dim(isl.dim_type.out)
        coords = ", ".join(f"x{k}" for k in range(n))
        box = None
        for d in range(n):
            for bound, op in ((fp.dim_min(d), ">="), (fp.dim_max(d), "<=")):
                rel = isl.Map(f"{self.param_prefix}{{ [v] -> {tdom.get_tuple_name()}[{coords}] : x{d} {op} v }}")
                part = isl.Map.from_pw_aff(bound).apply_range(rel)
                box = part if box is None else box.intersect(part)
        box = box.intersect_domain(fp.domain()).intersect_range(tdom).coalesce()
        return fp if box.is_equal(fp) else box   # an exact footprint reads better than its rebuilt box

    def _attach_message(self, sm: StageModel, outside: list[StageModel], readers: list[StageModel]) -> str:
        parent, level = sm.parent, sm.level
        assert parent is not None and level is not None
        loop = parent.leaves[level].name
        legal = [parent.leaves[t].name for t in range(len(parent.leaves))
                 if all(r.inside(parent, t) for r in readers)]
        where = (f"legal loops of {parent.name}: {', '.join(legal)}" if legal else
                 f"no loop of {parent.name} is legal, since {', '.join(r.name for r in outside)} also reads it "
                 "outside that stage; compute it at the root or at a loop enclosing every reader")
        return (f"compute_at of {sm.name} at {parent.name}.{loop}: {', '.join(r.name for r in outside)} "
                f"read(s) {sm.name} outside that loop, so those reads would see an incomplete buffer; {where}")

    # buffers --------------------------------------------------------------------------------------
    def _make_buffer(self, sm: StageModel) -> None:
        tensor = sm.tensor
        if sm.parent is None:
            scope = BufferScope.ARG if any(t is tensor for t in self.arg_tensors) else BufferScope.GLOBAL
            sm.buffer = Buffer(sm.name, list(tensor.shape), tensor.dtype, scope)
            return
        fp = sm.footprint
        shape: list[int | Expr] = []
        offsets: list[Expr] = []
        for d in range(tensor.ndim):
            lo, hi = fp.dim_min(d), fp.dim_max(d)  # type: ignore[union-attr]
            size = hi.sub(lo).add_constant_val(isl.Val(1))
            biggest = size.as_map().range().dim_max(0)
            constants = _piece_constants(biggest)
            if constants is not None:
                shape.append(max(constants))
            else:
                shape.append(biggest)  # type: ignore[arg-type]  # turned into an expression by the lowering
            origin = _piece_constants(lo)
            if origin is not None and len(set(origin)) == 1:
                offsets.append(Const(origin[0], "int64"))
                sm.offset_pwaffs.append(None)
            else:
                offsets.append(OriginVar(f"{sm.name}.min{d}"))
                sm.offset_pwaffs.append(lo)
        sm.buffer = Buffer(sm.name, shape, tensor.dtype, BufferScope.LOCAL, offsets)

    def footprint_extent(self, sm: StageModel, dim: int) -> int | None:
        """The extent of a computed-at stage's region along ``dim`` when it is the same for every
        iteration of the loop it is computed at (no clipped tiles), else None."""
        fp = sm.footprint
        size = fp.dim_max(dim).sub(fp.dim_min(dim)).add_constant_val(isl.Val(1))  # type: ignore[union-attr]
        values = _piece_constants(size)
        return values[0] if values is not None and len(set(values)) == 1 else None

    def computed_points(self, sm: StageModel) -> int | None:
        """How many points of ``sm`` the schedule computes (halo recompute included), or None when the
        sizes are symbolic. Counted per distinct box size: tiles with equal boxes are counted by isl."""
        if self.params:
            return None
        size = 1
        for d in sm.tensor.shape:
            size *= int(d)
        if sm.footprint is None:
            return size
        fp = sm.footprint
        pieces = []
        for d in range(sm.tensor.ndim):
            extent = fp.dim_max(d).sub(fp.dim_min(d)).add_constant_val(isl.Val(1))
            parts = extent.get_pieces()
            if not all(aff.is_cst() for _, aff in parts):
                return int(sm.statements[0].domain.count_val().to_python()) if sm.init is not None or \
                    not sm.raxes else None
            pieces.append([(dom, int(aff.get_constant_val().to_python())) for dom, aff in parts])
        total = 0
        for combo in itertools.product(*pieces):
            tiles = fp.domain()
            volume = 1
            for dom, ext in combo:
                tiles = tiles.intersect(dom)
                volume *= ext
            if not tiles.is_empty():
                total += int(tiles.count_val().to_python()) * volume
        return total

    def redundancy(self) -> dict[str, float]:
        """Points computed / points in the tensor, for every stage computed inside another."""
        out = {}
        for sm in self.stages:
            if sm.parent is not None and sm.absorbed_by is None:
                points = self.computed_points(sm)
                if points is not None:
                    size = 1
                    for d in sm.tensor.shape:
                        size *= int(d)
                    out[sm.name] = points / size
        return out

    def placeholder_buffers(self) -> dict[int, Buffer]:
        out = {}
        for st in self.schedule.stages:
            if isinstance(st.op, PlaceholderOp):
                t = st.op.output(0)
                out[id(t)] = Buffer(t.name, list(t.shape), t.dtype, BufferScope.ARG)
        return out
