"""Reducers: the built-in ``sum``/``prod``/``max``/``min`` and user-defined ones (``comm_reducer``).

A reducer call ``r(expr, axis=k, where=cond, init=start)`` builds a :class:`~tesched.te.reduction.Reduce`.
``comm_reducer(combine, identity)`` is TVM's: ``combine(x, y)`` merges two partial results (tuples of
expressions for a tuple reduction such as argmax) and ``identity`` gives the starting values, per dtype.
``init=`` (a constant, an expression of the compute's axes, or a tensor of the output's shape) replaces the
identity as the starting value, as TVM's ``init``. A tensor given whole is read at the compute's axes when
the compute is declared (:func:`tesched.te.tensor.compute`), which also checks every reduction against its
stage (:func:`tesched.te.checks.check_reduction`). This module builds and checks; it knows nothing of loops or C.
"""
from __future__ import annotations

from typing import Callable, Sequence

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Expr, Select, as_expr, binary, cast_to
from tesched.te.reduction import Reduce
from tesched.te.tensor import IterType, IterVar, Tensor, WholeTensor


def _axes(what: str, axis: object) -> list[IterVar]:
    candidates: list[object] = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not candidates:
        raise ValueError(f"{what}: empty axis list")
    for a in candidates:
        if not isinstance(a, IterVar) or a.iter_type != IterType.COMM_REDUCE:
            raise TypeError(f"{what}: axis {a!r} is not a reduce_axis")
    return [a for a in candidates if isinstance(a, IterVar)]


def _condition(where: object) -> Expr | None:
    if where is None:
        return None
    cond = as_expr(where)
    return cond if cond.dtype == "bool" else Binary(BinOp.NE, cond, as_expr(0, cond.dtype), "bool")


def _source(value: object) -> Expr:
    source = as_expr(value)
    return cast_to(source, "int32") if source.dtype == "bool" else source


def _inits(init: object, sources: Sequence[Expr], what: str) -> tuple[Expr, ...] | None:
    """The starting values given by ``init=``: one per source (a tuple for a tuple reduction)."""
    if init is None:
        return None
    values = list(init) if isinstance(init, (tuple, list)) else [init]
    if len(values) != len(sources):
        raise ValueError(f"{what}: init has {len(values)} values for {len(sources)} reduced expressions")
    out: list[Expr] = []
    for v, s in zip(values, sources):
        if isinstance(v, Tensor):
            out.append(WholeTensor(v))
        elif isinstance(v, Expr):
            out.append(v)
        else:
            out.append(as_expr(v, s.dtype))
    return tuple(out)


def builtin(combiner: str) -> Callable[..., Expr]:
    """The reducer function ``ts.<combiner>`` (``sum``, ``prod``, ``max``, ``min``)."""
    def reduce(expr: object, axis: IterVar | Sequence[IterVar] | None = None, where: object = None,
               init: object = None) -> Expr:
        is_reduce_axis = isinstance(axis, IterVar) and axis.iter_type == IterType.COMM_REDUCE
        if not is_reduce_axis and not isinstance(axis, (list, tuple)):
            if axis is None or combiner in ("sum", "prod"):
                raise TypeError(f"ts.{combiner} needs axis=<reduce_axis or list of them>")
            return binary(combiner, expr, axis)  # elementwise max/min of two values
        source = _source(expr)
        return Reduce(combiner, source, _axes(f"ts.{combiner}", axis), _condition(where),
                      _inits(init, (source,), f"ts.{combiner}"))

    reduce.__name__ = reduce.__qualname__ = combiner
    what = {"sum": "sum", "prod": "product", "max": "maximum", "min": "minimum"}[combiner]
    reduce.__doc__ = f"""The {what} of ``expr`` over ``axis`` (TVM's ``te.{combiner}``).

    Parameters
    ----------
    expr : Expr
        The reduced expression (``bool`` counts as int32).
    axis : IterVar or list of IterVar
        The reduce axes (``ts.reduce_axis``); their bounds may use the compute's own axes (triangular).
    where : Expr, optional
        Only the points where it holds are reduced.
    init : number, Expr or Tensor, optional
        The starting value instead of the identity: a constant, an expression of the compute's axes, or
        a tensor of the output's shape (read at the output's point).

    Example
    -------
    >>> k = ts.reduce_axis((0, n), name="k")
    >>> C = ts.compute((m,), lambda i: ts.{combiner}(A[i, k], axis=k{', init=1.0' if combiner == 'sum' else ''}), name="C")
    """
    return reduce


class CommReducer:
    """A user-defined commutative reducer (``ts.comm_reducer``); call it as a built-in reducer."""

    def __init__(self, fcombine: Callable, fidentity: object, name: str = "reduce"):
        if not callable(fcombine):
            raise TypeError(f"comm_reducer {name}: combine must be a function of two partial results, got "
                            f"{type(fcombine).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"comm_reducer: name must be a str, got {type(name).__name__}")
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def __repr__(self) -> str:
        return f"CommReducer({self.name!r})"

    def identity_values(self, dtypes: tuple[str, ...]) -> tuple[Expr, ...]:
        """The identity of each component for sources of ``dtypes``."""
        given = self.fidentity(*dtypes) if callable(self.fidentity) else self.fidentity
        values = list(given) if isinstance(given, (tuple, list)) else [given]
        if len(values) != len(dtypes):
            raise TypeError(f"reducer {self.name}: identity gives {len(values)} values for {len(dtypes)} "
                            "reduced expressions")
        out = []
        for k, (v, d) in enumerate(zip(values, dtypes)):
            e = as_expr(v, d)
            if e.dtype != d:
                raise TypeError(f"reducer {self.name}: identity {k} is {e.dtype}, the reduced expression is {d}")
            out.append(e)
        return tuple(out)

    def combine_values(self, acc: Sequence[Expr], value: Sequence[Expr]) -> tuple[Expr, ...]:
        """``combine(acc, value)`` as a tuple with one expression per component (of the components' dtypes)."""
        n = len(acc)
        result = self.fcombine(tuple(acc) if n > 1 else acc[0], tuple(value) if n > 1 else value[0])
        parts = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(parts) != n:
            raise TypeError(f"reducer {self.name}: combine returns {len(parts)} value(s) for {n} reduced "
                            "expression(s); return one per component, e.g. (index, value) for argmax")
        out = []
        for k, (p, a) in enumerate(zip(parts, acc)):
            e = as_expr(p, a.dtype)
            if e.dtype != a.dtype:
                raise TypeError(f"reducer {self.name}: combine returns {e.dtype} for component {k}, which is "
                                f"{a.dtype}; cast it with .astype('{a.dtype}')")
            out.append(e)
        return tuple(out)

    def _combine_directly(self, *operands: object) -> Expr | tuple[Expr, ...]:
        """``reducer(a, b, ...)`` on plain values (no reduce axis): ``combine`` folded over them, left to
        right, as TVM's ``comm_reducer`` does (``mysum(x, y)`` is ``x + y``)."""
        rows = [tuple(o) if isinstance(o, (tuple, list)) else (o,) for o in operands if o is not None]
        if len({len(r) for r in rows}) != 1:
            raise TypeError(f"reducer {self.name}: the values combined directly must all have "
                            f"{len(rows[0])} component(s)")
        acc = tuple(as_expr(v) for v in rows[0])
        for row in rows[1:]:
            acc = self.combine_values(acc, tuple(as_expr(v, a.dtype) for v, a in zip(row, acc)))
        return acc[0] if len(acc) == 1 else acc

    def __call__(self, expr: object, axis: IterVar | Sequence[IterVar], where: object = None,
                 init: object = None) -> Expr | tuple[Expr, ...]:
        """Reduce ``expr`` (an expression, or a tuple for a tuple reduction) over ``axis``; a tuple
        reduction returns one ``Reduce`` per component, to be the bodies of one compute. Given plain
        values instead of a reduce axis (``mysum(a, b)``), combine them directly, as TVM does."""
        what = f"reducer {self.name}"
        if not isinstance(axis, (IterVar, tuple, list)) or (
                isinstance(axis, (tuple, list)) and axis and not any(isinstance(a, IterVar) for a in axis)):
            return self._combine_directly(expr, axis, where, init)
        values = list(expr) if isinstance(expr, (tuple, list)) else [expr]
        if not values:
            raise ValueError(f"{what}: nothing to reduce")
        sources = tuple(_source(v) for v in values)
        body = Reduce(self.name, sources, _axes(what, axis), _condition(where), _inits(init, sources, what), self)
        if len(sources) == 1:
            return body
        return tuple(body.component(k) for k in range(len(sources)))


def comm_reducer(fcombine: Callable, fidentity: object, name: str = "reduce") -> CommReducer:
    """A commutative reducer from its combination and identity (TVM's ``te.comm_reducer``).

    Parameters
    ----------
    fcombine : callable
        ``fcombine(x, y)``: two partial results merged; for a tuple reduction ``x`` and ``y`` are tuples
        and the result is a tuple of the same length. It must be commutative and associative (``rfactor``
        and vectorized lanes merge partial results in another order): an argmax that breaks ties toward
        the smaller index, as below, gives NumPy's answer under every schedule; one that keeps ``x`` on a
        tie (TVM's test) does only when the reduction runs in order.
    fidentity : callable or value(s)
        ``fidentity(*dtypes)`` returning the identity (a tuple for a tuple reduction), or the value(s).
    name : str
        The reducer's name, shown by ``lower()``.

    Example
    -------
    >>> def combine(x, y):
    ...     take = (x[1] > y[1]) | ((x[1] == y[1]) & (x[0] < y[0]))
    ...     return ts.select(take, x[0], y[0]), ts.select(take, x[1], y[1])
    >>> argmax = ts.comm_reducer(combine, lambda t0, t1: (ts.max_value(t0), ts.min_value(t1)), "argmax")
    >>> k = ts.reduce_axis((0, n), name="k")
    >>> I, V = ts.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    """
    return CommReducer(fcombine, fidentity, name)


def _arg_reducer(name: str, better: Callable[[Expr, Expr], Expr], worst: Callable[[str], Const]) -> CommReducer:
    def combine(x: tuple[Expr, Expr], y: tuple[Expr, Expr]) -> tuple[Expr, Expr]:
        x_nan, y_nan = x[1] != x[1], y[1] != y[1]      # NaN wins, as in NumPy (always false for integers)
        tie = (x[1] == y[1]) | (x_nan & y_nan)
        take = (x_nan & (y[1] == y[1])) | better(x[1], y[1]) | (tie & (x[0] < y[0]))
        return Select(take, x[0], y[0]), Select(take, x[1], y[1])

    return CommReducer(combine, lambda t0, t1: (max_value(t0), worst(t1)), name)


_ARGMAX = _arg_reducer("argmax", lambda a, b: a > b, lambda t: min_value(t))
_ARGMIN = _arg_reducer("argmin", lambda a, b: a < b, lambda t: max_value(t))


def _arg(reducer: CommReducer, expr: object, axis: IterVar | Sequence[IterVar], where: object) -> tuple[Expr, ...]:
    axes = _axes(f"ts.{reducer.name}", axis)
    if len(axes) != 1:
        raise ValueError(f"ts.{reducer.name}: reduces over one reduce axis (its index is the first output), "
                         f"got {len(axes)}")
    out = reducer((axes[0], expr), axes, where)
    assert isinstance(out, tuple)
    return out


def argmax(expr: object, axis: IterVar | Sequence[IterVar], where: object = None) -> tuple[Expr, ...]:
    """The index along ``axis`` of the largest ``expr`` and that value: a tuple reduction (Halide's inline
    ``argmax``), whose two components are the two outputs of one compute.

    Ties go to the smaller index and NaN counts as the largest value, as ``np.argmax``; the combination is
    commutative, so every schedule gives the same answer: ``s.rfactor(index, ki)`` (which returns both
    partial tensors, index and value) or ``s[index].vectorize(k)`` (vectors of partial pairs, combined
    after the loop).

    Parameters
    ----------
    expr : Expr
        The value compared.
    axis : IterVar
        One reduce axis; the index is its value (int32).
    where : Expr, optional
        Only these points take part.

    Example
    -------
    >>> k = ts.reduce_axis((0, n), name="k")
    >>> index, value = ts.compute((m,), lambda i: ts.argmax(A[i, k], axis=k), name="best")
    """
    return _arg(_ARGMAX, expr, axis, where)


def argmin(expr: object, axis: IterVar | Sequence[IterVar], where: object = None) -> tuple[Expr, ...]:
    """The index along ``axis`` of the smallest ``expr`` and that value (see :func:`argmax`; NaN counts as
    the smallest, as ``np.argmin``).

    Parameters
    ----------
    expr : Expr
        The value compared.
    axis : IterVar
        One reduce axis.
    where : Expr, optional
        Only these points take part.
    """
    return _arg(_ARGMIN, expr, axis, where)


def min_value(dtype: str) -> Const:
    """The smallest value of ``dtype`` (``-inf`` for floats), e.g. the identity of a maximum (TVM's
    ``te.min_value`` gives the most negative finite float; the infinity keeps ``-inf`` inputs right)."""
    d = dt.normalize(dtype)
    return Const(float("-inf"), d) if dt.is_float(d) else Const(dt.value_range(d)[0], d)


def max_value(dtype: str) -> Const:
    """The largest value of ``dtype`` (``inf`` for floats), e.g. the identity of a minimum."""
    d = dt.normalize(dtype)
    return Const(float("inf"), d) if dt.is_float(d) else Const(dt.value_range(d)[1], d)
