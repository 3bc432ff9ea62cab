"""The lowering pipeline: one list of passes from a schedule to target-ready loop IR.

:data:`PASSES` is the whole pipeline, in order, one line per pass (Halide's ``Lower.cpp`` is the model).
Each pass is a typed function from one pipeline state to the next, and the states are frozen values:

``Request`` (schedule, arguments, name) -> ``ModelState`` (the polyhedral model, filled in by its phases)
-> ``TreeState`` (+ the isl schedule tree) -> ``AstState`` (+ isl's loop AST) -> ``LoweredFunc`` (loop IR).

The passes of the ``lower`` phase are target independent: ``lower()`` runs them and returns the readable
loop IR. The ``build`` phase (unrolling, explicit SIMD, registers) prepares that IR for a
:class:`~tesched.target.Target`; ``build()`` runs it through :func:`lower_for_target`. With
``TESCHED_DEBUG=1`` (or ``debug=True``) every pass logs its name, its time and what it produced to the
``tesched.lower`` logger (printed to standard error unless the application configures logging).
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Callable, Sequence

from tesched.config import debug_logger, settings
from tesched.errors import LoweringError
from tesched.ir import nodes as ir
from tesched.ir.verify import verify
from tesched.lower.checks import check_arguments, check_loop_nesting, check_request
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import notify_lowered, set_finisher
from tesched.poly.astgen import LoopAst, generate_ast
from tesched.poly.buffers import allocate_buffers
from tesched.poly.bounds import check_bounds
from tesched.poly.deps import check_legality
from tesched.poly.domains import build_domains
from tesched.poly.isl_lock import ISL_LOCK
from tesched.poly.emit import loop_ir
from tesched.poly.model import PolyModel
from tesched.poly.prefetch import plan_prefetches
from tesched.poly.regions import realize_outputs
from tesched.poly.specialize import specialize
from tesched.poly.stages import declare_stages
from tesched.poly.tensorize import match_tensorize
from tesched.poly.tree import ScheduleTree, build_tree
from tesched.schedule.schedule import Schedule, set_legality_check, set_region_inference
from tesched.target import Target, current_target
from tesched.te.expr import Param
from tesched.te.tensor import PlaceholderOp, Tensor
from tesched.transform.flatten_indices import flatten_indices
from tesched.transform.peel import peel_tails
from tesched.transform.registers import promote_with_report
from tesched.transform.simplify_indices import normalize_loops, simplify_indices
from tesched.transform.unroll import unroll
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


def _loop_ir(st: AstState, target: Target) -> LoweredFunc:
    body, buffers = loop_ir(st.model, st.tree, st.ast)
    body = specialize(st.model, st.tree, body, lambda ast: loop_ir(st.model, st.tree, ast, buffers)[0])
    args, listed = st.request.args, st.request.params
    scalars = listed + tuple(p for p in st.model.scalars if all(p is not q for q in listed))
    names = [p.name for p in scalars]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LoweringError(f"{st.request.name}: two runtime parameters are named {twice[0]} (ts.param); a kernel's "
                            "params are passed by name, so each needs its own")
    return LoweredFunc(st.request.name, tuple(buffers[id(t)] for t in args), args, tuple(st.model.params),
                       body, st.model, scalars)


def _loop_nesting(func: LoweredFunc, target: Target) -> LoweredFunc:
    check_loop_nesting(func.body)
    return func


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
    Pass("AST to loop IR", _loop_ir),
    Pass("loop nesting check", _loop_nesting),
    Pass("allocate intermediates", _allocate_intermediates),
    Pass("simplify index arithmetic", _on_body(lambda body, target: simplify_indices(body))),
    Pass("element offsets where they divide less", _on_body(lambda body, target: flatten_indices(body))),
    Pass("peel partial tiles", _on_body(lambda body, target: peel_tails(body)), Phase.BUILD),
    Pass("unroll", _on_body(lambda body, target: unroll(body)), Phase.BUILD),
    Pass("loops from 0, indices simplified", _on_body(lambda body, target: simplify_indices(normalize_loops(body))),
         Phase.BUILD),
    Pass("explicit SIMD", _on_body(lambda body, target: vectorize(body, target.vector_bytes, target.features)),
         Phase.BUILD),
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
    if isinstance(state, LoweredFunc):
        return str(state.body)
    return ""


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
            if (env.verify or debug) and isinstance(state, LoweredFunc):
                intermediates = [b for sm in state.model.stages for b in sm.buffers
                                 if b.scope is ir.BufferScope.GLOBAL]
                verify(state.body, state.args, (*state.params, *state.scalars), intermediates, p.name)
    return state


def passes_until(name: str) -> tuple[Pass, ...]:
    """The passes up to and including the one called ``name``."""
    names = [p.name for p in PASSES]
    return PASSES[:names.index(name) + 1]


def lower(sch: Schedule, args: Sequence[Tensor], name: str = "main", debug: bool | None = None,
          simple_mode: bool = True) -> LoweredFunc:
    """``ts.lower`` (the facade documents its parameters): the ``lower`` phase of :data:`PASSES` on a
    checked request, the functions it returns shown to ``watch_lowering``'s watchers."""
    check_request(sch, args, name)
    params = tuple(a for a in args if isinstance(a, Param))
    tensors = tuple(sch.canonical(t) if isinstance(t, Tensor) else t for t in args if not isinstance(t, Param))
    request = Request(sch, tensors, name, params)
    lowering = tuple(p for p in PASSES if p.phase is Phase.LOWER)
    func = run_passes(request, lowering, current_target(), debug)
    notify_lowered(func)
    return func


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
    """The passes of :func:`lower` up to the dependence check, on a schedule's outputs and inputs."""
    args = tuple(st.op.output(k) for st in sch.stages if isinstance(st.op, PlaceholderOp) or st.is_output
                 for k in range(st.op.num_outputs))
    run_passes(Request(sch, args, "check"), passes_until("dependence check"), current_target(), False)


set_legality_check(check_schedule)
set_region_inference(realize_outputs)
set_finisher(lower_for_target)
