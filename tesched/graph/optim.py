"""Training steps as graph functions: :func:`sgd` and :func:`adam` append PyTorch's parameter updates
(``torch.optim.SGD``, ``torch.optim.Adam``, without weight decay) to :func:`tesched.graph.gradient`.

The step is one graph, built with ``G.build`` like any other: each update is elementwise, so it fuses into
the kernel that computes its gradient (a weight gradient's epilogue). The optimizer state is explicit:
the step takes it as parameters and returns its new value, and the caller feeds it back, so the step has
no hidden state and the same executable serves any number of models of one shape. With ``has_aux``, the
loss function returns ``(loss, aux...)`` (a training import's new running statistics) and the step returns
the auxiliary values last, after the optimizer state. This module holds no training loop.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tesched.graph.gradient import differentiated_parameters, gradient
from tesched.graph.ir import Constant, Expr, Function, Tuple, Var
from tesched.graph.ops_elemwise import add, divide, exp, multiply, sqrt, subtract
from tesched.graph.types import TensorType


def _state(params: Sequence[Var], suffix: str, taken: set[str]) -> list[Var]:
    out = []
    for p in params:
        name = f"{p.name}_{suffix}"
        if name in taken:
            raise ValueError(f"optimizer state {name!r} would repeat a parameter name of the model")
        out.append(Var(name, p.tensor_type))
    return out


def _scalar(value: float, like: Expr) -> Constant:
    return Constant(np.array(value, dtype=like.tensor_type.dtype))


def _split(f: Function, wrt: Sequence[Var | str], has_aux: bool
           ) -> tuple[Function, Expr, list[Var], list[Expr], list[Expr]]:
    """``gradient(f, wrt)``, its loss, the parameters differentiated, their gradients and the auxiliary
    outputs."""
    g = gradient(f, wrt, has_aux=has_aux)
    assert isinstance(g.body, Tuple), "gradient returns a tuple"
    params = differentiated_parameters(f, wrt)
    loss, *rest = g.body.fields
    return g, loss, params, rest[:len(params)], rest[len(params):]


def sgd(f: Function, wrt: Sequence[Var | str], lr: float = 0.01, momentum: float = 0.0,
        has_aux: bool = False) -> Function:
    """One SGD step of loss ``f`` training the parameters ``wrt`` (names or variables): returns
    ``(loss, new params..., [new momentum buffers...], [aux...])`` (``has_aux``: see the module doc).

    With ``momentum``, the step takes one more parameter per trained parameter, ``<name>_momentum`` (zeros
    at the first step), after ``f``'s, and returns its new value after the new parameters
    (``torch.optim.SGD``: ``buf = momentum * buf + grad; p -= lr * buf``)."""
    g, loss, params, grads, aux = _split(f, wrt, has_aux)
    if not momentum:
        news = [subtract(p, multiply(d, _scalar(lr, p))) for p, d in zip(params, grads)]
        return Function(g.params, Tuple([loss, *news, *aux]), {"name": f"{f.name}_sgd"})
    bufs = _state(params, "momentum", {p.name for p in g.params})
    new_bufs = [add(multiply(b, _scalar(momentum, b)), d) for b, d in zip(bufs, grads)]
    news = [subtract(p, multiply(b, _scalar(lr, p))) for p, b in zip(params, new_bufs)]
    return Function(tuple(g.params) + tuple(bufs), Tuple([loss, *news, *new_bufs, *aux]), {"name": f"{f.name}_sgd"})


def adam(f: Function, wrt: Sequence[Var | str], lr: float = 1e-3,
         betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, has_aux: bool = False) -> Function:
    """One Adam step of loss ``f`` training the parameters ``wrt`` (``torch.optim.Adam``).

    The step takes, after ``f``'s parameters, ``<name>_m`` and ``<name>_v`` for each trained parameter
    (zeros at the first step) and ``step``, a float32 scalar counting steps from 1; it returns
    ``(loss, new params..., new m..., new v..., [aux...])`` (``has_aux``: see the module doc)."""
    g, loss, params, grads, aux = _split(f, wrt, has_aux)
    taken = {p.name for p in g.params}
    ms, vs = _state(params, "m", taken), _state(params, "v", taken)
    step = Var("step", TensorType((), "float32"))
    if "step" in taken:
        raise ValueError("adam: the model has a parameter named 'step', the name of the step counter")
    b1, b2 = betas
    new_m = [add(multiply(m, _scalar(b1, m)), multiply(d, _scalar(1 - b1, d))) for m, d in zip(ms, grads)]
    new_v = [add(multiply(v, _scalar(b2, v)), multiply(multiply(d, d), _scalar(1 - b2, d)))
             for v, d in zip(vs, grads)]
    one = _scalar(1.0, step)
    correction1 = subtract(one, exp(multiply(step, _scalar(float(np.log(b1)), step))))
    correction2 = subtract(one, exp(multiply(step, _scalar(float(np.log(b2)), step))))
    step_size = divide(_scalar(lr, step), correction1)
    news = []
    for p, m, v in zip(params, new_m, new_v):
        denom = add(divide(sqrt(v), sqrt(correction2)), _scalar(eps, v))
        news.append(subtract(p, multiply(divide(m, denom), step_size)))
    return Function(tuple(g.params) + tuple(ms) + tuple(vs) + (step,), Tuple([loss, *news, *new_m, *new_v, *aux]),
                    {"name": f"{f.name}_adam"})
