"""Recurrences over a time axis: ``ts.scan(init, update, state)`` (TVM's ``te.scan``).

``state`` is a placeholder standing for the scan's own output; ``init`` gives the first time steps
(``init.shape[0]`` of them) and ``update`` every later step ``t``, reading ``state`` at earlier steps
(``state[t - 1, i]``). The result is a :class:`ScanOp`, a :class:`~tesched.te.tensor.ComputeOp` whose
axis 0 (``scan_axis``) is the time loop and whose body is ``init[t, ...]`` for ``t < init.shape[0]``, else
``update[t, ...]``. A schedule reads ``state`` as the scan's tensor, and computes the stages between
``state`` and the scan (the update, and what it reads that reads ``state``: an RNN's matrix-vector
product) inside the time loop, so a cumulative sum or a recurrent cell over a sequence is one kernel with
the time loop inside it. This module only declares.
"""
from __future__ import annotations

from typing import Sequence

from tesched.te import checks
from tesched.te.expr import Expr, Select
from tesched.te.reduction import MultiValue
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, PlaceholderOp, Range, Tensor


class ScanOp(ComputeOp):
    """``out[t, ...] = init[t, ...] if t < init_steps else update[t, ...]``, ``state`` being ``out``; a scan of
    several states has one output per state (``inits``, ``updates``, ``states`` in the same order)."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: Expr, inits: Sequence[Tensor],
                 updates: Sequence[Tensor], states: Sequence[Tensor]):
        super().__init__(name, tag, axis, body, None)
        self.inits, self.updates, self.states = list(inits), list(updates), list(states)
        self.init, self.update, self.state = self.inits[0], self.updates[0], self.states[0]

    @property
    def scan_axis(self) -> IterVar:
        """The time loop (axis 0)."""
        return self.axis[0]

    @property
    def init_steps(self) -> int | Expr:
        """How many first time steps ``init`` gives."""
        return self.init.shape[0]

    def step_operations(self) -> list[Operation]:
        """The stages of the step: those ``updates`` depend on that read a state, directly or not (the
        updates included), producers first."""
        states = {id(s.op) for s in self.states}
        order: list[Operation] = []
        reads_state: dict[int, bool] = {}

        def visit(o: Operation) -> bool:
            if id(o) not in reads_state:
                reads_state[id(o)] = id(o) in states
                for t in o.input_tensors:
                    reads_state[id(o)] = visit(t.op) or reads_state[id(o)]
                if reads_state[id(o)] and id(o) not in states:
                    order.append(o)
            return reads_state[id(o)]

        for u in self.updates:
            visit(u.op)
        return order

    def state_index(self, state: Tensor) -> int:
        """Which output ``state`` (one of the state placeholders) stands for."""
        return next(k for k, s in enumerate(self.states) if s is state)


def scan(init: Tensor | Sequence[Tensor], update: Tensor | Sequence[Tensor],
         state_placeholder: Tensor | Sequence[Tensor], inputs: list[Tensor] | None = None,
         name: str = "scan", tag: str = "") -> Tensor | tuple[Tensor, ...]:
    """A recurrence along axis 0: the first ``init.shape[0]`` steps from ``init``, each later step ``t``
    from ``update``, which reads ``state_placeholder`` at earlier steps (TVM's ``te.scan``).

    Several states advance together when ``init``, ``update`` and ``state_placeholder`` are lists of
    the same length (TVM's multi-state scan: an LSTM's ``c`` and ``h``); each update may read every state.

    Parameters
    ----------
    init : Tensor or list of Tensor
        The first steps: shape ``(k,) + state.shape[1:]`` with ``k`` at most ``state.shape[0]`` (the same
        ``k`` for every state).
    update : Tensor or list of Tensor
        Every step, shape ``state.shape``; read only where ``t >= k``. It reads ``state_placeholder``
        at steps before ``t`` (reading step ``t`` itself, or a later one, is refused by the schedule's
        dependence check).
    state_placeholder : Tensor or list of Tensor
        A ``ts.placeholder`` of the result's shape standing for the result inside ``update``; it is not a
        kernel argument.
    inputs : list of Tensor, optional
        Accepted for TVM compatibility (the inputs are found from the expressions).
    name, tag : str
        The operation's name and tag.

    Returns
    -------
    Tensor or tuple of Tensor
        The whole sequence of states, of ``state_placeholder``'s shape and dtype (one per state when lists
        were given).

    Example
    -------
    >>> state = ts.placeholder((m, n), name="state")
    >>> init = ts.compute((1, n), lambda _, i: X[0, i], name="init")
    >>> update = ts.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    >>> cumsum = ts.scan(init, update, state, inputs=[X], name="cumsum")
    """
    checks.check_name(name, "scan")
    given = [init, update, state_placeholder]
    several = [isinstance(g, (list, tuple)) for g in given]
    if any(several) and not all(several):
        raise TypeError(f"scan {name}: init, update and state_placeholder must all be tensors or all be lists")
    groups: list[list[object]] = [list(g) if isinstance(g, (list, tuple)) else [g] for g in given]
    if len({len(g) for g in groups}) != 1 or not groups[0]:
        raise ValueError(f"scan {name}: {len(groups[0])} inits, {len(groups[1])} updates and {len(groups[2])} "
                         "states; give one of each per state")
    for init_k, update_k, state_k in zip(*groups):
        _check_tensors(name, init_k, update_k, state_k)
    inits, updates, states = ([x for x in g if isinstance(x, Tensor)] for g in groups)
    for init_k, update_k, state_k in zip(inits, updates, states):
        _check_state(name, init_k, update_k, state_k, states)
    first = states[0]
    for init_k, state_k in zip(inits, states):
        if not _same_shape(state_k.shape, first.shape) or not _same_shape(init_k.shape[:1], inits[0].shape[:1]):
            raise ValueError(f"scan {name}: state {state_k.name} has shape {state_k.shape} and {init_k.shape[0]} "
                             f"initial steps, {first.name} {first.shape} and {inits[0].shape[0]}; the states "
                             "of one scan share their shape and initial steps")
    if not any(_reads(u, s) for u in updates for s in states):
        raise ValueError(f"scan {name}: update does not read the state {first.name}; a scan's update reads "
                         "the state at earlier time steps (state[t - 1, ...])")
    names = ["t"] + [f"i{k}" for k in range(1, first.ndim)]
    axis = [IterVar(Range(0, extent), n, IterType.DATA_PAR) for n, extent in zip(names, first.shape)]
    bodies: list[Expr] = [Select(axis[0] < i.shape[0], i[tuple(axis)], u[tuple(axis)]) for i, u in zip(inits, updates)]
    op = ScanOp(name, tag, axis, bodies[0] if len(bodies) == 1 else MultiValue(bodies), inits, updates, states)
    return tuple(op.output(k) for k in range(op.num_outputs)) if all(several) else op.output(0)


def _check_tensors(name: str, init: object, update: object, state: object) -> None:
    for what, t in (("init", init), ("update", update), ("state_placeholder", state)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scan {name}: {what} must be a tensor, got {type(t).__name__}")


def _check_state(name: str, init: Tensor, update: Tensor, state: Tensor, states: list[Tensor]) -> None:
    if not isinstance(state.op, PlaceholderOp):
        raise TypeError(f"scan {name}: state_placeholder must be a ts.placeholder standing for the result, "
                        f"got the computed tensor {state.name}")
    if not state.shape:
        raise ValueError(f"scan {name}: the state needs a time axis (axis 0); {state.name} is a scalar")
    if not isinstance(update.op, ComputeOp) or not isinstance(init.op, ComputeOp):
        raise TypeError(f"scan {name}: init and update must be computed tensors (ts.compute)")
    if not _same_shape(update.shape, state.shape):
        raise ValueError(f"scan {name}: update has shape {update.shape}, the state {state.shape}: they must match")
    if init.ndim != state.ndim or not _same_shape(init.shape[1:], state.shape[1:]):
        raise ValueError(f"scan {name}: init has shape {init.shape}; it must be (steps,) + {state.shape[1:]} "
                         "(the state's shape after the time axis)")
    if isinstance(init.shape[0], int) and isinstance(state.shape[0], int) and init.shape[0] > state.shape[0]:
        raise ValueError(f"scan {name}: init has {init.shape[0]} steps, more than the state's {state.shape[0]}")
    for what, t in (("init", init), ("update", update)):
        if t.dtype != state.dtype:
            raise TypeError(f"scan {name}: {what} is {t.dtype} but the state is {state.dtype}")
    for s in states:
        if _reads(init, s):
            raise ValueError(f"scan {name}: init reads the state {s.name}, which it defines")


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or (isinstance(x, int) and x == y) for x, y in zip(a, b))


def _reads(tensor: Tensor, target: Tensor) -> bool:
    """Whether ``tensor``'s operation reads ``target``, directly or through other computed tensors."""
    stack, seen = [tensor], set()
    while stack:
        t = stack.pop()
        if not isinstance(t.op, ComputeOp) or id(t.op) in seen:
            continue
        seen.add(id(t.op))
        for read in t.op.input_tensors:
            if read is target:
                return True
            stack.append(read)
    return False
