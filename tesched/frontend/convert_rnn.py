"""Converters of PyTorch's recurrent ops when a program still holds them (``torch.export`` without
decompositions, or a decomposition table that keeps them): the cells ``lstm_cell``, ``gru_cell``,
``rnn_tanh_cell``, ``rnn_relu_cell`` and the sequences ``lstm.input``, ``gru.input``, ``rnn_tanh.input``,
``rnn_relu.input`` (any number of layers, one or two directions, time- or batch-major, batched or not),
unrolled over the time steps into the graph's cell builders (:mod:`tesched.graph.ops_rnn`).

A core-ATen program (``run_decompositions()``) has these already unrolled into ``addmm``, ``sigmoid``,
``tanh`` and ``mul`` (a bidirectional one also ``flip``); both paths give the same graph ops. LSTMs with
``proj_size`` and training-mode dropout between layers raise :class:`~.errors.UnsupportedOpError`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.ir import Constant, Expr

State = tuple[Expr, ...]
Step = Callable[[Expr, State, Sequence[Expr]], State]
"""``step(x_t, state, (w_ih, w_hh, b_ih, b_hh))``: the next state (its first field is the output)."""


def _bias(bias: Expr | None, like: Expr) -> Expr:
    rows = like.tensor_type.shape[0]
    return bias if isinstance(bias, Expr) else Constant(np.zeros(rows, dtype=like.tensor_type.dtype))


def _lstm_step(x: Expr, state: State, w: Sequence[Expr]) -> State:
    cell = G.nn.lstm_cell(x, state[0], state[1], w[0], w[1], G.add(_bias(w[2], w[0]), _bias(w[3], w[0])))
    return cell[0], cell[1]


def _gru_step(x: Expr, state: State, w: Sequence[Expr]) -> State:
    return (G.nn.gru_cell(x, state[0], w[0], w[1], _bias(w[2], w[0]), _bias(w[3], w[0])),)


def _rnn_step(activation: Callable[[Expr], Expr]) -> Step:
    def step(x: Expr, state: State, w: Sequence[Expr]) -> State:
        bias = G.add(_bias(w[2], w[0]), _bias(w[3], w[0]))
        return (activation(G.add(G.add(G.nn.dense(x, w[0]), G.nn.dense(state[0], w[1])), bias)),)
    return step


def _cell(step: Step) -> Callable[[AtenCall], Expr | tuple[Expr, ...]]:
    def convert(call: AtenCall) -> Expr | tuple[Expr, ...]:
        hx = call["hx"]
        state = tuple(hx) if isinstance(hx, (list, tuple)) else (hx,)
        x, unbatched = call.tensor("input"), call.tensor("input").tensor_type.ndim == 1
        if unbatched:
            x, state = G.reshape(x, (1, -1)), tuple(G.reshape(s, (1, -1)) for s in state)
        new = step(x, state, (call.tensor("w_ih"), call.tensor("w_hh"), call["b_ih"], call["b_hh"]))
        if unbatched:
            new = tuple(G.reshape(s, s.tensor_type.shape[1:]) for s in new)
        return new if len(new) > 1 else new[0]
    return convert


lstm_cell = _cell(_lstm_step)
gru_cell = _cell(_gru_step)
rnn_tanh_cell = _cell(_rnn_step(G.tanh))
rnn_relu_cell = _cell(_rnn_step(G.nn.relu))


def _layer_state(initial: Sequence[Expr], layer: int) -> State:
    """Layer ``layer``'s initial state, each ``(L, B, H)`` tensor sliced to ``(B, H)``."""
    state = []
    for h in initial:
        _, batch, hidden = h.tensor_type.shape
        state.append(G.reshape(G.strided_slice(h, [layer], [layer + 1]), (batch, hidden)))
    return tuple(state)


def _stack(pieces: list[Expr], axis: int) -> Expr:
    return pieces[0] if len(pieces) == 1 else G.concatenate(pieces, axis=axis)


def _direction(step: Step, inputs: list[Expr], state: State, weights: Sequence[Expr],
               reverse: bool) -> tuple[list[Expr], State]:
    """One layer in one direction: its output at each time step (in time order) and its final state."""
    outputs = []
    for x_t in reversed(inputs) if reverse else inputs:
        state = step(x_t, state, weights)
        outputs.append(state[0])
    return (outputs[::-1] if reverse else outputs), state


def _sequence(step: Step) -> Callable[[AtenCall], tuple[Expr, ...]]:
    def convert(call: AtenCall) -> tuple[Expr, ...]:
        x, hx = call.tensor("input"), call["hx"]
        initial = list(hx) if isinstance(hx, (list, tuple)) else [hx]
        layers, per_layer = int(call["num_layers"]), 4 if call["has_biases"] else 2
        directions = 2 if call["bidirectional"] else 1
        if len(call["params"]) != layers * directions * per_layer:
            raise call.unsupported("an LSTM with proj_size", "proj_size=0 followed by nn.Linear")
        if call["train"] and call["dropout"] and layers > 1:
            raise call.unsupported("dropout between layers in training mode", "model.eval() before importing")
        unbatched = x.tensor_type.ndim == 2
        if unbatched:
            x = G.reshape(x, (x.tensor_type.shape[0], 1, x.tensor_type.shape[1]))
            initial = [G.reshape(h, (h.tensor_type.shape[0], 1, h.tensor_type.shape[1])) for h in initial]
        time_axis = 1 if call["batch_first"] and not unbatched else 0
        steps, batch = x.tensor_type.shape[time_axis], x.tensor_type.shape[1 - time_axis]
        inputs: list[Expr] = [G.reshape(G.strided_slice(x, [0] * time_axis + [t], [batch] * time_axis + [t + 1]),
                                        (batch, -1)) for t in range(steps)]
        finals: list[State] = []
        for layer in range(layers):
            per_direction = []
            for d in range(directions):
                first = (layer * directions + d) * per_layer
                weights: list[Any] = list(call["params"][first:first + per_layer]) + [None, None]
                outputs, final = _direction(step, inputs, _layer_state(initial, layer * directions + d),
                                            weights[:4], reverse=d == 1)
                per_direction.append(outputs)
                finals.append(final)
            inputs = per_direction[0] if directions == 1 else \
                [G.concatenate(list(both), axis=1) for both in zip(*per_direction)]
        width, hidden = inputs[0].tensor_type.shape[-1], finals[0][0].tensor_type.shape[-1]
        per_step = (batch, 1, width) if time_axis else (1, batch, width)
        output = _stack([G.reshape(h, per_step) for h in inputs], time_axis)
        last = [_stack([G.reshape(f[k], (1, batch, hidden)) for f in finals], 0) for k in range(len(finals[0]))]
        if unbatched:
            output = G.reshape(output, (steps, width))
            last = [G.reshape(h, (len(finals), hidden)) for h in last]
        return (output, *last)
    return convert


lstm = _sequence(_lstm_step)
gru = _sequence(_gru_step)
rnn_tanh = _sequence(_rnn_step(G.tanh))
rnn_relu = _sequence(_rnn_step(G.nn.relu))
