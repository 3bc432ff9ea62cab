"""Statement bodies: what each isl statement instance does, as loop IR, given its coordinates.

``compute`` stores the stage's expression; ``init`` stores the reduction's identity; ``update`` combines
the stored value with the reduced expression (under the reduction's ``where``); ``alloc`` sets the origin
of a ``compute_at`` buffer for the current iteration of the loop it lives in; ``prefetch`` loops over the
box a later iteration reads. Tensor reads become loads from the tensor's buffer (argument, whole
intermediate, or local region).

This is the ``AST to loop IR`` pass (and the nests ``specialize`` makes): each stage's value comes checked
from the ``index checks`` pass (:mod:`.index_checks`), and the result keeps what later passes do: the
loops of a fuse over symbolic extents stay a nest (``collapse fused loops``, :mod:`.collapse`) and a value
used twice is repeated (``bind shared subexpressions``, :mod:`tesched.ir.cse`), except in a tuple
reduction's combination, whose shared values are bound here (the vectorizer reads that form).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import islpy as isl

from tesched.arith.linear import simplify
from tesched.ir import nodes as ir
from tesched.ir.cse import bind_shared, wrap_lets
from tesched.ir.visitor import map_stmt
from tesched.poly.astgen import AstToIR, LoopAst, ast_expr_to_ir
from tesched.poly.extern_stage import extern_call
from tesched.poly.fused import FusedGroup
from tesched.poly.index_checks import StageBodies
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.poly.prefetch import CACHE_LINE_BYTES, PrefetchPlan
from tesched.poly.tree import AllocMark, ScheduleTree
from tesched.ir.kinds import LoopKind
from tesched.te.dtype import itemsize
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Select, Var
from tesched.te.extern_op import ExternOp
from tesched.te.reduction import MultiValue, Reduce
from tesched.te.tensor import TensorRead
from tesched.te.update import Definition
from tesched.te.visit import rewrite, substitute


def _prefix_expr(pa: isl.PwAff) -> isl.AstExpr:
    """An AST expression for ``pa`` (a function of the loop prefix) over ids ``__p0, __p1, ...``."""
    n = pa.dim(isl.dim_type.in_)
    for k in range(n):
        pa = pa.set_dim_id(isl.dim_type.in_, k, isl.Id(f"__p{k}"))
    pa = pa.move_dims(isl.dim_type.param, pa.dim(isl.dim_type.param), isl.dim_type.in_, 0, n)
    return isl.AstBuild.from_context(pa.domain()).expr_from_pw_aff(pa)


def _as_params(st: isl.Set) -> isl.Set:
    """``st`` with its dimensions made parameters ``__p0, __p1, ...`` (an AST build context)."""
    n = st.dim(isl.dim_type.set)
    for k in range(n):
        st = st.set_dim_id(isl.dim_type.set, k, isl.Id(f"__p{k}"))
    return st.move_dims(isl.dim_type.param, st.dim(isl.dim_type.param), isl.dim_type.set, 0, n).params()


def _stride(buf: ir.Buffer, dim: int) -> Expr:
    """Elements between neighbours along ``dim`` of ``buf`` (dense in its memory order, or aligned:
    ``storage_align``)."""
    if buf.aligns:
        return Const(buf.strides()[dim], "int64")
    order = buf.memory_order()
    stride: Expr = Const(1, "int64")
    for d in [buf.shape[k] for k in order[order.index(dim) + 1:]]:
        stride = Binary(BinOp.MUL, stride, d if isinstance(d, Expr) else Const(d, "int64"), "int64")
    return simplify(stride)


class StatementEmitter:
    def __init__(self, model: PolyModel, buffers: dict[int, ir.Buffer], param_env: Mapping[str, Expr],
                 bodies: StageBodies):
        self.model, self.buffers, self.param_env, self.bodies = model, buffers, param_env, bodies
        self.origin_exprs = {id(sm): [None if pa is None else _prefix_expr(pa) for pa in sm.offset_pwaffs]
                             for sm in model.stages}
        self.prefetches = {p.statement.name: p for sm in model.stages for p in sm.prefetches}

    def prefetch(self, plan: PrefetchPlan, coords: list[Expr]) -> ir.Stmt:
        """Loops over the box ``plan`` prefetches for these loop values, one prefetch per cache line of
        each innermost row, under the condition that the later iteration exists."""
        env = dict(self.param_env)
        env.update({f"__p{k}": c for k, c in enumerate(coords)})
        buf = self.buffers[id(plan.tensor)]
        line = max(1, CACHE_LINE_BYTES // itemsize(plan.tensor.dtype))
        index = [ir.LoopVar(f"{plan.tensor.name}.ahead{d}") for d in range(len(plan.low))]
        body: ir.Stmt = ir.Prefetch(ir.Address(buf, index))
        for d in reversed(range(len(index))):
            low = ast_expr_to_ir(_prefix_expr(plan.low[d]), env)
            high = ast_expr_to_ir(_prefix_expr(plan.high[d]), env)
            body = ir.For(index[d], low, simplify(Binary(BinOp.ADD, high, Const(1, "int64"), "int64")), LoopKind.SERIAL, body, line if d == len(index) - 1 else 1)
        if plan.every.is_subset(plan.where):
            return body
        build = isl.AstBuild.from_context(_as_params(plan.every))
        return ir.IfThenElse(ast_expr_to_ir(build.expr_from_set(_as_params(plan.where)), env), body)

    def allocate(self, mark: AllocMark) -> ir.Buffer:
        return self.buffers[id(mark.stage.tensor)]

    def origin(self, sm: StageModel, prefix: list[Expr]) -> list[Expr]:
        """Where the region of a computed-at stage starts, for the given enclosing loop values."""
        env = dict(self.param_env)
        env.update({f"__p{k}": c for k, c in enumerate(prefix)})
        return [off if ast is None else ast_expr_to_ir(ast, env)
                for off, ast in zip(self.buffers[id(sm.tensor)].offsets, self.origin_exprs[id(sm)])]

    def call(self, stmt: Statement, coords: list[Expr]) -> ir.Stmt:
        """The intrinsic call: for each region a pointer to its origin, then its strides."""
        sm = stmt.stage
        match = sm.tensorized
        assert match is not None, f"{sm.name} has intrinsic calls but no match"
        if isinstance(sm.op, ExternOp):
            return extern_call(sm.op, match.intrin, self.buffers)
        values: dict[Var, Expr] = dict(zip(stmt.loop_vars, coords[sm.prefix_len:]))
        if match.origins:
            origin = self.origin(sm, coords[:sm.store_len])
            values.update({var: origin[d] for var, d in match.origins.items()})
        regions = match.regions[-1:] if stmt.kind is StatementKind.CALL_RESET else match.regions
        args: list[Expr] = []
        for region in regions:
            buf = self.buffers[id(region.tensor)]
            origin = [rewrite(substitute(e, values), self.load) for e in region.origin]
            args.append(ir.Address(buf, origin))
            args += [_stride(buf, d) for d in region.dims]
        impl = match.intrin.impl
        function = {StatementKind.CALL_RESET: impl.reset, StatementKind.CALL_UPDATE: impl.update,
                    StatementKind.CALL_BODY: impl.body}[stmt.kind]
        if function is None:  # no body: reset, then accumulate (CIntrinsic guarantees both exist)
            assert impl.reset is not None and impl.update is not None
            return ir.seq([ir.IntrinsicCall(impl.reset, args[-1 - len(regions[-1].dims):], match.intrin),
                           ir.IntrinsicCall(impl.update, args, match.intrin)])
        return ir.IntrinsicCall(function, args, match.intrin)

    def definition(self, sm: StageModel, coords: list[Expr]) -> ir.Stmt:
        """An update definition's instance at ``coords`` (its pure axes, then reduce axes): its value
        stored at its (checked) element of the shared buffer."""
        values = dict(zip(sm.axes + sm.raxes, coords))
        assert sm.target is not None and sm.buffer is not None, f"update {sm.name} without its element"
        body, checked_target = self.bodies[id(sm)]
        assert isinstance(body, Definition) and checked_target is not None
        target = rewrite(substitute(checked_target, values), self.load)
        assert isinstance(target, ir.Load)
        return ir.Store(sm.buffer, target.indices, rewrite(substitute(body.value, values), self.load))

    def load(self, e: Expr) -> Expr | None:
        if isinstance(e, TensorRead):
            indices = [rewrite(i, self.load) for i in e.indices]
            return ir.Load(self.buffers[id(e.tensor)], indices)
        return None

    def __call__(self, name: str, coords: list[Expr]) -> ir.Stmt:
        stmt: Statement = self.model.statements[name]
        sm: StageModel = stmt.stage
        buf = self.buffers[id(sm.tensor)]
        if stmt.kind is StatementKind.ALLOC:
            return ir.seq([ir.Assign(var, value) for var, value, ast in
                           zip(buf.offsets, self.origin(sm, coords), self.origin_exprs[id(sm)])
                           if ast is not None and isinstance(var, ir.OriginVar)])
        if stmt.kind.is_call:
            return self.call(stmt, coords)
        if stmt.kind is StatementKind.PREFETCH:
            return self.prefetch(self.prefetches[name], coords)
        p = sm.prefix_len
        if sm.update_of is not None:
            return self.definition(sm, coords[p:])
        scatter = sm.target is not None and stmt.kind is StatementKind.UPDATE
        axes = ([] if scatter else sm.axes) + (sm.raxes if stmt.kind is StatementKind.UPDATE else [])
        axis_values = dict(zip(axes, coords[p:]))
        index = tuple(coords[p:p + len(sm.axes)])
        body, checked_target = self.bodies[id(sm)]
        bufs = sm.buffers or [buf]

        def here(e: Expr) -> Expr:
            return rewrite(substitute(e, axis_values), self.load)

        def combined(acc: Sequence[Expr], values: Sequence[Expr]) -> tuple[Expr, ...]:
            # a comm_reducer's combination may use the compute's axes (a closure over them)
            assert isinstance(body, Reduce)
            return tuple(substitute(e, axis_values) for e in body.combine_all(acc, values))

        if stmt.kind is StatementKind.INIT:
            assert isinstance(body, Reduce)
            return ir.seq([ir.Store(b, index, here(start)) for b, start in zip(bufs, body.starts())])
        if stmt.kind is StatementKind.UPDATE:
            assert isinstance(body, Reduce)
            if scatter:     # the element a scatter accumulates into: its (checked) computed index
                assert checked_target is not None
                target = here(checked_target)
                assert isinstance(target, ir.Load)
                store = ir.Store(buf, target.indices, combined([target], [here(body.source)])[0],
                               atomic=sm.stage.atomic_updates)
                # ``where`` guards the whole update: its index may be meaningless elsewhere
                return store if body.where is None else ir.IfThenElse(here(body.where), store, None)
            current = [ir.Load(b, index) for b in bufs]
            values = [_as_declared(s, here(s)) for s in body.sources]
            if len(bufs) > 1 and body.where is None:
                return _tuple_update(sm.name, bufs, index, combined, values)
            new = combined(current, values)
            if body.where is not None:
                cond = here(body.where)
                new = tuple(Select(cond, v, c) for v, c in zip(new, current))
            if len(bufs) == 1:
                return ir.Store(buf, index, new[0])
            # a tuple reduction: every component is combined from the old values before any is stored
            temps = [Var(f"{sm.name}.new{k}", v.dtype) for k, v in enumerate(new)]
            return wrap_lets(list(zip(temps, new)), ir.seq([ir.Store(b, index, t) for b, t in zip(bufs, temps)]))
        if isinstance(body, MultiValue):
            return ir.seq([ir.Store(b, index, here(v)) for b, v in zip(bufs, body.values)])
        return ir.Store(buf, index, here(body))


def _tuple_update(name: str, bufs: list[ir.Buffer], index: tuple,
                  combine: Callable[[Sequence[Expr], Sequence[Expr]], tuple[Expr, ...]], values: list[Expr]) -> ir.Stmt:
    """The update of a tuple reduction without ``where``: the reduced values bound first (one
    :class:`~tesched.ir.nodes.ReduceInput` per component), then the combination of the accumulators with
    them (its shared subexpressions, such as argmax's comparison, bound once for every component), then
    the stores. The combination reads nothing else, so the vectorizer can combine partial results with it."""
    inputs = [ir.ReduceInput(f"{name}.in{k}", v.dtype, b) for k, (v, b) in enumerate(zip(values, bufs))]
    new = combine([ir.Load(b, index) for b in bufs], inputs)
    shared, combined = bind_shared(MultiValue(new))
    assert isinstance(combined, MultiValue)
    temps = [Var(f"{name}.new{k}", v.dtype) for k, v in enumerate(new)]
    return wrap_lets(list(zip(inputs, values)) + shared + list(zip(temps, combined.values)),
                     ir.seq([ir.Store(b, index, t) for b, t in zip(bufs, temps)]))


def _as_declared(declared: Expr, value: Expr) -> Expr:
    """``value`` (``declared`` at the loop's coordinates) in ``declared``'s dtype: loop variables are int64,
    so an axis reduced as a value (argmax's index) is converted back explicitly (vector lanes included)."""
    def axis_value(e: Expr) -> bool:
        stack = [e]
        while stack:
            n = stack.pop()
            if isinstance(n, Var) and not isinstance(n, Const):
                return True
            if not isinstance(n, TensorRead):     # indices of a read are not the value
                stack.extend(n.children())
        return False

    if dt.is_int(declared.dtype) and axis_value(declared):
        return Cast(declared.dtype, value)
    return value


@dataclass(frozen=True)
class Nest:
    """The loop IR of an isl AST: its ``body``, the buffer of every tensor (by ``id``), and the loops of
    kept-out fuses in it (id of the loop variable -> its group) that :mod:`.collapse` makes one loop."""

    body: ir.Stmt
    buffers: Mapping[int, ir.Buffer]
    components: Mapping[int, FusedGroup]


def loop_ir(model: PolyModel, tree: ScheduleTree, ast: LoopAst, bodies: StageBodies,
            buffers: Mapping[int, ir.Buffer] | None = None) -> Nest:
    """The loop IR of ``ast`` (each statement's value from ``bodies``, the stages' checked bodies), with
    every value stored as computed (shared subexpressions are bound by a later pass); pass ``buffers``
    (an earlier nest's) to make a second nest of the same function: it shares the arguments and whole
    intermediates, and gets its own local buffers (their origins are bound to its own loops)."""
    if buffers is None:
        own = model.placeholder_buffers()
        for sm in model.stages:
            assert sm.buffer is not None
            own[id(sm.tensor)] = sm.buffer
            for k, b in enumerate(sm.buffers[1:], 1):
                own[id(sm.op.output(k))] = b
    else:
        own = dict(buffers)
        for sm in model.stages:
            local = sm.buffer
            if local is not None and local.scope is ir.BufferScope.LOCAL:
                for k, b in enumerate(sm.buffers or [local]):
                    own[id(sm.op.output(k))] = b.relocated(list(sm.origin))
    emitter = StatementEmitter(model, own, model.param_env, bodies)
    walker = AstToIR(tree.marks, emitter, model.param_env, emitter.allocate)
    body = walker.convert(ast.node)
    return Nest(_allocate_companions(model, body, own), own, walker.components)


def _allocate_companions(model: PolyModel, body: ir.Stmt, buffers: dict[int, ir.Buffer]) -> ir.Stmt:
    """The other outputs of a multi-output stage computed at a loop live where its first output does:
    allocated with it, with its (possibly folded) origin."""
    companions = {id(buffers[id(sm.tensor)]): [buffers[id(sm.op.output(k))] for k in range(1, len(sm.buffers))]
                  for sm in model.stages if len(sm.buffers) > 1}
    if not companions:
        return body

    def wrap(s: ir.Stmt) -> ir.Stmt | None:
        if not isinstance(s, ir.Allocate) or id(s.buffer) not in companions:
            return None
        inner = map_stmt(s.body, None, wrap)
        for c in reversed(companions[id(s.buffer)]):
            if c.scope is ir.BufferScope.LOCAL:
                c.offsets, c.folds = s.buffer.offsets, dict(s.buffer.folds)
                inner = ir.Allocate(c, inner)
        return ir.Allocate(s.buffer, inner)

    return map_stmt(body, None, wrap)
