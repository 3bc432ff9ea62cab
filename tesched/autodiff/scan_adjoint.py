"""The adjoint of a scan: backpropagation through time, as a scan that runs backwards over the steps.

A scan ``S[t] = init[t]`` for ``t < k``, else ``update[t]``, where the *step* (the stages between the state
placeholders and ``update``) reads the state at earlier steps and other tensors ``X``. Given the adjoint
``dS`` of the scan's result from its consumers, the total adjoint of the state at step ``t`` is ``dS[t]``
plus what every later step's update sends back to it. That is itself a recurrence, in reversed time
``tau = T - 1 - t``:

- the step is recomputed over the steps after the initial ones from the stored states: a copy of its
  stages reads the scan's result where the original reads its state placeholder (``<stage>.recompute``,
  its step ``u`` being step ``u + k``, so every read stays in bounds without a guard);
- ``A[tau] = dS[T-1-tau] + dstate[T-1-tau]``, where ``dstate`` is the copy's adjoint with respect to the
  stored states, its head being ``A`` read at the next step; ``A`` is a ``ts.scan`` over reversed time
  (``<scan>.bptt``), one state per forward state, so it is one kernel with its time loop inside;
- the inits receive ``A`` at their steps; ``X`` (weights, inputs) receives the copy's adjoint with the
  finished ``A`` as head, an ordinary stage summed over the steps, parallel and outside the time loop.

The intermediate adjoints inside the backward step are named ``<tensor>.grad.step``. This module builds
stages; the walk that calls it for each scan is :func:`tesched.autodiff.gradient.walk`. A step containing a
scatter, a nested scan or another non-compute stage is refused with a ``GradientError`` naming it.
"""
from __future__ import annotations

from typing import Callable, Sequence

from tesched.autodiff.contributions import Contribution, Head, Key, adjoint, whole
from tesched.errors import GradientError
from tesched.te.expr import Const, Expr, as_expr
from tesched.te.reduction import Reduce, remapped_reducer
from tesched.te.scan import ScanOp, scan
from tesched.te.tensor import ComputeOp, IterVar, Operation, Range, Tensor, TensorRead, compute, placeholder
from tesched.te.visit import rewrite

Walk = Callable[..., tuple[dict[Key, list[Contribution]], dict[Key, Tensor]]]


def _recomputed(op: ScanOp, first: int) -> tuple[list[ComputeOp], dict[Key, Tensor]]:
    """Copies of the step's stages over the steps after the ``first`` initial ones (copy step ``u`` is step
    ``u + first``), reading the scan's result instead of its state placeholders; producers first, and the
    map from each original output to its copy."""
    copies: dict[Key, Tensor] = {(id(s.op), s.value_index): op.output(m) for m, s in enumerate(op.states)}
    states = set(copies)
    made: list[ComputeOp] = []
    steps = op.axis[0].range.extent
    for stage in op.step_operations():
        if type(stage) is not ComputeOp:
            raise GradientError(f"scan {op.name}: its step contains stage {stage.name} ({type(stage).__name__}), "
                                "which ts.gradient cannot differentiate through time; only ts.compute stages")
        time = stage.axis[0] if stage.axis else None
        if time is None or not _same(time.range.extent, steps) or not _same(time.range.min, 0):
            raise GradientError(f"scan {op.name}: stage {stage.name} of its step is not indexed by the time step "
                                f"first (its axis 0 must run over the scan's {steps} steps)")
        clone = _copy(stage, copies, states, first)
        made.append(clone)
        for k in range(stage.num_outputs):
            copies[(id(stage), k)] = clone.output(k)
    return made, copies


def _same(a: int | Expr, b: int | Expr) -> bool:
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)


def _copy(stage: ComputeOp, copies: dict[Key, Tensor], states: set[Key], first: int) -> ComputeOp:
    """``stage`` over the steps from ``first`` on (its axis 0 shifted down by ``first``), with fresh loops,
    reading ``copies`` in place of the tensors they replace (a copy of another step stage at its shifted
    step, a state, now the scan's result, where the stage read it)."""
    fresh: dict[int, IterVar] = {}
    value: dict[int, Expr] = {}

    def renew(a: IterVar, shift: int = 0) -> IterVar:
        if id(a) not in fresh:
            low, extent = (b if isinstance(b, int) else rewrite(b, swap) for b in (a.range.min, a.range.extent))
            fresh[id(a)] = IterVar(Range(low, extent - shift), a.name, a.iter_type)
            value[id(a)] = fresh[id(a)] + shift if shift else fresh[id(a)]
        return fresh[id(a)]

    def swap(e: Expr) -> Expr | None:
        if isinstance(e, TensorRead):
            key = (id(e.tensor.op), e.tensor.value_index)
            indices = tuple(rewrite(i, swap) for i in e.indices)
            if key in copies and key not in states:
                indices = (indices[0] - first,) + indices[1:]
            return TensorRead(copies.get(key, e.tensor), indices)
        if isinstance(e, Reduce):
            axes = [renew(a) if isinstance(a, IterVar) else a for a in e.axis]
            sources = tuple(rewrite(s, swap) for s in e.sources)
            where = None if e.where is None else rewrite(e.where, swap)
            inits = None if e.inits is None else [rewrite(i, swap) for i in e.inits]
            old_axes = {a: value[id(a)] for a in e.axis if isinstance(a, IterVar)}
            return Reduce(e.combiner, sources, axes, where, inits, remapped_reducer(e, old_axes), e.value_index)
        return value.get(id(e)) if isinstance(e, IterVar) else None

    axis = [renew(a, first if k == 0 else 0) for k, a in enumerate(stage.axis)]
    return ComputeOp(f"{stage.name}.recompute", stage.tag, axis, rewrite(stage.body, swap), stage.attrs)


def _reversed(states: Sequence[Tensor], steps: Expr, first: int) -> list[Head]:
    """``states[n]`` read at reversed step ``steps - 1 - (u + first)`` for step ``u`` of a head: the heads of
    the copies of the updates (``first`` the initial steps), or of the inits (``first`` 0)."""
    def head(state: Tensor) -> Head:
        return lambda point: state[(steps - 1 - first - as_expr(point[0]),) + tuple(point[1:])]
    return [head(s) for s in states]


def scan_contributions(op: ScanOp, heads: list[Head | None], relevant: set[int],
                       walk: Walk) -> list[tuple[Tensor, Contribution]]:
    """What scan ``op``, whose outputs have adjoints ``heads``, sends to the tensors it reads: its inits and
    the tensors its step reads besides the states. ``walk`` propagates adjoints through a list of stages."""
    steps, first = as_expr(op.axis[0].range.extent), op.init_steps
    outputs = [op.output(m) for m in range(op.num_outputs)]
    if not isinstance(first, int):
        raise GradientError(f"scan {op.name}: its number of initial steps is symbolic; ts.gradient needs it constant")
    clones, copies = _recomputed(op, first)
    inner = relevant | {id(c) for c in clones}
    walked: list[Operation] = list(reversed(clones))
    result_keys = {(id(op), m) for m in range(op.num_outputs)}

    def update_heads(states: Sequence[Tensor]) -> dict[Key, Head]:
        made = _reversed(states, steps, first)
        return {(id(copies[(id(u.op), u.value_index)].op), copies[(id(u.op), u.value_index)].value_index): h
                for u, h in zip(op.updates, made)}

    adjoint_states = [placeholder(s.shape, s.dtype, name=f"{s.name}.grad.state") for s in outputs]
    into_states, _ = walk(walked, update_heads(adjoint_states), inner, ".grad.step")
    backward = _backward_scan(op, outputs, heads, adjoint_states, into_states, steps)
    found: list[tuple[Tensor, Contribution]] = []
    for m, init in enumerate(op.inits):
        found.append((init, whole(init, _reversed([backward[m]], steps, 0)[0], op.name)))
    into_rest, _ = walk(walked, update_heads(backward), inner)
    read = {(id(t.op), t.value_index): t for c in clones for t in c.input_tensors}
    for key, contributions in into_rest.items():
        if key not in result_keys:
            found.extend((read[key], c) for c in contributions)
    return found


def _backward_scan(op: ScanOp, outputs: list[Tensor], heads: list[Head | None], adjoint_states: list[Tensor],
                   into_states: dict[Key, list[Contribution]], steps: Expr) -> list[Tensor]:
    """The scan over reversed time whose state ``m`` at ``tau`` is the total adjoint of ``outputs[m]`` at step
    ``steps - 1 - tau``."""
    inits, updates = [], []
    for m, out in enumerate(outputs):
        head = heads[m]
        rest = out.shape[1:]

        def seed(t: Expr, r: Sequence[Expr], head: Head | None = head, dtype: str = out.dtype) -> Expr:
            return Const(0.0, dtype) if head is None else head([t, *r])

        contributions = into_states.get((id(op), m))
        carried = None if not contributions else adjoint(out, contributions, ".grad.step")
        inits.append(compute((1,) + tuple(rest), lambda *p, seed=seed: seed(steps - 1, p[1:]),
                             name=f"{out.name}.grad.last"))

        def update(*p: IterVar, seed=seed, carried=carried) -> Expr:
            t = steps - 1 - p[0]
            value = seed(t, p[1:])
            return value if carried is None else value + carried[(t,) + tuple(p[1:])]
        updates.append(compute(out.shape, update, name=f"{out.name}.grad.update"))
    made = scan(inits, updates, adjoint_states, name=f"{op.name}.bptt")
    return list(made) if isinstance(made, tuple) else [made]
