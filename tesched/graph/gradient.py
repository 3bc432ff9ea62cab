"""``gradient(f, wrt)``: a graph function computing ``f``'s output (a loss) and its gradients with respect
to chosen parameters of ``f``, by reverse mode over the graph.

The graph is walked from the output back to the parameters. Each call that depends on a parameter in
``wrt`` passes the adjoint of its output to each argument as one more graph call, the op's adjoint derived
from its declaration (:mod:`.op_adjoint`); the adjoints reaching a value used several times are added with
``add``. Tuples and their fields pass adjoints field by field. The result is an ordinary graph: it is
optimised, fused and built like any other (``G.build``), so an elementwise adjoint fuses with its
neighbours and the forward values the adjoints read are kept by the fused groups that compute them.

Adjoints flow through floating values only. A boolean value (a comparison feeding ``where``) passes no
gradient; an integer one that the output depends on (``argmax``, a cast to an integer) raises a
:class:`~tesched.errors.GradientError` naming the op that made it, as does an op whose declaration has no
derivative (a max scatter). A parameter the output does not depend on gets zeros, with a warning (as
``ts.gradient`` does). With ``has_aux`` (JAX's name), the output is a tuple whose first field is the loss
and whose other fields are auxiliary values returned unchanged after the gradients (a training import's
new running statistics). It does not differentiate primitive functions (run it before fusion) or values of
tuple type other than literal tuples.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from tesched.errors import GradientError
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tesched.graph.op import get_op
from tesched.graph.op_adjoint import adjoint_call
from tesched.graph.types import TupleType
from tesched.graph.visit import post_order
from tesched.te import dtype as dt

_ADD = get_op("add")


def differentiated_parameters(f: Function, wrt: Sequence[Var | str] | None) -> list[Var]:
    """The parameters of ``f`` that ``wrt`` names (every floating one when ``None``), checked."""
    if wrt is None:
        return [p for p in f.params if dt.is_float(p.tensor_type.dtype)]
    by_name = {p.name: p for p in f.params}
    out = []
    for w in wrt:
        v = by_name.get(w) if isinstance(w, str) else w if any(w is p for p in f.params) else None
        if v is None:
            name = w if isinstance(w, str) else getattr(w, "name", repr(w))
            raise GradientError(f"G.gradient: {name!r} is not a parameter of {f.name} "
                                f"(its parameters: {', '.join(by_name)})")
        if not dt.is_float(v.tensor_type.dtype):
            raise GradientError(f"G.gradient: parameter {v.name} is {v.tensor_type.dtype}; only floating "
                                "values have gradients")
        out.append(v)
    return out


def _depends(order: list[Expr], wanted: set[int]) -> set[int]:
    """Ids of the nodes whose value depends on a node in ``wanted`` (``wanted`` included)."""
    reaches = set(wanted)
    for node in order:
        if any(id(c) in reaches for c in node.children()):
            reaches.add(id(node))
    return reaches


def _describe(node: Expr) -> str:
    return node.op_name if isinstance(node, Call) else type(node).__name__


def _total(parts: list[Expr]) -> Expr:
    total = parts[0]
    for p in parts[1:]:
        total = Call(_ADD, [total, p])
    return total


def _head(f: Function, loss: Expr, head: Expr | None) -> tuple[Expr, tuple[Var, ...]]:
    """The adjoint of the ``loss`` of ``f`` (ones by default) and the parameters the result takes besides
    ``f``'s."""
    out = loss.tensor_type
    if head is None:
        return Constant(np.ones(out.shape, dtype=out.dtype)), ()
    if not isinstance(head, Expr) or head.checked_type != out:
        got = head.checked_type if isinstance(head, Expr) else type(head).__name__
        raise GradientError(f"G.gradient: head must be a graph value of the output's type {out}, got {got}")
    free = tuple(v for v in post_order(head) if isinstance(v, Var) and not any(v is p for p in f.params))
    return head, free


def _backward(body: Expr, wanted: set[int], head: Expr) -> dict[int, Expr]:
    """The adjoint of every node of ``body`` that depends on ``wanted`` and that the output reads."""
    order = post_order(body)
    depends = _depends(order, wanted)
    parts: dict[tuple[int, int], list[Expr]] = {(id(body), -1): [head]}
    adjoints: dict[int, Expr] = {}
    for node in reversed(order):
        if id(node) not in depends:
            continue
        if isinstance(node, Tuple):
            for k, field in enumerate(node.fields):
                got = parts.pop((id(node), k), None)
                if got and id(field) in depends:
                    parts.setdefault((id(field), -1), []).extend(got)
            continue
        got = parts.pop((id(node), -1), None)
        if not got:
            continue
        adjoints[id(node)] = total = _total(got)
        if isinstance(node, TupleGetItem):
            parts.setdefault((id(node.tuple_value), node.index), []).append(total)
        elif isinstance(node, Call):
            _pass_to_arguments(node, total, depends, parts)
        elif not isinstance(node, Var):
            raise GradientError(f"G.gradient: cannot differentiate through a {type(node).__name__}")
    return adjoints


def _pass_to_arguments(call: Call, total: Expr, depends: set[int], parts: dict[tuple[int, int], list[Expr]]) -> None:
    if isinstance(call.op, Function):
        raise GradientError(f"G.gradient: the graph calls the primitive function {call.op.name}; differentiate "
                            "before fusion")
    for k, arg in enumerate(call.args):
        if id(arg) not in depends:
            continue
        dtype = arg.tensor_type.dtype
        if dtype == "bool":
            continue                           # a condition: piecewise constant, no gradient
        if not dt.is_float(dtype):
            raise GradientError(f"G.gradient: the output depends on the parameters through {_describe(arg)}, whose "
                                f"{dtype} result (argument {k} of {call.op_name}) has no gradient")
        adjoint = adjoint_call(call, k, total)
        if adjoint is not None:
            parts.setdefault((id(arg), -1), []).append(adjoint)


def _loss_and_aux(f: Function, has_aux: bool) -> tuple[Expr, list[Expr]]:
    """The value to differentiate and the auxiliary outputs passed through."""
    if not has_aux:
        out_type = f.body.checked_type
        if isinstance(out_type, TupleType) or not dt.is_float(f.body.tensor_type.dtype):
            hint = " (a tuple whose first field is the loss: pass has_aux=True)" if isinstance(out_type, TupleType) \
                else ""
            raise GradientError(f"G.gradient: the output of {f.name} must be one floating tensor{hint}, got {out_type}")
        return f.body, []
    if not isinstance(f.body, Tuple) or not f.body.fields:
        raise GradientError(f"G.gradient: has_aux=True needs the output of {f.name} to be a tuple (loss, aux...), "
                            f"got {f.body.checked_type}")
    loss, *aux = f.body.fields
    if isinstance(loss.checked_type, TupleType) or not dt.is_float(loss.tensor_type.dtype):
        raise GradientError(f"G.gradient: the first output of {f.name} (the loss) must be one floating tensor, got "
                            f"{loss.checked_type}")
    return loss, aux


def gradient(f: Function, wrt: Sequence[Var | str] | None = None, head: Expr | None = None,
             has_aux: bool = False) -> Function:
    """A function of ``f``'s parameters returning the tuple ``(output, d output / d wrt[0], ...)``, then
    the auxiliary outputs with ``has_aux``.

    Parameters
    ----------
    f : Function
        A graph function with one floating tensor output (a loss; any shape).
    wrt : sequence of Var or str, optional
        The parameters (or their names) to differentiate with respect to; every floating parameter by
        default.
    head : Expr, optional
        The adjoint of the output, of its type: ones by default (so a non-scalar output is summed). A
        variable that is not a parameter of ``f`` becomes one more parameter of the result, after ``f``'s.
    has_aux : bool
        ``f`` returns a tuple ``(loss, aux...)``: differentiate the loss and return the auxiliary values
        unchanged after the gradients (``(loss, grads..., aux...)``).

    Raises
    ------
    tesched.errors.GradientError
        Naming the op with no gradient (``argmax``, an integer cast, a max scatter), a ``wrt`` that is not a
        floating parameter, a ``head`` of another type, or an output that is not a loss (or, with
        ``has_aux``, a tuple starting with one).
    """
    if not isinstance(f, Function):
        raise TypeError(f"G.gradient: expected a graph Function, got {type(f).__name__}")
    loss, aux = _loss_and_aux(f, has_aux)
    params = differentiated_parameters(f, wrt)
    seed, extra = _head(f, loss, head)
    adjoints = _backward(loss, {id(p) for p in params}, seed)
    grads: list[Expr] = []
    for p in params:
        if id(p) in adjoints:
            grads.append(adjoints[id(p)])
        else:
            warnings.warn(f"G.gradient: the output of {f.name} does not depend on {p.name}; its gradient is zero",
                          stacklevel=2)
            ty = p.tensor_type
            grads.append(Constant(np.zeros(ty.shape, dtype=ty.dtype)))
    return Function(tuple(f.params) + extra, Tuple([loss, *grads, *aux]), {"name": f"{f.name}_grad"})
