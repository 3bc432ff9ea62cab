"""Match a stage's loop nest against a declared tensor intrinsic (:mod:`tesched.te.intrinsic`).

``s[T].tensorize(axis, intrin)`` asks that the loops of T from ``axis`` inward (and every stage
computed inside them) be replaced by one call. The match is structural, as in TVM:

- the loops from ``axis`` inward map, in order, onto the intrinsic's axes (data-parallel then reduction
  loops), with equal extents; where a split does not divide its axis, the whole tiles call the intrinsic
  and the partial ones run the stage's plain loops (found exactly with isl: the outer loop values whose
  tile holds every point of the intrinsic's box);
- T's expression (after inlining) equals the intrinsic's expression node by node, tensor reads included;
  a read of a stage computed inside the region, or at the loop right around it, matches a stage of the
  intrinsic, recursively; the call then computes that stage too (this is how a gemm+bias+relu intrinsic
  matches a gemm computed at the tile loop of a bias+relu stage);
- every index maps onto the intrinsic's index: each intrinsic dimension follows one tensor dimension, the
  two differing by a value fixed outside the region, so the region is a strided box; its origin and
  strides are passed to C. Indices may use floor division and modulo by constants (:mod:`.index_map`).

Calling convention (fixed): for each input of the intrinsic, in the order its compute first reads them,
then for its output: a pointer to the element at the region's origin, followed by one ``int64_t`` stride
(in elements) per dimension of that intrinsic tensor, outermost first. ``reset`` receives the output only.

Reductions follow TVM's three-part protocol: when reduction loops of T remain outside the region, the
output region is cleared with ``reset`` once and ``update`` accumulates each partial product (an intrinsic
with no ``reset`` leaves the clearing to the reduction's own init loop, as plain code); otherwise ``body``
computes the whole result (or ``reset`` then ``update`` when no ``body`` is given). An intrinsic
whose result is not the reduction itself (a fused epilogue such as bias+relu) is only valid on a whole
reduction: applying it per partial sum would be wrong, so that case is refused.

An extern stage (``ts.extern``) is given its one call here too, in place of all its loops, without a match
(:mod:`.extern_stage` checks its schedule).
"""
from __future__ import annotations

import islpy as isl

from tesched.errors import TensorizeError
from tesched.poly.extern_stage import extern_match
from tesched.poly.index_map import match_region
from tesched.poly.model import LoopSpace, PolyModel, Region, StageModel, Statement, StatementKind, TensorizeMatch
from tesched.te.expr import Binary, Call, Const, Expr, Unary, Var
from tesched.te.extern_op import ExternOp
from tesched.te.reduction import Reduce
from tesched.te.intrinsic import TensorIntrin
from tesched.te.tensor import ComputeOp, IterType, PlaceholderOp, Tensor, TensorRead
from tesched.te.visit import substitute


def _node_key(e: Expr) -> tuple:
    """What two nodes must share, besides their children, to match."""
    if isinstance(e, (Binary, Unary)):
        return (type(e), e.op)
    if isinstance(e, Call):
        return (Call, e.name)
    if isinstance(e, Reduce):
        # a user-defined reducer matches only itself (its name may be a built-in's), with the same init
        return (Reduce, e.combiner, id(e.reducer) if e.reducer is not None else None, e.where is None,
                e.inits is None, len(e.sources), e.value_index)
    if isinstance(e, Const):
        return (Const, e.value)
    return (type(e),)


class _Matcher:
    def __init__(self, model: PolyModel, sm: StageModel, intrin: TensorIntrin, position: int):
        self.model, self.sm, self.intrin, self.position = model, sm, intrin, position
        self.stage = sm.stage
        self.pairs: list[tuple[Var, Var]] = []       # (tesched loop or axis, intrinsic axis)
        self.bound: dict[int, Region] = {}            # id(intrinsic input) -> region
        self.absorbed: list = []
        self.origins: dict[Var, int] = {}            # region origin of a computed-at stage, per axis
        self.partial: list[str] = []                 # axes whose loops leave partial tiles (run as plain loops)
        self.loc = f"tensorize of {sm.name} at {sm.leaves[position].name} with {intrin.name}"

    def fail(self, what: str, detail: str) -> TensorizeError:
        return TensorizeError(f"{self.loc}: {what} differs: {detail}")

    # loops ----------------------------------------------------------------------------------------
    def loops(self) -> dict:
        """T's axes as expressions of its loops; region loops stand for the intrinsic's axes."""
        st, p, sm = self.stage, self.position, self.sm
        region = st.leaf_iter_vars[p:]
        extents = st.extents()
        values = st.root_values({id(v): v for v in st.leaf_iter_vars})
        for d, axis in enumerate(sm.axes):
            derived = [v for v in region if id(v) in set(map(id, st.descendants(axis)))]
            if sm.parent is None or not derived:
                continue
            if derived != [axis]:
                raise self.fail("extent", f"{sm.name} is computed at a loop of {sm.parent.name}, so its "
                                f"tensorized loops must be whole axes, but {axis.name} is split")
            size = self.model.footprint_extent(sm, d)
            if size is None:
                raise self.fail("extent", f"the region of {sm.name} along {axis.name} differs between "
                                f"iterations of {sm.parent.name} (clipped tiles)")
            extents[id(axis)] = size
            origin = Var(f"{axis.name}.origin", "int64")
            self.origins[origin] = d
            values[id(axis)] = origin + axis
        for v in region:
            if extents[id(v)] is None:
                raise self.fail("extent", f"loop {v.name} has no constant extent")
        for root in list(sm.axes) + list(sm.raxes):
            leaves = [v for v in st.leaf_iter_vars if id(v) in set(map(id, st.descendants(root)))]
            if sm.parent is None and any(v in region for v in leaves):
                covered = 1
                for v in leaves:
                    covered *= extents[id(v)] or 0
                if covered != extents[id(root)]:    # partial tiles: plain loops (see _place_calls)
                    self.partial.append(root.name)
        op = self.intrin.op
        spatial = [v for v in region if v.iter_type != IterType.COMM_REDUCE]
        reduce = [v for v in region if v.iter_type == IterType.COMM_REDUCE]
        if len(spatial) != len(op.axis) or len(reduce) != len(op.reduce_axis):
            raise self.fail("extent", f"the region has {len(spatial)} data-parallel and {len(reduce)} reduction "
                            f"loops, the intrinsic {len(op.axis)} and {len(op.reduce_axis)}")
        for v, a in zip(spatial + reduce, list(op.axis) + list(op.reduce_axis)):
            if extents[id(v)] != a.range.extent:
                raise self.fail("extent", f"loop {v.name} has extent {extents[id(v)]}, intrinsic axis {a.name} "
                                f"has {a.range.extent}")
            if not (isinstance(a.range.min, int) and a.range.min == 0):
                raise self.fail("extent", f"intrinsic axis {a.name} must start at 0")
            self.pairs.append((v, a))
        return {a: values[id(a)] for a in list(sm.axes) + list(sm.raxes)}

    # expressions ----------------------------------------------------------------------------------
    def expr(self, t: Expr, i: Expr, t_env: dict, i_env: dict) -> None:
        if type(t) is not type(i) and not (isinstance(t, Var) and isinstance(i, Var)):
            raise self.fail("expression", f"{t!r} does not match {i!r}")
        if t.dtype != i.dtype:
            raise self.fail("expression", f"{t!r} is {t.dtype}, the intrinsic's {i!r} is {i.dtype}")
        if isinstance(t, Const):
            if _node_key(t) != _node_key(i):
                raise self.fail("expression", f"constant {t!r} vs {i!r}")
            return
        if isinstance(t, TensorRead) and isinstance(i, TensorRead):
            self.read(t, i, t_env, i_env)
            return
        if isinstance(t, Var):
            raise self.fail("expression", f"loop variable {t.name} used as a value")
        if _node_key(t) != _node_key(i):
            raise self.fail("expression", f"{t!r} does not match {i!r}")
        for a, b in zip(t.children(), i.children()):
            self.expr(a, b, t_env, i_env)

    def read(self, t: TensorRead, i: TensorRead, t_env: dict, i_env: dict) -> None:
        t_idx = [substitute(e, t_env) for e in t.indices]
        i_idx = [substitute(e, i_env) for e in i.indices]
        if isinstance(i.tensor.op, PlaceholderOp):
            region = self.region(t.tensor, t_idx, i_idx, i.tensor.name)
            prev = self.bound.get(id(i.tensor))
            if prev is not None and (prev.tensor is not t.tensor or prev.dims != region.dims):
                raise self.fail("expression", f"intrinsic input {i.tensor.name} is read as {prev.tensor.name} "
                                f"and as {t.tensor.name}")
            self.bound[id(i.tensor)] = region
            return
        inner = self.model.by_op.get(id(t.tensor.op))
        enclosing = max(self.position - 1, 0)  # the region's own loops, or the loop right around them
        if inner is None or inner is self.sm or not inner.inside(self.sm, enclosing):
            raise self.fail("expression", f"the intrinsic computes {i.tensor.name} inside, but {t.tensor.name} "
                            f"is not computed inside the tensorized loops (compute_at it at the loop around them)")
        if len(t_idx) != len(i_idx):
            raise self.fail("index map", f"{t.tensor.name} and {i.tensor.name} have different ranks")
        iop = i.tensor.op
        assert isinstance(iop, ComputeOp)  # not a placeholder, handled above
        if len(inner.raxes) != len(iop.reduce_axis):
            raise self.fail("expression", f"{inner.name} and {iop.name} reduce over different numbers of axes")
        inner_t_env = dict(zip(inner.axes, t_idx))
        inner_i_env = dict(zip(iop.axis, i_idx))
        for r_t, r_i in zip(inner.raxes, iop.reduce_axis):
            if r_t.range.extent != r_i.range.extent or r_t.range.min != 0:
                hint = ("; an intrinsic with an epilogue must cover the whole reduction, since splitting it "
                        "would apply the epilogue to every partial sum") if self.intrin.has_epilogue else ""
                raise self.fail("extent", f"reduction {inner.name}.{r_t.name} has extent {r_t.range.extent}, "
                                f"intrinsic {iop.name}.{r_i.name} has {r_i.range.extent}{hint}")
            self.pairs.append((r_t, r_i))
        if inner not in self.absorbed:
            self.absorbed.append(inner)
        self.expr(inner.body, iop.body, inner_t_env, inner_i_env)

    def region(self, tensor: Tensor, t_idx: list[Expr], i_idx: list[Expr], label: str) -> Region:
        """Which tensor dimension each intrinsic dimension follows, and the origin (:mod:`.index_map`)."""
        return match_region(tensor, t_idx, i_idx, self.pairs, label, self.fail)

    def run(self) -> TensorizeMatch:
        t_env = self.loops()
        op = self.intrin.op
        self.expr(self.sm.body, op.body, t_env, {})
        out = self.region(self.sm.tensor, [t_env[a] for a in self.sm.axes], list(op.axis), op.name)
        missing = [t.name for t in self.intrin.inputs if id(t) not in self.bound]
        if missing:
            raise self.fail("expression", f"intrinsic inputs {missing} are never read by {self.sm.name}")
        kind = "body"
        if isinstance(self.sm.body, Reduce):
            outer_reduce = [v for v in self.sm.leaves[:self.position] if v.iter_type == IterType.COMM_REDUCE]
            if outer_reduce:
                if self.intrin.has_epilogue:
                    raise TensorizeError(f"{self.loc}: reduction loops {[v.name for v in outer_reduce]} stay "
                                         "outside the region, so the intrinsic would apply its epilogue to "
                                         "every partial sum; tensorize a loop outside the whole reduction")
                if self.intrin.impl.update is None:
                    raise TensorizeError(f"{self.loc}: reduction loops stay outside the region, so the "
                                         "intrinsic needs an update= implementation")
                kind = "update"
        elif self.intrin.reduces_in_pipeline and not self.absorbed:
            raise self.fail("expression", f"{self.sm.name} is not a reduction, the intrinsic reduces")
        inside = [s for s in self.model.stages if s is not self.sm and s.inside(self.sm, self.position)]
        strays = [s.name for s in inside if s not in self.absorbed]
        if strays:
            raise TensorizeError(f"{self.loc}: stages {strays} are computed inside the tensorized loops but the "
                                 "intrinsic does not compute them")
        if self.partial and self.absorbed:
            raise TensorizeError(f"{self.loc}: the loops do not tile {', '.join(self.partial)} exactly, and the "
                                 "partial tiles run as plain loops, which an intrinsic that also computes "
                                 f"{', '.join(s.name for s in self.absorbed)} cannot do; pick dividing factors")
        regions = [self.bound[id(t)] for t in self.intrin.inputs] + [out]
        return TensorizeMatch(self.intrin, self.position, kind, regions, list(self.absorbed), dict(self.origins),
                              list(self.partial))


def match_tensorize(model: PolyModel) -> None:
    """Match every tensorized stage of ``model`` against its intrinsic (raises TensorizeError) and put
    the intrinsic's call statements in place of its loop nest."""
    for sm in model.stages:
        _place_calls(model, sm)
    model.index_statements()


def _place_calls(model: PolyModel, sm: StageModel) -> None:
    spec = sm.stage.tensorize_spec
    if isinstance(sm.op, ExternOp):     # one call of the user's function in place of all its loops
        sm.tensorized = match = extern_match(model, sm)
    elif spec is None:
        return
    elif sm.groups:
        raise TensorizeError(f"tensorize of {sm.name} at {spec[0].name}: the stage fuses loops over a symbolic "
                            f"extent ({', '.join(g.describe() for g in sm.groups)}); tensorize a stage whose "
                            "loops are fused over constant extents")
    else:
        sm.tensorized = match = _Matcher(model, sm, spec[1], sm.stage.leaf_iter_vars.index(spec[0])).run()
    for inner in match.absorbed:
        inner.absorbed_by = sm
    outer = sm.leaves[:match.position]
    pcoords = [f"p{k}" for k in range(sm.prefix_len)]
    coords = pcoords + [f"l{k}" for k in range(len(outer))]
    base = f"S{sm.tag[1:]}"
    sm.calls = [Statement(f"{base}_call", StatementKind(f"call_{match.kind}"), sm, coords, list(coords), outer)]
    if match.kind == "update":
        spatial = [v for v in outer if v.iter_type != IterType.COMM_REDUCE]
        rcoords = pcoords + [f"l{k}" for k in range(len(spatial))]
        sm.calls.insert(0, Statement(f"{base}_reset", StatementKind.CALL_RESET, sm, rcoords, list(rcoords), spatial))
    if match.kind == "update" and match.intrin.impl.reset is None:
        sm.calls = sm.calls[1:]      # no reset: the output tile is cleared by the reduction's own init loops
    for call in sm.calls:
        source = sm.init if call.kind is StatementKind.CALL_RESET else sm.main
        assert source is not None, f"{sm.name} resets but has no init statement"
        call.domain = _full_tiles(model, sm, source, call).set_tuple_name(call.name)
    reset = next((c for c in sm.calls if c.kind is StatementKind.CALL_RESET), None)
    if sm.init is not None:
        if match.kind == "body":
            sm.tail_init = _rest(model, sm.init, sm.calls[-1], len(sm.calls[-1].coords))
        else:
            sm.tail_init = _rest(model, sm.init, reset, len(reset.coords) if reset is not None else 0)
    sm.tail_main = _rest(model, sm.main, sm.calls[-1], len(sm.calls[-1].coords))


def _full_tiles(model: PolyModel, sm: StageModel, source: Statement, call: Statement) -> isl.Set:
    """The values of the loops outside the region for which ``source`` runs every point of the
    intrinsic's box (whole tiles); the other tiles run as plain loops."""
    depth = len(call.coords)
    outer = model.loop_map(source, depth).range()
    inner = source.loop_vars[depth - sm.prefix_len:]
    if not inner or sm.tensorized is None or not sm.tensorized.partial:
        return outer
    every = model.loop_map(source, depth + len(inner)).range()
    extents = sm.stage.extents()
    conds = []
    for k, v in enumerate(inner):
        low = model.isl_of(0 if v.dom is None else v.dom.min, {})
        conds.append(f"{low} <= x{k} < {low} + {extents[id(v)]}")
    box = isl.Set(f"{model.param_prefix}{{ [{', '.join(f'x{k}' for k in range(len(inner)))}] : "
                  f"{' and '.join(conds)} }}")
    gaps = outer.flat_product(box).subtract(every).project_out(isl.dim_type.set, depth, len(inner))
    return outer.subtract(gaps).coalesce()


def _rest(model: PolyModel, stmt: Statement, call: Statement | None, depth: int) -> Statement | None:
    """A copy of ``stmt`` (as plain loops) over its instances that ``call`` does not run, or None."""
    covered = (model.loop_map(stmt, depth).intersect_range(call.domain.reset_tuple_id()).domain()
               if call is not None else stmt.domain.subtract(stmt.domain))
    rest = stmt.domain.subtract(covered.set_tuple_name(stmt.name))
    if rest.is_empty():
        return None
    name = f"{stmt.name}_tail"
    space = stmt.space and LoopSpace(stmt.space.names, stmt.space.inverse, stmt.space.conds, stmt.space.params)
    return Statement(name, stmt.kind, stmt.stage, stmt.coords, stmt.loops, stmt.loop_vars, rest.set_tuple_name(name),
                     space)
