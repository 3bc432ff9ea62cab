"""Statement bodies: what each isl statement instance does, as loop IR, given its coordinates.

``compute`` stores the stage's expression; ``init`` stores the reduction's identity; ``update`` combines
the stored value with the reduced expression (under the reduction's ``where``); ``alloc`` sets the origin
of a ``compute_at`` buffer for the current iteration of the loop it lives in. Tensor reads become loads
from the tensor's buffer (argument, whole intermediate, or local region).
"""
from __future__ import annotations

from typing import Mapping

import islpy as isl

from .. import ir
from ..expr import Expr, Reduce, Select
from ..tensor import TensorRead
from ..visit import rewrite, substitute
from .astgen import ast_expr_to_ir
from .model import PolyModel, StageModel, Statement
from .tree import AllocMark


def _prefix_expr(pa: isl.PwAff) -> isl.AstExpr:
    """An AST expression for ``pa`` (a function of the loop prefix) over ids ``__p0, __p1, ...``."""
    n = pa.dim(isl.dim_type.in_)
    for k in range(n):
        pa = pa.set_dim_id(isl.dim_type.in_, k, isl.Id(f"__p{k}"))
    pa = pa.move_dims(isl.dim_type.param, pa.dim(isl.dim_type.param), isl.dim_type.in_, 0, n)
    return isl.AstBuild.from_context(pa.domain()).expr_from_pw_aff(pa)


def _param_expr(pa: isl.PwAff, context: isl.Set, env: Mapping[str, Expr]) -> Expr:
    return ast_expr_to_ir(isl.AstBuild.from_context(context).expr_from_pw_aff(pa), env)


class StatementEmitter:
    def __init__(self, model: PolyModel, buffers: dict[int, ir.Buffer], param_env: Mapping[str, Expr]):
        self.model, self.buffers, self.param_env = model, buffers, param_env
        self.origin_exprs = {id(sm): [None if pa is None else _prefix_expr(pa) for pa in sm.offset_pwaffs]
                             for sm in model.stages}
        for sm in model.stages:
            b = sm.buffer
            assert b is not None
            b.shape = [d if isinstance(d, (int, Expr)) else _param_expr(d, model.context, param_env)
                       for d in b.shape]

    def allocate(self, mark: AllocMark) -> ir.Buffer:
        assert mark.stage.buffer is not None
        return mark.stage.buffer

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
        if stmt.kind == "alloc":
            env = dict(self.param_env)
            env.update({f"__p{k}": c for k, c in enumerate(coords)})
            return ir.seq([ir.Assign(var, ast_expr_to_ir(ast, env))  # type: ignore[arg-type]
                           for var, ast in zip(buf.offsets, self.origin_exprs[id(sm)]) if ast is not None])
        p = sm.prefix_len
        axes = sm.axes + (sm.raxes if stmt.kind == "update" else [])
        values = dict(zip(axes, coords[p:]))
        index = tuple(coords[p:p + len(sm.axes)])
        body = sm.body
        if stmt.kind == "init":
            assert isinstance(body, Reduce)
            return ir.Store(buf, index, body.identity())
        if stmt.kind == "update":
            assert isinstance(body, Reduce)
            source = rewrite(substitute(body.source, values), self.load)
            current = ir.Load(buf, index)
            value = body.combine(current, source)
            if body.where is not None:
                value = Select(rewrite(substitute(body.where, values), self.load), value, current)
            return ir.Store(buf, index, value)
        return ir.Store(buf, index, rewrite(substitute(body, values), self.load))
