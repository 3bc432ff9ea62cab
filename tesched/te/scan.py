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

from tesched.te import checks
from tesched.te.expr import Expr, Select
from tesched.te.tensor import ComputeOp, IterType, IterVar, PlaceholderOp, Range, Tensor


class ScanOp(ComputeOp):
    """``out[t, ...] = init[t, ...] if t < init_steps else update[t, ...]``, ``state`` being ``out``."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: Expr, init: Tensor, update: Tensor,
                 state: Tensor):
        super().__init__(name, tag, axis, body, None)
        self.init, self.update, self.state = init, update, state

    @property
    def scan_axis(self) -> IterVar:
        """The time loop (axis 0)."""
        return self.axis[0]

    @property
    def init_steps(self) -> int | Expr:
        """How many first time steps ``init`` gives."""
        return self.init.shape[0]


def scan(init: Tensor, update: Tensor, state_placeholder: Tensor, inputs: list[Tensor] | None = None,
         name: str = "scan", tag: str = "") -> Tensor:
    """A recurrence along axis 0: the first ``init.shape[0]`` steps from ``init``, each later step ``t``
    from ``update``, which reads ``state_placeholder`` at earlier steps (TVM's ``te.scan``).

    Parameters
    ----------
    init : Tensor
        The first steps: shape ``(k,) + state.shape[1:]`` with ``k`` at most ``state.shape[0]``.
    update : Tensor
        Every step, shape ``state.shape``; read only where ``t >= k``. It reads ``state_placeholder``
        at steps before ``t`` (reading step ``t`` itself, or a later one, is refused by the schedule's
        dependence check).
    state_placeholder : Tensor
        A ``ts.placeholder`` of the result's shape standing for the result inside ``update``; it is not a
        kernel argument.
    inputs : list of Tensor, optional
        Accepted for TVM compatibility (the inputs are found from the expressions).
    name, tag : str
        The operation's name and tag.

    Returns
    -------
    Tensor
        The whole sequence of states, of ``state_placeholder``'s shape and dtype.

    Example
    -------
    >>> state = ts.placeholder((m, n), name="state")
    >>> init = ts.compute((1, n), lambda _, i: X[0, i], name="init")
    >>> update = ts.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    >>> cumsum = ts.scan(init, update, state, inputs=[X], name="cumsum")
    """
    checks.check_name(name, "scan")
    for what, t in (("init", init), ("update", update), ("state_placeholder", state_placeholder)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scan {name}: {what} must be a tensor, got {type(t).__name__}")
    state = state_placeholder
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
    if not _reads(update, state):
        raise ValueError(f"scan {name}: update does not read the state {state.name}; a scan's update reads "
                         "the state at earlier time steps (state[t - 1, ...])")
    if _reads(init, state):
        raise ValueError(f"scan {name}: init reads the state {state.name}, which it defines")
    names = ["t"] + [f"i{k}" for k in range(1, state.ndim)]
    axis = [IterVar(Range(0, extent), n, IterType.DATA_PAR) for n, extent in zip(names, state.shape)]
    body = Select(axis[0] < init.shape[0], init[tuple(axis)], update[tuple(axis)])
    return ScanOp(name, tag, axis, body, init, update, state).output(0)


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
