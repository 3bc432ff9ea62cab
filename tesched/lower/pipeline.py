"""The lowering pipeline: schedule -> polyhedral model -> isl schedule tree -> isl AST -> loop IR.

``lower()`` runs the passes listed in :data:`PASSES`, in order. With ``debug=True`` or the environment
variable ``TESCHED_DEBUG=1`` it prints what each pass produced and how long it took.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from tesched.errors import ScheduleError
from tesched.ir import nodes as ir
from tesched.poly.astgen import AstToIR, generate_ast
from tesched.poly.deps import check_legality
from tesched.poly.emit import StatementEmitter
from tesched.poly.model import PolyModel
from tesched.poly.tensorize import match_tensorize
from tesched.poly.tree import build_tree
from tesched.schedule.kinds import AttachType, LoopKind
from tesched.schedule.schedule import Schedule, set_legality_check
from tesched.target import vector_bytes
from tesched.te.expr import Var
from tesched.te.tensor import ComputeOp, PlaceholderOp, Tensor
from tesched.transform.registers import promote
from tesched.transform.unroll import unroll
from tesched.transform.vectorize import vectorize


@dataclass
class LoweringState:
    schedule: Schedule
    args: list[Tensor]
    name: str
    model: object = None
    tree: object = None
    ast: object = None
    body: ir.Stmt | None = None
    buffers: dict = field(default_factory=dict)


@dataclass
class LoweredFunc:
    """The result of :func:`lower`: a function over ``args`` (buffers) and size ``params``."""

    name: str
    args: list[ir.Buffer]
    arg_tensors: list[Tensor]
    params: list[Var]
    body: ir.Stmt
    model: object
    _redundancy: dict | None = field(default=None, repr=False)

    @property
    def redundancy(self) -> dict[str, float]:
        """Per stage computed inside another: points computed / its size (1.0 = no recompute)."""
        if self._redundancy is None:
            self._redundancy = self.model.redundancy()  # type: ignore[attr-defined]
        return self._redundancy

    def __str__(self) -> str:
        printer = ir.IRPrinter()
        sig = ", ".join(f"{printer.buffer(b)}: {b.dtype}[{', '.join(printer.expr(d) if not isinstance(d, int) else str(d) for d in b.shape)}]"
                        for b in self.args)
        if self.params:
            sig += ", " + ", ".join(f"{p.name}: int64" for p in self.params)
        notes = "".join(f"# {stage}: computes {factor:.2f}x its points (recomputed halo or re-executed "
                        f"per outer iteration)\n" for stage, factor in self.redundancy.items())
        return notes + f"def {self.name}({sig}):\n" + printer.stmt(self.body, 1)

    def __repr__(self) -> str:
        return str(self)


def check_arguments(st: LoweringState) -> LoweringState:
    """Every input read and every output must be an argument; arguments must be root stages."""
    sch = st.schedule
    seen: set[int] = set()
    for t in st.args:
        if not isinstance(t, Tensor):
            raise TypeError(f"lower/build arguments must be tensors, got {type(t).__name__}")
        if id(t) in seen:
            raise ValueError(f"tensor {t.name} appears twice in the arguments")
        seen.add(id(t))
        stage = sch[t]
        if stage.attach_type is not AttachType.ROOT and isinstance(t.op, ComputeOp):
            raise ScheduleError(f"{t.name} is an argument, so it must be stored in full, but it is "
                                f"{'inlined' if stage.attach_type is AttachType.INLINE else 'computed at ' + stage.attach_stage.name}; "
                                "use compute_root or drop it from the arguments")
    for stage in sch.stages:
        t = stage.op.output(0)
        if isinstance(stage.op, PlaceholderOp) and id(t) not in seen:
            raise ValueError(f"input {t.name} is read but is not among the arguments")
        if stage.is_output and id(t) not in seen:
            raise ValueError(f"output {t.name} is not among the arguments")
    return st


def build_model(st: LoweringState) -> LoweringState:
    st.model = PolyModel(st.schedule, st.args)
    match_tensorize(st.model)
    return st


def build_schedule_tree(st: LoweringState) -> LoweringState:
    st.tree = build_tree(st.model)  # type: ignore[arg-type]
    return st


def check_dependences(st: LoweringState) -> LoweringState:
    check_legality(st.model, st.tree)  # type: ignore[arg-type]
    return st


def generate_loops(st: LoweringState) -> LoweringState:
    st.ast = generate_ast(st.tree.schedule, st.model.context, st.tree.depth)  # type: ignore[union-attr]
    return st


def to_loop_ir(st: LoweringState) -> LoweringState:
    model = st.model
    st.buffers = model.placeholder_buffers()  # type: ignore[union-attr]
    for sm in model.stages:  # type: ignore[union-attr]
        st.buffers[id(sm.tensor)] = sm.buffer
    param_env = {model.param_names[id(p)]: p for p in model.params}  # type: ignore[union-attr]
    emitter = StatementEmitter(model, st.buffers, param_env)  # type: ignore[arg-type]
    st.body = AstToIR(st.tree.marks, emitter, param_env, emitter.allocate).convert(st.ast)  # type: ignore[union-attr]
    return st


def check_loop_nesting(st: LoweringState) -> LoweringState:
    """A parallel loop cannot run inside a vectorized one (its iterations are SIMD lanes)."""
    def visit(s: ir.Stmt, vector: ir.For | None) -> None:
        if isinstance(s, ir.For):
            if s.kind is LoopKind.PARALLEL and vector is not None:
                raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is parallel but runs inside the "
                                    f"vectorized loop {vector.var.name} of stage {vector.stage}; vectorize an "
                                    "inner loop or parallelize an outer one")
            visit(s.body, s if s.kind is LoopKind.VECTORIZED else vector)
        elif isinstance(s, ir.Block):
            for c in s.stmts:
                visit(c, vector)
        elif isinstance(s, ir.IfThenElse):
            visit(s.then_case, vector)
            if s.else_case is not None:
                visit(s.else_case, vector)
        elif hasattr(s, "body"):
            visit(s.body, vector)  # type: ignore[attr-defined]
    visit(st.body, None)  # type: ignore[arg-type]
    return st


def allocate_intermediates(st: LoweringState) -> LoweringState:
    """Whole intermediate tensors computed at the root are allocated around the function body."""
    body = st.body
    for sm in reversed(st.model.stages):  # type: ignore[union-attr]
        if sm.buffer.scope is ir.BufferScope.GLOBAL:
            body = ir.Allocate(sm.buffer, body)
    st.body = body
    return st


PASSES: list[tuple[str, Callable[[LoweringState], LoweringState]]] = [
    ("check arguments", check_arguments),
    ("inline, domains, accesses, footprints", build_model),
    ("isl schedule tree", build_schedule_tree),
    ("dependence check", check_dependences),
    ("isl AST generation", generate_loops),
    ("AST to loop IR", to_loop_ir),
    ("loop nesting check", check_loop_nesting),
    ("allocate intermediates", allocate_intermediates),
]


def _describe(st: LoweringState, step: str) -> str:
    if step == "inline, domains, accesses, footprints":
        return "\n".join(f"  {s.name}: {s.domain}" for s in st.model.statements.values())  # type: ignore[union-attr]
    if step == "isl schedule tree":
        return f"  {st.tree.schedule.get_root()}"  # type: ignore[union-attr]
    if step == "isl AST generation":
        return st.ast.to_C_str()  # type: ignore[union-attr]
    if st.body is not None:
        return str(st.body)
    return ""


def lower_for_target(func: LoweredFunc, debug: bool | None = None) -> LoweredFunc:
    """The machine passes after :func:`lower`: unroll, explicit SIMD, registers for small buffers."""
    if debug is None:
        debug = os.environ.get("TESCHED_DEBUG", "") not in ("", "0")
    width = vector_bytes()
    body = func.body
    for step, run in (("unroll", unroll), ("vectorize", lambda b: vectorize(b, width)),
                      ("promote registers", promote)):
        t0 = time.perf_counter()
        body = run(body)
        if debug:
            ms = (time.perf_counter() - t0) * 1e3
            print(f"--- after {step} ({ms:.1f} ms)\n{ir.IRPrinter().stmt(body, 1)}", file=sys.stderr)
    return LoweredFunc(func.name, func.args, func.arg_tensors, func.params, body, func.model,
                       func._redundancy)


def check_schedule(sch: Schedule) -> None:
    """The checks of :func:`lower` up to the dependence check, on a schedule's outputs and inputs."""
    args = [st.op.output(0) for st in sch.stages if isinstance(st.op, PlaceholderOp) or st.is_output]
    st = LoweringState(sch, args, "check")
    for step, run in PASSES:
        st = run(st)
        if run is check_dependences:
            return


def lower(sch: Schedule, args: Sequence[Tensor], name: str = "main", debug: bool | None = None,
          simple_mode: bool = True) -> LoweredFunc:
    """Lower a schedule to loop IR. ``print()`` the result to read it. ``simple_mode`` is accepted for
    compatibility with TVM's ``lower`` and has no effect: the result is always the readable form."""
    if debug is None:
        debug = os.environ.get("TESCHED_DEBUG", "") not in ("", "0")
    st = LoweringState(sch, [sch.canonical(t) if isinstance(t, Tensor) else t for t in args], name)
    for step, run in PASSES:
        t0 = time.perf_counter()
        st = run(st)
        if debug:
            ms = (time.perf_counter() - t0) * 1e3
            print(f"--- after {step} ({ms:.1f} ms)\n{_describe(st, step)}", file=sys.stderr)
    assert st.body is not None
    arg_buffers = [st.buffers[id(t)] for t in st.args]
    return LoweredFunc(name, arg_buffers, st.args, list(st.model.params), st.body, st.model)  # type: ignore[union-attr]


set_legality_check(check_schedule)
