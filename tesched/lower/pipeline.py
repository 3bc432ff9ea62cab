"""The lowering pipeline: one list of passes from a schedule to target-ready loop IR.

:data:`PASSES` is the whole pipeline, in order, one line per pass (Halide's ``Lower.cpp`` is the model):
every step from ``ts.lower`` to the IR that :mod:`tesched.codegen.c` prints is an entry, logged and timed.
Each pass is a typed function from one pipeline state to the next, and the states are frozen values:

``Request`` (schedule, arguments, name) -> ``ModelState`` (the polyhedral model, filled in by its phases)
-> ``TreeState`` (+ the isl schedule tree) -> ``AstState`` (+ isl's loop AST) -> ``EmitState`` (+ each
stage's value with its unproven indices checked) -> ``NestState`` (+ the loop IR, its buffers, the fused
loops still to collapse) -> ``LoopState`` (the loop IR and its buffers, every loop as scheduled) ->
``LoweredFunc`` (the function: arguments, sizes, parameters, loop IR).

The passes, by phase:

- model (``Request`` -> ``ModelState``): check arguments; inline and parameters; stage models and
  statements; iteration domains and footprints; bounds check; buffers; tensorize matching; prefetch regions;
- isl (-> ``TreeState`` -> ``AstState``): isl schedule tree; dependence check; isl AST generation;
- loop IR in the model's terms (-> ``EmitState`` -> ``NestState`` -> ``LoopState``): index checks; AST to
  loop IR; specialize (isl's AST generation again under each ``Stage.specialize`` condition); collapse
  fused loops; bind shared subexpressions; loop nesting check (the user's, on the loops as scheduled);
- loop IR (-> ``LoweredFunc``): function and its parameters; allocate intermediates; simplify index
  arithmetic; element offsets where they divide less;
- ``build``, for a target: peel partial tiles; unroll; loops from 0, indices simplified; unswitch loops
  left scalar; dot products; explicit SIMD; promote registers.

The passes of the ``lower`` phase are target independent: ``lower()`` runs them and returns the readable
loop IR. The ``build`` phase prepares that IR for a :class:`~tesched.target.Target`; ``build()`` runs it
through :func:`lower_for_target`. With ``TESCHED_DEBUG=1`` (or ``debug=True``) every pass logs its name,
its time and what it produced to the ``tesched.lower`` logger (printed to standard error unless the
application configures logging). With ``TESCHED_VERIFY=1`` (the test suite sets it) or in debug mode the
loop IR is checked after every pass that holds it (:mod:`tesched.ir.verify`), and a broken invariant
raises :class:`~tesched.errors.InternalError` naming the pass. :func:`lower_through` gives the state
right after any pass, to find the first pass whose output is wrong.

What the C code generator still does as it prints (not a pass): an access's coordinates become the element
offset C indexes, simplified under the loops' ranges, and the part of an offset an innermost loop does not
change is named before it (:mod:`tesched.codegen.hoist`).
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Callable, Mapping, Sequence

from tesched.config import debug_logger, settings
from tesched.errors import LoweringError
from tesched.ir import nodes as ir
from tesched.ir.cse import bind_shared_stores
from tesched.ir.verify import verify
from tesched.lower.checks import check_arguments, check_loop_nesting, check_request
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import notify_lowered
from tesched.poly.astgen import LoopAst, generate_ast
from tesched.poly.buffers import allocate_buffers
from tesched.poly.bounds import check_bounds
from tesched.poly.collapse import collapse_fused
from tesched.poly.deps import check_legality
from tesched.poly.domains import build_domains
from tesched.poly.isl_lock import ISL_LOCK
from tesched.poly.emit import loop_ir
from tesched.poly.fused import FusedGroup
from tesched.poly.index_checks import StageBodies, checked_bodies
from tesched.poly.model import PolyModel
from tesched.poly.prefetch import plan_prefetches
from tesched.poly.regions import realize_outputs
from tesched.poly.specialize import specialize
from tesched.poly.stages import declare_stages
from tesched.poly.tensorize import match_tensorize
from tesched.poly.tree import ScheduleTree, build_tree
from tesched.schedule.schedule import Schedule, set_region_inference
from tesched.target import Target, current_target
from tesched.te.expr import Param
from tesched.te.tensor import PlaceholderOp, Tensor
from tesched.te.visit import walk
from tesched.transform.dot_products import dot_products
from tesched.transform.flatten_indices import flatten_indices
from tesched.transform.peel import peel_tails
from tesched.transform.registers import promote_with_report
from tesched.transform.simplify_indices import normalize_loops, simplify_indices
from tesched.transform.unroll import unroll
from tesched.transform.unswitch import unswitch_scalar_loops
from tesched.transform.vectorize import vectorize


# pipeline states ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """What to lower: a schedule, the kernel's arguments in call order, its name, and the runtime
    parameters listed among the arguments (they come first among its scalars, in that order)."""

    schedule: Schedule
    args: tuple[Tensor, ...]
    name: str
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class ModelState:
    """The request and its polyhedral model (built in place by the model phases)."""

    request: Request
    model: PolyModel


@dataclass(frozen=True)
class TreeState:
    """The model and its isl schedule tree."""

    request: Request
    model: PolyModel
    tree: ScheduleTree


@dataclass(frozen=True)
class AstState:
    """The schedule tree and the loop AST isl generated from it."""

    request: Request
    model: PolyModel
    tree: ScheduleTree
    ast: LoopAst


@dataclass(frozen=True)
class EmitState:
    """The loop AST and every stage's value with its unproven indices checked (what statements store)."""

    request: Request
    model: PolyModel
    tree: ScheduleTree
    ast: LoopAst
    bodies: StageBodies


@dataclass(frozen=True)
class NestState:
    """The loop IR isl's AST became, in the model's terms: its buffers (by ``id`` of their tensor), and the
    loops of kept-out fuses still to collapse (by ``id`` of their variable, see :mod:`tesched.poly.collapse`)."""

    request: Request
    model: PolyModel
    tree: ScheduleTree
    bodies: StageBodies
    buffers: Mapping[int, ir.Buffer]
    body: ir.Stmt
    components: Mapping[int, FusedGroup]


@dataclass(frozen=True)
class LoopState:
    """The loop IR with every loop the schedule asked for, and its buffers (by ``id`` of their tensor)."""

    request: Request
    model: PolyModel
    buffers: Mapping[int, ir.Buffer]
    body: ir.Stmt


class Phase(StrEnum):
    """``lower``: target independent, what ``lower()`` shows; ``build``: prepares the IR for a target."""

    LOWER = "lower"
    BUILD = "build"


@dataclass(frozen=True)
class Pass:
    """One pass: its name, its function ``(state, target) -> state`` and its phase."""

    name: str
    run: Callable[[Any, Target], Any]
    phase: Phase = Phase.LOWER


# passes -------------------------------------------------------------------------------------------
def _check_arguments(req: Request, target: Target) -> Request:
    check_arguments(req.schedule, req.args, req.params)
    return req


def _inline(req: Request, target: Target) -> ModelState:
    return ModelState(req, PolyModel(req.schedule, list(req.args)))


def _model_phase(phase: Callable[[PolyModel], None]) -> Callable[[ModelState, Target], ModelState]:
    def run(st: ModelState, target: Target) -> ModelState:
        phase(st.model)
        return st
    return run


def _schedule_tree(st: ModelState, target: Target) -> TreeState:
    return TreeState(st.request, st.model, build_tree(st.model))


def _dependences(st: TreeState, target: Target) -> TreeState:
    check_legality(st.model, st.tree)
    return st


def _ast(st: TreeState, target: Target) -> AstState:
    return AstState(st.request, st.model, st.tree, generate_ast(st.tree, st.model.context))


def _index_checks(st: AstState, target: Target) -> EmitState:
    return EmitState(st.request, st.model, st.tree, st.ast, checked_bodies(st.model))


def _loop_ir(st: EmitState, target: Target) -> NestState:
    nest = loop_ir(st.model, st.tree, st.ast, st.bodies)
    return NestState(st.request, st.model, st.tree, st.bodies, nest.buffers, nest.body, nest.components)


def _specialize(st: NestState, target: Target) -> NestState:
    components = dict(st.components)

    def fast_nest(ast: LoopAst) -> ir.Stmt:
        nest = loop_ir(st.model, st.tree, ast, st.bodies, st.buffers)
        components.update(nest.components)
        return nest.body

    return replace(st, body=specialize(st.model, st.tree, st.body, fast_nest), components=components)


def _collapse(st: NestState, target: Target) -> LoopState:
    return LoopState(st.request, st.model, st.buffers, collapse_fused(st.body, st.components))


def _bind_shared(st: LoopState, target: Target) -> LoopState:
    return replace(st, body=bind_shared_stores(st.body))


def _function(st: LoopState, target: Target) -> LoweredFunc:
    args, listed = st.request.args, st.request.params
    scalars = listed + tuple(p for p in st.model.scalars if all(p is not q for q in listed))
    names = [p.name for p in scalars]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LoweringError(f"{st.request.name}: two runtime parameters are named {twice[0]} (ts.param); a kernel's "
                            "params are passed by name, so each needs its own")
    return LoweredFunc(st.request.name, tuple(st.buffers[id(t)] for t in args), args, tuple(st.model.params),
                       st.body, st.model, scalars, finisher=lower_for_target)


def _loop_nesting(st: LoopState, target: Target) -> LoopState:
    check_loop_nesting(st.body)
    return st


def _allocate_intermediates(func: LoweredFunc, target: Target) -> LoweredFunc:
    """Whole intermediate tensors computed at the root are allocated around the function body."""
    body = func.body
    for sm in reversed(func.model.stages):
        for buf in reversed(sm.buffers):
            if buf.scope is ir.BufferScope.GLOBAL:
                body = ir.Allocate(buf, body)
    return replace(func, body=body)


def _on_body(transform: Callable[[ir.Stmt, Target], ir.Stmt]) -> Callable[[LoweredFunc, Target], LoweredFunc]:
    def run(func: LoweredFunc, target: Target) -> LoweredFunc:
        return replace(func, body=transform(func.body, target))
    return run


def _promote_registers(func: LoweredFunc, target: Target) -> LoweredFunc:
    body, promotions = promote_with_report(func.body, target)
    return replace(func, body=body, promotions=promotions)


PASSES: tuple[Pass, ...] = (
    Pass("check arguments", _check_arguments),
    Pass("inline and parameters", _inline),
    Pass("stage models and statements", _model_phase(declare_stages)),
    Pass("iteration domains and footprints", _model_phase(build_domains)),
    Pass("bounds check", _model_phase(check_bounds)),
    Pass("buffers", _model_phase(allocate_buffers)),
    Pass("tensorize matching", _model_phase(match_tensorize)),
    Pass("prefetch regions", _model_phase(plan_prefetches)),
    Pass("isl schedule tree", _schedule_tree),
    Pass("dependence check", _dependences),
    Pass("isl AST generation", _ast),
    Pass("index checks", _index_checks),
    Pass("AST to loop IR", _loop_ir),
    Pass("specialize", _specialize),
    Pass("collapse fused loops", _collapse),
    Pass("bind shared subexpressions", _bind_shared),
    Pass("loop nesting check", _loop_nesting),
    Pass("function and its parameters", _function),
    Pass("allocate intermediates", _allocate_intermediates),
    Pass("simplify index arithmetic", _on_body(lambda body, target: simplify_indices(body))),
    Pass("element offsets where they divide less", _on_body(lambda body, target: flatten_indices(body))),
    Pass("peel partial tiles", _on_body(lambda body, target: peel_tails(body)), Phase.BUILD),
    Pass("unroll", _on_body(lambda body, target: unroll(body)), Phase.BUILD),
    Pass("loops from 0, indices simplified", _on_body(lambda body, target: simplify_indices(normalize_loops(body))),
         Phase.BUILD),
    Pass("unswitch loops left scalar",
         _on_body(lambda body, target: unswitch_scalar_loops(body, target.vector_bytes, target.features)), Phase.BUILD),
    Pass("dot products", _on_body(lambda body, target: dot_products(body, target.vector_bytes, target.features)),
         Phase.BUILD),
    Pass("explicit SIMD", _on_body(lambda body, target: vectorize(body, target.vector_bytes)), Phase.BUILD),
    Pass("promote registers", _promote_registers, Phase.BUILD),
)


# running ------------------------------------------------------------------------------------------
def describe(state: object) -> str:
    """What a pipeline state holds, as text for the debug log."""
    if isinstance(state, ModelState):
        return "\n".join(f"  {s.name}[{', '.join(s.coords)}]: {s.domain if s.has_domain else '(domain not built yet)'}"
                         for s in state.model.statements.values())
    if isinstance(state, TreeState):
        return f"  {state.tree.schedule.get_root()}"
    if isinstance(state, AstState):
        return state.ast.c_text()
    if isinstance(state, EmitState):
        checked = {sm.name: sum(isinstance(n, ir.CheckedIndex) for e in state.bodies[id(sm)] if e is not None
                                for n in walk(e)) for sm in state.model.stages}
        return "\n".join(f"  {name}: {count} indices checked when the kernel runs"
                         for name, count in checked.items() if count) or "  every index proven in bounds"
    if isinstance(state, (NestState, LoopState)):   # (before the pass binding them, shared values would be
        return str(bind_shared_stores(state.body))  # printed once per use: exponential in an inlined chain)
    if isinstance(state, LoweredFunc):
        return str(state.body)
    return ""


def _verify(state: object, after: str) -> None:
    """The loop IR's invariants (:mod:`tesched.ir.verify`) on a state that holds loop IR."""
    nesting = isinstance(state, LoweredFunc)    # (the user's nesting of loop kinds is checked before it exists)
    if isinstance(state, (NestState, LoopState)):
        model, body = state.model, state.body
        args = [state.buffers[id(t)] for t in state.request.args]
        sizes = (*model.params, *state.request.params, *model.scalars)
    elif isinstance(state, LoweredFunc):
        model, body, args, sizes = state.model, state.body, list(state.args), (*state.params, *state.scalars)
    else:
        return
    intermediates = [b for sm in model.stages for b in sm.buffers if b.scope is ir.BufferScope.GLOBAL]
    verify(body, args, sizes, intermediates, after, nesting)


def run_passes(state: object, passes: Sequence[Pass], target: Target, debug: bool | None = None) -> Any:
    """Run ``passes`` on ``state`` in order, logging each when debugging."""
    env = settings()
    debug = env.debug if debug is None else debug
    log = debug_logger("tesched.lower", debug)
    with ISL_LOCK:      # isl's default context is shared by every thread of the process
        for p in passes:
            t0 = time.perf_counter()
            state = p.run(state, target)
            if debug:
                log.info("--- after %s (%.1f ms)\n%s", p.name, (time.perf_counter() - t0) * 1e3, describe(state))
            if env.verify or debug:
                _verify(state, p.name)
    return state


def passes_until(name: str) -> tuple[Pass, ...]:
    """The passes up to and including the one called ``name`` (to bisect a miscompile: the IR after each
    prefix of :data:`PASSES`)."""
    names = [p.name for p in PASSES]
    if name not in names:
        raise ValueError(f"no lowering pass is called {name!r}; the passes are: {', '.join(names)}")
    return PASSES[:names.index(name) + 1]


def _request(sch: Schedule, args: Sequence[Tensor | Param], name: str) -> Request:
    check_request(sch, args, name)
    params = tuple(a for a in args if isinstance(a, Param))
    tensors = tuple(sch.canonical(t) if isinstance(t, Tensor) else t for t in args if not isinstance(t, Param))
    return Request(sch, tensors, name, params)


def lower(sch: Schedule, args: Sequence[Tensor], name: str = "main", debug: bool | None = None,
          simple_mode: bool = True) -> LoweredFunc:
    """``ts.lower`` (the facade documents its parameters): the ``lower`` phase of :data:`PASSES` on a
    checked request, the functions it returns shown to ``watch_lowering``'s watchers."""
    lowering = tuple(p for p in PASSES if p.phase is Phase.LOWER)
    func = run_passes(_request(sch, args, name), lowering, current_target(), debug)
    notify_lowered(func)
    return func


def lower_through(sch: Schedule, args: Sequence[Tensor | Param], last: str, name: str = "main",
                  target: Target | None = None, debug: bool | None = None) -> Any:
    """The pipeline state right after the pass called ``last`` (:data:`PASSES` run from the start, the
    ``build`` passes for ``target``, the current one by default): to bisect a miscompile, print the IR after
    each pass and find the first that is wrong."""
    return run_passes(_request(sch, args, name), passes_until(last), target or current_target(), debug)


_finished: "weakref.WeakKeyDictionary[LoweredFunc, dict[str, LoweredFunc]]" = weakref.WeakKeyDictionary()


def lower_for_target(func: LoweredFunc, target: Target, debug: bool | None = None) -> LoweredFunc:
    """The ``build`` phase of the pipeline (unroll, explicit SIMD, registers) for ``target``, run once per
    function and target (printing a function, then building it, finishes it once) unless debugging."""
    if debug is None:
        debug = settings().debug
    done = _finished.setdefault(func, {})
    if debug or target.key not in done:
        done[target.key] = run_passes(func, tuple(p for p in PASSES if p.phase is Phase.BUILD), target, debug)
    return done[target.key]


def check_schedule(sch: Schedule) -> None:
    """The passes of :func:`lower` up to the dependence check, on a schedule's outputs and inputs
    (``ts.check_schedule``)."""
    args = tuple(st.op.output(k) for st in sch.stages if isinstance(st.op, PlaceholderOp) or st.is_output
                 for k in range(st.op.num_outputs))
    run_passes(Request(sch, args, "check"), passes_until("dependence check"), current_target(), False)


set_region_inference(realize_outputs)
