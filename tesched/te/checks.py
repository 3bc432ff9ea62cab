"""Argument checks of the declarations (``placeholder``, ``compute``, ``reduce_axis``, ``var``).

Each check raises ``TypeError`` or ``ValueError`` whose message names the declaration and the argument at
fault, so a mistake never reaches the compiler as an undeclared C variable or leaks a bare Python message.
This module only checks; :mod:`.tensor` builds the declarations.
"""
from __future__ import annotations

from typing import Callable, Sequence

from tesched.te import dtype as dt
from tesched.te.expr import Const, Expr, Var
from tesched.te.reduction import Reduce
from tesched.te.visit import walk


def check_name(name: object, what: str) -> str:
    """``name`` if it is a str (any text: C identifiers are made from it later); else a TypeError naming
    ``what``."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: name must be a str, got {type(name).__name__} {name!r}")
    return name


def check_shape_container(shape: object, what: str) -> Sequence:
    """The entries of a shape: an int or a size expression alone, or a list or tuple of them."""
    if isinstance(shape, (int, Expr)) and not isinstance(shape, bool):
        return (shape,)
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{what}: shape must be a tuple of ints or size variables, got "
                        f"{type(shape).__name__} {shape!r}")
    return shape


def check_callable(fcompute: object, name: str) -> Callable:
    if not callable(fcompute):
        raise TypeError(f"compute {name}: fcompute must be a function of the axes (e.g. lambda i, j: ...), "
                        f"got {type(fcompute).__name__} {fcompute!r}")
    return fcompute


def reduce_bound(value: object, which: str, name: str) -> int | Expr:
    """A bound of ``reduce_axis``: an int or an integer expression (never a float or a bool)."""
    if isinstance(value, Const) and dt.is_int(value.dtype) and value.dtype != "bool":
        return int(value.value)
    if isinstance(value, Expr):
        if not dt.is_int(value.dtype) or value.dtype == "bool":
            raise TypeError(f"reduce_axis {name}: the {which} bound must be an integer, got a {value.dtype} "
                            f"expression")
        return value
    if isinstance(value, bool) or not (isinstance(value, int) or hasattr(value, "__index__")):
        raise TypeError(f"reduce_axis {name}: the {which} bound must be an int or an integer expression, "
                        f"got {type(value).__name__} {value!r}")
    return int(value)


def reduce_bounds(dom: object, name: str) -> tuple[int | Expr, int | Expr]:
    """``(lo, hi)`` of a ``reduce_axis`` domain given as a pair."""
    if not isinstance(dom, (list, tuple)) or len(dom) != 2:
        raise TypeError(f"reduce_axis {name}: dom must be a pair (lo, hi) (half-open), got "
                        f"{type(dom).__name__} {dom!r}")
    return reduce_bound(dom[0], "lower", name), reduce_bound(dom[1], "upper", name)


def check_free_axes(name: str, axes: Sequence[Var], body: Expr, is_axis: Callable[[Expr], bool]) -> None:
    """Every loop variable the body uses is an axis of this compute or of its own reduction.

    ``is_axis(e)`` tells loop variables (axes) from size variables, which may appear anywhere. A reduce
    axis used outside ``ts.sum(..., axis=k)``, or an axis of another compute, raises ``ValueError``. The
    bounds of a reduce axis may use this compute's axes (TVM's ``reduce_axis((0, i))``: a triangular
    domain) and sizes, nothing else.
    """
    own = {id(a) for a in axes}
    reduce_axes: list[Var] = list(body.axis) if isinstance(body, Reduce) else []
    allowed = own | {id(a) for a in reduce_axes}
    for e in walk(body):
        if is_axis(e) and id(e) not in allowed:
            axis = getattr(e, "name", "?")
            if getattr(e, "iter_type", None) == "comm_reduce":
                raise ValueError(f"compute {name}: reduce axis {axis} is used outside a reduction over it; "
                                 f"write ts.sum(..., axis={axis}) (or max/min) as the whole body")
            raise ValueError(f"compute {name}: axis {axis} is not an axis of {name} (it belongs to another "
                             "compute); use the arguments of fcompute")
    for r in reduce_axes:
        dom = getattr(r, "dom", None)
        for bound in (dom.min, dom.extent) if dom is not None else ():
            for e in walk(bound) if isinstance(bound, Expr) else ():
                if is_axis(e) and id(e) not in own:
                    raise ValueError(f"compute {name}: the bounds of reduce axis {r.name} use "
                                     f"{getattr(e, 'name', '?')}, which "
                                     f"is not an axis of {name}; use its own axes or sizes")


def check_reduction(name: str, body: Reduce) -> None:
    """A reduction fits its stage: its combination and identity have the sources' arity and dtypes, and
    every ``init`` has its component's dtype. A ``TypeError`` names the stage."""
    try:
        dtypes = tuple(s.dtype for s in body.sources)
        body.identities()
        body.combine_all([Var(f"x{k}", d) for k, d in enumerate(dtypes)], [Var(f"y{k}", d) for k, d in enumerate(dtypes)])
        for k, (start, d) in enumerate(zip(body.inits or (), dtypes)):
            if start.dtype != d:
                raise TypeError(f"init {k} is {start.dtype}, the reduced expression is {d}; cast it with "
                                f".astype('{d}')")
    except TypeError as err:
        raise TypeError(f"compute {name}: {err}") from None
