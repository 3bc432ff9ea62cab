"""Generate the loop nest with isl's AST generator and walk it into tesched's loop IR.

``generate_ast`` runs isl's AST build on the schedule tree (iterators ``L0, L1, ...`` by depth).
``AstToIR`` walks the result: ``for`` nodes become :class:`~tesched.ir.For` named after the loop mark
above them (isl drops single-iteration loops and may split others; the marks keep names and kinds
right), ``if`` nodes become guards, ``produce``/``alloc`` marks become :class:`~tesched.ir.Produce` and
:class:`~tesched.ir.Allocate`, and user nodes are handed to a callback that builds each statement's body
from its coordinates. ``ast_expr_to_ir`` converts isl AST expressions (also used for buffer origins).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

import islpy as isl

from tesched.errors import InternalError, LoweringError
from tesched.ir import nodes as ir
from tesched.ir.visitor import map_stmt, walk_stmts
from tesched.poly.fused import FusedGroup
from tesched.poly.tree import AllocMark, LoopMark, ProduceMark, ScheduleTree
from tesched.ir.kinds import LoopKind
from tesched.te.expr import BinOp, Binary, Const, Expr, Select, Unary
from tesched.te.tensor import IterType

_OP = isl.ast_expr_op_type
# members named after Python keywords are missing from islpy's type stubs, though present at run time
_OP_AND, _OP_OR = getattr(_OP, "and_"), getattr(_OP, "or_")
_NODE_FOR, _NODE_IF = getattr(isl.ast_node_type, "for_"), getattr(isl.ast_node_type, "if_")
_BINARY = {
    _OP.add: BinOp.ADD, _OP.sub: BinOp.SUB, _OP.mul: BinOp.MUL, _OP.div: BinOp.CDIV, _OP.pdiv_q: BinOp.CDIV,
    _OP.fdiv_q: BinOp.FLOORDIV, _OP.pdiv_r: BinOp.CMOD, _OP.zdiv_r: BinOp.CMOD,
    _OP_AND: BinOp.AND, _OP.and_then: BinOp.AND, _OP_OR: BinOp.OR, _OP.or_else: BinOp.OR,
    _OP.eq: BinOp.EQ, _OP.le: BinOp.LE, _OP.lt: BinOp.LT, _OP.ge: BinOp.GE, _OP.gt: BinOp.GT,
}
_COMPARE = (BinOp.EQ, BinOp.LE, BinOp.LT, BinOp.GE, BinOp.GT, BinOp.AND, BinOp.OR)


def ast_expr_to_ir(e: isl.AstExpr, env: Mapping[str, Expr]) -> Expr:
    """The IR expression (int64 arithmetic) of an isl AST expression; ids are looked up in ``env``."""
    kind = e.get_type()
    if kind == isl.ast_expr_type.int:
        return Const(int(e.get_val().to_python()), "int64")
    if kind == isl.ast_expr_type.id:
        name = e.get_id().get_name()
        try:
            return env[name]
        except KeyError:
            raise InternalError(f"unbound isl identifier {name}") from None
    op = e.get_op_type()
    args = [ast_expr_to_ir(e.get_op_arg(k), env) for k in range(e.get_op_n_arg())]
    if op in _BINARY:
        name = _BINARY[op]
        return Binary(name, args[0], args[1], "bool" if name in _COMPARE else "int64")
    if op in (_OP.max, _OP.min):
        out = args[0]
        for a in args[1:]:
            out = Binary(BinOp.MAX if op == _OP.max else "min", out, a, "int64")
        return out
    if op == _OP.minus:
        return Unary("neg", args[0])
    if op in (_OP.cond, _OP.select):
        return Select(args[0], args[1], args[2])
    raise InternalError(f"unsupported isl AST operation {op}")


def pw_aff_to_ir(pa: isl.PwAff, context: isl.Set, env: Mapping[str, Expr]) -> Expr:
    """The IR expression of a piecewise affine function of the parameters (names bound in ``env``)."""
    return ast_expr_to_ir(isl.AstBuild.from_context(context).expr_from_pw_aff(pa), env)


def _plus_one(e: Expr) -> Expr:
    """``e + 1``, folded into a trailing constant when there is one."""
    if isinstance(e, Const):
        return Const(e.value + 1, "int64")
    if isinstance(e, Binary) and e.op in (BinOp.ADD, BinOp.SUB) and isinstance(e.b, Const):
        c = e.b.value + 1 if e.op == BinOp.ADD else 1 - e.b.value
        return e.a if c == 0 else Binary(BinOp.ADD, e.a, Const(c, "int64"), "int64")
    if isinstance(e, Binary) and e.op in (BinOp.MIN, BinOp.MAX):
        return Binary(e.op, _plus_one(e.a), _plus_one(e.b), "int64")
    return Binary(BinOp.ADD, e, Const(1, "int64"), "int64")


@dataclass(frozen=True)
class LoopAst:
    """The loop nest isl generated for a schedule tree."""

    node: isl.AstNode

    def c_text(self) -> str:
        """isl's own C-like text of the nest (statements as calls), for debugging output."""
        return self.node.to_C_str()


# The attempts at the two trees, each with the isl operations it may take (deterministic, unlike a
# timeout), before both are generated without a limit, loop values first. An operation's cost varies a
# hundredfold between trees (500,000 took 0.4 s on one tree, 1.5 s on another that the other tree generated
# in 0.05 s), and the trees fail differently: where the tree over coordinates works it takes few operations,
# the tree over loop values often several hundred thousand (fuzzed schedules up to 800,000; a tiled stage
# at a fused loop takes millions). So each gets a small budget, the coordinates a larger one, then each
# a large one. The count restarts where a statement's coordinates are found directly (:func:`_direct` has
# its own budget).
TREE_ATTEMPTS = (("loop values", 40_000), ("coordinates", 40_000), ("coordinates", 200_000),
                 ("loop values", 1_000_000), ("coordinates", 1_000_000))


def generate_ast(tree: ScheduleTree, context: isl.Set) -> LoopAst:
    """Run isl's AST generator on ``tree``'s schedule over loop values (iterators ``L0, L1, ...`` by
    depth), and give each statement its coordinates, not its loop values (see :class:`_Coordinates`).

    Either tree describes the same loops; each is hard for isl in its own cases. Over coordinates, isl
    inverts the nested floors of split and fused loops (minutes for a tile of fused tiles); over loop
    values, it recovers the loops left out (one value per iteration of the loops around them) from the
    loops that remain, a mixed-radix decomposition it writes as convoluted pieces at every statement
    (seconds for a tiled stage computed at a fused loop, whose coordinates are two divisions). So the
    trees take turns with growing budgets of isl operations (:data:`TREE_ATTEMPTS`); a tree that runs out
    is tried again at its next turn, and without a limit only if both ran out of their last budget.

    isl's generator has been seen to drop instances of a statement (a loop of stride 2 whose values
    depend on an enclosing loop through a modulo, from fusing a split loop with a reduction): every
    statement's instances are checked against its domain, and a nest that misses some is not used; if
    both trees miss instances, a ``LoweringError`` names the stage rather than letting a kernel compute a
    wrong answer."""
    trees = {"loop values": (tree.loop_schedule, tree.coordinates), "coordinates": (tree.schedule, {})}
    missing: set[str] = set()
    for kind, budget in (*TREE_ATTEMPTS, ("loop values", 0), ("coordinates", 0)):
        if kind not in trees:           # generated, but some instances were missing: not tried again
            continue
        schedule, coordinates = trees[kind]
        made = _generate(schedule, coordinates, tree.depth, context, budget)
        if made is not None and not made[1]:
            return LoopAst(made[0])
        if made is not None:
            missing = made[1]
            del trees[kind]
    stages = sorted({tree.stage_of.get(name, name) for name in missing})
    raise LoweringError(f"stage {', '.join(stages)}: isl's loop generator left out some of its iterations "
                        "(a limitation of isl with strided loops, here from fusing a split loop with "
                        "another); change the split or the fuse of that stage")


def _generate(schedule: isl.Schedule, coordinates: Mapping[str, isl.MultiAff], depth: int,
              context: isl.Set, budget: int = 0) -> tuple[isl.AstNode, set[str]] | None:
    """isl's loop nest of ``schedule`` and the statements some of whose instances it does not run; None
    if isl needs more than ``budget`` operations to generate it (0: no limit)."""
    ctx = context.get_ctx()
    previous = ctx.get_max_operations()
    ctx.set_max_operations(budget)
    ctx.reset_operations()
    try:
        node, covered = _nest(schedule, coordinates, depth, context)
    except (isl.Error, LoweringError) as err:
        # past the budget any isl call fails, with whatever message (a parse may report a syntax error)
        if budget and (isinstance(err, isl.Error) or isinstance(err.__cause__, isl.Error)):
            return None
        raise
    finally:
        ctx.set_max_operations(previous)
        ctx.reset_operations()
    return node, _missing(schedule, covered, context)


def _nest(schedule: isl.Schedule, coordinates: Mapping[str, isl.MultiAff], depth: int,
          context: isl.Set) -> tuple[isl.AstNode, dict[str, isl.Set]]:
    """isl's loop nest of ``schedule`` and the instances of each statement it runs."""
    build = isl.AstBuild.from_context(context)
    ids = isl.IdList.alloc(context.get_ctx(), depth + 1)
    for k in range(depth + 1):
        ids = ids.add(isl.Id(f"L{k}"))
    build = build.set_iterators(ids)
    callback = _Coordinates(coordinates)
    build, handle = build.set_at_each_domain(callback)
    node = build.node_from_schedule(schedule)
    del handle
    if callback.error is not None:
        raise LoweringError(f"internal: isl AST statement: {callback.error}") from callback.error
    return node, callback.covered


def _missing(schedule: isl.Schedule, covered: Mapping[str, isl.Set], context: isl.Set) -> set[str]:
    """The statements of ``schedule`` some of whose instances are not ``covered``."""
    missing: set[str] = set()
    domains = schedule.get_domain().get_set_list()
    for k in range(domains.n_set()):
        domain = domains.get_at(k)
        name = domain.get_tuple_name()
        want = domain.intersect_params(context)
        got = covered.get(name)
        if not want.is_empty() and (got is None or not want.subtract(got).is_empty()):
            missing.add(name)
    return missing


# isl operations allowed to find a statement's coordinates directly from the iterators (deterministic,
# unlike a timeout; a few hundredths of a second)
DIRECT_COORDINATES_BUDGET = 10_000


def _direct(relation: isl.Map) -> isl.PwMultiAff | None:
    """The coordinates as a function of the iterators, found by isl from ``iterators -> coordinates``
    within :data:`DIRECT_COORDINATES_BUDGET`, or None. Where loops were left out (one value per iteration
    of the loops around them) this gives the simplest expressions (``i // 15``), which composing the loop
    values' pieces with the coordinates would not; but inverting nested floors can take isl exponential
    time, hence the budget."""
    ctx = relation.get_ctx()
    previous = ctx.get_max_operations()
    ctx.set_max_operations(DIRECT_COORDINATES_BUDGET)
    ctx.reset_operations()
    try:
        return isl.PwMultiAff.from_map(relation)
    except isl.Error:
        return None
    finally:
        ctx.set_max_operations(previous)
        ctx.reset_operations()


def _one_piece(f: isl.PwMultiAff) -> isl.PwMultiAff:
    """``f`` without its domain when it has one piece: it holds wherever the statement runs, and the
    domain's constraints only make isl's simplification in the AST context slow (tenfold)."""
    if f.n_piece() != 1:
        return f
    pieces: list[isl.MultiAff] = []
    f.foreach_piece(lambda _, ma: pieces.append(ma))
    return isl.PwMultiAff.from_multi_aff(pieces[0])


class _Coordinates:
    """isl's AST callback at each statement: a statement generated over its loop values
    (:class:`~.model.LoopSpace`) gets its coordinates as arguments, composed by isl from the loop values
    at that point (the function from the iterators to the instance) and the quasi-affine coordinates of
    loop values, so isl writes them in terms of the iterators and simplifies them where they are used."""

    def __init__(self, coordinates: Mapping[str, isl.MultiAff]):
        self.coordinates = coordinates
        self.error: Exception | None = None
        self.covered: dict[str, isl.Set] = {}     # statement -> the instances the nest runs

    def __call__(self, node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
        try:
            name = node.user_get_expr().get_op_arg(0).get_id().get_name()
            executed = isl.Map.from_union_map(build.get_schedule().reverse())
            here = executed.range()
            self.covered[name] = here if name not in self.covered else self.covered[name].union(here)
            inverse = self.coordinates.get(name)
            if inverse is None:
                return node
            loops = isl.PwMultiAff.from_map(executed)
            where = None
            if loops.n_piece() > 1 or loops.involves_locals():
                # some loop values are floors of the iterators (loops left out): composing them with the
                # coordinates' floors gives convoluted expressions where a direct one is often simple
                where = _direct(executed.apply_range(isl.Map.from_multi_aff(inverse)))
            if where is None:
                where = isl.PwMultiAff.from_multi_aff(inverse).pullback_pw_multi_aff(loops)
            return isl.AstNode.user_from_expr(build.call_from_pw_multi_aff(_one_piece(where)))
        except Exception as err:  # isl only prints exceptions raised in callbacks
            self.error = err
            return node


def _take_origin(stmt: ir.Stmt, targets: set[int], found: dict[int, Expr]) -> ir.Stmt:
    """Remove the assignments to ``targets`` that run first in ``stmt`` (before any loop or guard),
    recording their values in ``found``. Nested allocations are transparent."""
    if isinstance(stmt, ir.Allocate):
        return ir.Allocate(stmt.buffer, _take_origin(stmt.body, targets, found))
    if isinstance(stmt, ir.Assign) and id(stmt.var) in targets:
        found[id(stmt.var)] = stmt.value
        return ir.Block([])
    if not isinstance(stmt, ir.Block):
        return stmt
    kept: list[ir.Stmt] = []
    for k, child in enumerate(stmt.stmts):
        if isinstance(child, ir.Assign):
            if id(child.var) in targets:
                found[id(child.var)] = child.value
            else:
                kept.append(child)
            continue
        if isinstance(child, ir.Allocate):
            child = _take_origin(child, targets, found)
        kept.extend([child] + stmt.stmts[k + 1:])
        break
    return ir.seq(kept) if kept else ir.Block([])


def _fold_origin(alloc: ir.Allocate) -> ir.Allocate:
    """When the buffer's origin is set unconditionally at the start of its scope, make the origin
    expressions part of the buffer (no mutable variables: later passes see through the indexing)."""
    buf = alloc.buffer
    targets = {id(o) for o in buf.offsets if isinstance(o, ir.OriginVar)}
    found: dict[int, Expr] = {}
    body = _take_origin(alloc.body, targets, found)
    if not targets or set(found) != targets:
        return alloc
    buf.offsets = [found.get(id(o), o) for o in buf.offsets]
    return ir.Allocate(buf, body)


def _hoist_allocation(s: ir.Stmt) -> ir.Stmt:
    """``if (c) { allocate b { X } }`` -> ``allocate b { if (c) { X } }``: isl may put a guard above one
    piece of an allocation's scope; allocating unconditionally lets the pieces be rejoined."""
    if isinstance(s, ir.IfThenElse) and isinstance(s.then_case, ir.Allocate):
        buf = s.then_case.buffer
        other = s.else_case
        if other is None or (isinstance(other, ir.Allocate) and other.buffer is buf):
            return ir.Allocate(buf, ir.IfThenElse(s.cond, s.then_case.body,
                                                  None if not isinstance(other, ir.Allocate) else other.body))
    return s


def _merge_allocations(stmts: list[ir.Stmt]) -> ir.Stmt:
    """Rejoin an allocation that isl's AST generator split into sibling copies.

    isl puts a mark above each piece ("graft") its child generates, so a ``compute_at`` scope whose
    sequence is generated as several pieces (e.g. under an eliminated single-iteration loop) comes back as
    consecutive ``allocate`` siblings of one buffer (some under a guard); they are one scope and must
    share one buffer."""
    out: list[ir.Stmt] = []
    for s in map(_hoist_allocation, stmts):
        prev = out[-1] if out else None
        if isinstance(s, ir.Allocate) and isinstance(prev, ir.Allocate) and prev.buffer is s.buffer:
            out[-1] = ir.Allocate(s.buffer, _merge_allocations([prev.body, s.body]))
        elif isinstance(s, ir.Produce) and isinstance(prev, ir.Produce) and prev.stage == s.stage:
            out[-1] = ir.Produce(s.stage, _merge_allocations([prev.body, s.body]))
        else:
            out.append(s)
    flat: list[ir.Stmt] = []
    for s in out:
        flat.extend(s.stmts if isinstance(s, ir.Block) else [s])
    flat = _rejoin_nested(flat)
    return flat[0] if len(flat) == 1 else ir.Block(flat)


def _allocated(s: ir.Stmt) -> list[ir.Buffer]:
    return [n.buffer for n in walk_stmts(s) if isinstance(n, ir.Allocate)]


def _strip(s: ir.Stmt, buf: ir.Buffer, parallel: bool = False) -> ir.Stmt:
    """``s`` without its ``allocate buf`` wrappers (the buffer is allocated around it instead)."""
    def visit(n: ir.Stmt) -> ir.Stmt | None:
        if isinstance(n, ir.Allocate) and n.buffer is buf:
            if parallel:
                raise InternalError(f"isl split the scope of {buf.name} across a parallel loop")
            return _strip(n.body, buf)
        if isinstance(n, ir.For) and n.kind is LoopKind.PARALLEL and any(b is buf for b in _allocated(n)):
            return replace(n, body=_strip(n.body, buf, True))
        return None
    return map_stmt(s, lambda e: e, visit)


def _rejoin_nested(stmts: list[ir.Stmt]) -> list[ir.Stmt]:
    """Rejoin copies of one allocation that isl put in different siblings at any depth (it split a
    band into pieces, e.g. the producer's single iteration before the loop of the consumer): the copy
    read by one piece would never be written by the other. One allocation around the siblings from the
    first copy to the last keeps the per-iteration order isl proved, with one buffer (Halide's hoisted
    storage); a split across a parallel loop (which would share the buffer between threads) is refused."""
    while True:
        owners: dict[int, list[int]] = {}
        buffers: dict[int, ir.Buffer] = {}
        for k, s in enumerate(stmts):
            for buf in _allocated(s):
                buffers[id(buf)] = buf
                if k not in owners.setdefault(id(buf), []):
                    owners[id(buf)].append(k)
        split = next((key for key, ks in owners.items() if len(ks) > 1), None)
        if split is None:
            return stmts
        buf, first, last = buffers[split], owners[split][0], owners[split][-1]
        inner: list[ir.Stmt] = []
        for s in stmts[first:last + 1]:
            stripped = _strip(s, buf)
            inner.extend(stripped.stmts if isinstance(stripped, ir.Block) else [stripped])
        stmts = stmts[:first] + [ir.Allocate(buf, ir.seq(_rejoin_nested(inner)))] + stmts[last + 1:]


StatementEmitter = Callable[[str, list[Expr]], ir.Stmt]


class AstToIR:
    """Walk an isl AST into loop IR."""

    def __init__(self, marks: Mapping[str, object], emit: StatementEmitter, params: Mapping[str, Expr],
                 allocate: Callable[[AllocMark], ir.Buffer]):
        self.marks, self.emit, self.params, self.allocate = marks, emit, params, allocate
        self.components: dict[int, FusedGroup] = {}   # loop variable -> the kept-out fuse it is a loop of

    def convert(self, node: isl.AstNode) -> ir.Stmt:
        """The loop IR of ``node``; the loops of kept-out fuses stay a nest, listed in ``components`` (the
        ``collapse fused loops`` pass, :mod:`.collapse`, makes each one loop)."""
        return self.walk(node, dict(self.params), None)

    def walk(self, node: isl.AstNode, env: dict[str, Expr], loop: LoopMark | None) -> ir.Stmt:
        kind = node.get_type()
        T = isl.ast_node_type
        if kind == T.block:
            children = node.block_get_children()
            return _merge_allocations([self.walk(children.get_at(k), env, loop)
                                       for k in range(children.n_ast_node())])
        if kind == _NODE_FOR:
            return self.for_node(node, env, loop)
        if kind == _NODE_IF:
            cond = ast_expr_to_ir(node.if_get_cond(), env)
            then = self.walk(node.if_get_then_node(), env, loop)
            other = self.walk(node.if_get_else_node(), env, loop) if node.if_has_else_node() else None
            return ir.IfThenElse(cond, then, other)
        if kind == T.mark:
            info = self.marks[node.mark_get_id().get_name()]
            child = node.mark_get_node()
            if isinstance(info, LoopMark):
                return self.walk(child, env, info)
            if isinstance(info, ProduceMark):
                return ir.Produce(info.stage.name, self.walk(child, env, loop))
            if isinstance(info, AllocMark):
                return _fold_origin(ir.Allocate(self.allocate(info), self.walk(child, env, loop)))
            raise InternalError(f"unknown mark {info!r}")
        if kind == T.user:
            call = node.user_get_expr()
            name = call.get_op_arg(0).get_id().get_name()
            coords = [ast_expr_to_ir(call.get_op_arg(k), env) for k in range(1, call.get_op_n_arg())]
            return self.emit(name, coords)
        raise InternalError(f"unsupported isl AST node {kind}")

    def for_node(self, node: isl.AstNode, env: dict[str, Expr], loop: LoopMark | None) -> ir.Stmt:
        iterator = node.for_get_iterator().get_id().get_name()
        var = ir.LoopVar(loop.var.name if loop is not None else iterator)
        begin = ast_expr_to_ir(node.for_get_init(), env)
        inner = dict(env)
        inner[iterator] = var
        if node.for_is_degenerate():
            return ir.LetStmt(var, begin, self.walk(node.for_get_body(), inner, None))
        cond = node.for_get_cond()
        if (cond.get_type() != isl.ast_expr_type.op or cond.get_op_type() not in (_OP.le, _OP.lt)
                or cond.get_op_arg(0).get_type() != isl.ast_expr_type.id
                or cond.get_op_arg(0).get_id().get_name() != iterator):
            raise InternalError(f"unexpected loop condition {cond.to_C_str()}")
        bound = ast_expr_to_ir(cond.get_op_arg(1), env)
        if cond.get_op_type() == _OP.le:
            bound = _plus_one(bound)
        step = int(node.for_get_inc().get_val().to_python())
        body = self.walk(node.for_get_body(), inner, None)
        kind = loop.kind if loop is not None else LoopKind.SERIAL
        pragmas = loop.pragmas if loop is not None else ()
        if loop is not None and loop.group is not None:    # a loop of a kept-out fuse: the collapse pass decides
            self.components[id(var)] = loop.group
            kind, pragmas = LoopKind.SERIAL, ()
        return ir.For(var, begin, bound, kind, body, step, loop.extent if loop is not None else None,
                      loop is not None and loop.var.iter_type is IterType.COMM_REDUCE, loop.stage if loop else "",
                      loop.origin if loop else "", pragmas, loop.thread if loop is not None else "")
