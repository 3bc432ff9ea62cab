"""Computes without a shape (Halide's Funcs): ``ts.compute(None, lambda x, y: ...)`` and ``ts.Func(None, ...)``.

Such a compute is defined everywhere; the region it computes is inferred from what its readers read
(Halide's bounds inference), when a schedule is created for the outputs, which alone carry sizes
(Halide's ``realize``). This module only declares: an :class:`InferredOp` is a compute whose axes run
over placeholder extents (the size variables ``<name>.extent<d>``, which no kernel binds) until the
region is known. The region itself is computed by :mod:`tesched.poly.regions` and the pipeline that
computes it is rebuilt by :mod:`tesched.te.realize`. A compute with a shape is :func:`.tensor.compute`'s.
"""
from __future__ import annotations

import inspect
from typing import Callable, cast

from tesched.te import checks
from tesched.te.expr import Expr, Var
from tesched.te.reduction import Reduce
from tesched.te.tensor import (ComputeOp, IterType, IterVar, Range, Tensor, _body, _evaluate, _param_names,
                               compute as compute_shaped)
from tesched.te.visit import walk


class InferredOp(ComputeOp):
    """A compute whose region is inferred from its readers (see the module docstring)."""


def compute(shape, fcompute: Callable[..., object], name: str = "compute", tag: str = "",
            attrs: dict | None = None) -> Tensor:
    """``out[i...] = fcompute(i...)`` over ``shape``, or, with ``shape=None``, over the region its readers read
    (see :func:`tesched.te.tensor.compute`, appended below, and the module docstring)."""
    if shape is not None:
        return compute_shaped(shape, fcompute, name, tag, attrs)
    checks.check_name(name, "compute")
    params = _arity(checks.check_callable(fcompute, name), name)
    axis = [IterVar(Range(0, Var(f"{name}.extent{d}")), p, IterType.DATA_PAR) for d, p in enumerate(params)]
    body = _body(name, _evaluate(name, fcompute, axis))
    inner = [e for e in walk(body) if isinstance(e, Reduce) and e is not body]
    if inner:
        raise ValueError(f"compute {name}: its region is inferred (shape=None), so a reduction inside its "
                         f"body ({inner[0].combiner}) cannot be lifted to a stage of known shape; write the "
                         "reduction as a compute of its own, or give the compute a shape")
    if isinstance(body, Reduce):
        if body.inits is not None:
            raise ValueError(f"compute {name}: its region is inferred (shape=None); a reduction with init= "
                             "needs a shape (the init tensor must have the output's shape)")
        checks.check_reduction(name, body)
        own = {id(a) for a in axis}
        for r in body.axis:
            bounds = [b for b in (r.range.min, r.range.extent) if isinstance(b, Expr)] if isinstance(r, IterVar) else []
            if any(id(e) in own for b in bounds for e in walk(b)):
                raise ValueError(f"compute {name}: its region is inferred (shape=None), so the bounds of reduce "
                                 f"axis {r.name} cannot use its axes; give the compute a shape")
    checks.check_free_axes(name, axis, body, lambda e: isinstance(e, IterVar))
    op = InferredOp(name, tag, axis, body, attrs)
    if op.num_outputs == 1:
        return op.output(0)
    return cast(Tensor, tuple(op.output(k) for k in range(op.num_outputs)))     # as tensor.compute: a tuple


compute.__doc__ = f"""{compute.__doc__}

    With ``shape=None`` the compute has no shape (Halide's Func, defined everywhere): its axes are the
    parameters of ``fcompute``, its region is inferred from what its readers read when a schedule of the
    outputs is created, and ``lower()`` prints it; it may not be an output or a kernel argument.

    {(compute_shaped.__doc__ or "").strip()}
    """


def _arity(fcompute: Callable, name: str) -> list[str]:
    """The axis names of an inferred compute: the positional parameters of ``fcompute`` (its number of
    dimensions comes from them, since there is no shape)."""
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        raise ValueError(f"compute {name}: shape=None needs a function whose parameters name its axes") from None
    params = [p for p in sig.parameters.values()
              if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.KEYWORD_ONLY]
    if not params or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        raise ValueError(f"compute {name}: shape=None needs a function of named axes (lambda x, y: ...), "
                         "which give its dimensions")
    return _param_names(fcompute, len(params), name)

