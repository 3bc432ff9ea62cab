"""Statement bodies: what each isl statement instance does, as loop IR, given its coordinates.

``compute`` stores the stage's expression; ``init`` stores the reduction's identity; ``update`` combines
the stored value with the reduced expression (under the reduction's ``where``); ``alloc`` sets the origin
of a ``compute_at`` buffer for the current iteration of the loop it lives in. Tensor reads become loads
from the tensor's buffer (argument, whole intermediate, or local region).
"""
from __future__ import annotations

from typing import Mapping

import islpy as isl

from tesched.arith.linear import simplify
from tesched.ir import nodes as ir
from tesched.ir.cse import bind_shared, wrap_lets
from tesched.poly.astgen import AstToIR, LoopAst, ast_expr_to_ir
from tesched.poly.index_checks import checked_body
from tesched.poly.model import PolyModel, StageModel, Statement, StatementKind
from tesched.poly.tree import AllocMark, ScheduleTree
from tesched.te.expr import Binary, Const, Expr, Reduce, Select, Var
from tesched.te.tensor import TensorRead
from tesched.te.visit import rewrite, substitute


def _prefix_expr(pa: isl.PwAff) -> isl.AstExpr:
    """An AST expression for ``pa`` (a function of the loop prefix) over ids ``__p0, __p1, ...``."""
    n = pa.dim(isl.dim_type.in_)
    for k in range(n):
        pa = pa.set_dim_id(isl.dim_type.in_, k, isl.Id(f"__p{k}"))
    pa = pa.move_dims(isl.dim_type.param, pa.dim(isl.dim_type.param), isl.dim_type.in_, 0, n)
    return isl.AstBuild.from_context(pa.domain()).expr_from_pw_aff(pa)


def _stride(buf: ir.Buffer, dim: int) -> Expr:
    """Elements between neighbours along ``dim`` of ``buf`` (row-major)."""
    stride: Expr = Const(1, "int64")
    for d in buf.shape[dim + 1:]:
        stride = Binary("mul", stride, d if isinstance(d, Expr) else Const(d, "int64"), "int64")
    return simplify(stride)


class StatementEmitter:
    def __init__(self, model: PolyModel, buffers: dict[int, ir.Buffer], param_env: Mapping[str, Expr]):
        self.model, self.buffers, self.param_env = model, buffers, param_env
        self.origin_exprs = {id(sm): [None if pa is None else _prefix_expr(pa) for pa in sm.offset_pwaffs]
                             for sm in model.stages}

    def allocate(self, mark: AllocMark) -> ir.Buffer:
        assert mark.stage.buffer is not None
        return mark.stage.buffer

    def origin(self, sm: StageModel, prefix: list[Expr]) -> list[Expr]:
        """Where the region of a computed-at stage starts, for the given enclosing loop values."""
        env = dict(self.param_env)
        env.update({f"__p{k}": c for k, c in enumerate(prefix)})
        assert sm.buffer is not None
        return [off if ast is None else ast_expr_to_ir(ast, env)
                for off, ast in zip(sm.buffer.offsets, self.origin_exprs[id(sm)])]

    def call(self, stmt: Statement, coords: list[Expr]) -> ir.Stmt:
        """The intrinsic call: for each region a pointer to its origin, then its strides."""
        sm = stmt.stage
        match = sm.tensorized
        assert match is not None, f"{sm.name} has intrinsic calls but no match"
        values: dict[Var, Expr] = dict(zip(stmt.loop_vars, coords[sm.prefix_len:]))
        if match.origins:
            origin = self.origin(sm, coords[:sm.prefix_len])
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

    def load(self, e: Expr) -> Expr | None:
        if isinstance(e, TensorRead):
            indices = [rewrite(i, self.load) for i in e.indices]
            return ir.Load(self.buffers[id(e.tensor)], indices)
        return None

    def __call__(self, name: str, coords: list[Expr]) -> ir.Stmt:
        stmt: Statement = self.model.statements[name]
        sm: StageModel = stmt.stage
        buf = sm.buffer
        assert buf is not None
        if stmt.kind is StatementKind.ALLOC:
            return ir.seq([ir.Assign(var, value) for var, value, ast in
                           zip(buf.offsets, self.origin(sm, coords), self.origin_exprs[id(sm)])
                           if ast is not None and isinstance(var, ir.OriginVar)])
        if stmt.kind.is_call:
            return self.call(stmt, coords)
        p = sm.prefix_len
        scatter = sm.target is not None and stmt.kind is StatementKind.UPDATE
        axes = ([] if scatter else sm.axes) + (sm.raxes if stmt.kind is StatementKind.UPDATE else [])
        values = dict(zip(axes, coords[p:]))
        index = tuple(coords[p:p + len(sm.axes)])
        body = checked_body(self.model, sm, sm.body)
        if stmt.kind is StatementKind.INIT:
            assert isinstance(body, Reduce)
            return ir.Store(buf, index, body.identity())
        if stmt.kind is StatementKind.UPDATE:
            assert isinstance(body, Reduce)
            if scatter:     # the element a scatter accumulates into: its (checked) computed index
                assert sm.target is not None
                target = rewrite(substitute(checked_body(self.model, sm, sm.target), values), self.load)
                assert isinstance(target, ir.Load)
                index = target.indices
            source = rewrite(substitute(body.source, values), self.load)
            current = ir.Load(buf, index)
            value = body.combine(current, source)
            if scatter:     # ``where`` guards the whole update: its index may be meaningless elsewhere
                store = _store(buf, index, value, atomic=sm.stage.atomic_updates)
                if body.where is None:
                    return store
                return ir.IfThenElse(rewrite(substitute(body.where, values), self.load), store, None)
            if body.where is not None:
                value = Select(rewrite(substitute(body.where, values), self.load), value, current)
            return _store(buf, index, value)
        return _store(buf, index, rewrite(substitute(body, values), self.load))


def _store(buf: ir.Buffer, index: tuple, value: Expr, atomic: bool = False) -> ir.Stmt:
    """``buf[index] = value`` with the subexpressions ``value`` shares bound once (``let``)."""
    bindings, value = bind_shared(value)
    return wrap_lets(bindings, ir.Store(buf, index, value, atomic))


def loop_ir(model: PolyModel, tree: ScheduleTree, ast: LoopAst) -> tuple[ir.Stmt, dict[int, ir.Buffer]]:
    """The loop IR of ``ast`` and the buffer of every tensor (by ``id``)."""
    buffers = model.placeholder_buffers()
    for sm in model.stages:
        assert sm.buffer is not None
        buffers[id(sm.tensor)] = sm.buffer
    emitter = StatementEmitter(model, buffers, model.param_env)
    body = AstToIR(tree.marks, emitter, model.param_env, emitter.allocate).convert(ast.node)
    return body, buffers
