"""Model phase 3: prove that every read stays inside the tensor it reads, or raise ``BoundsError``.

For every computed stage and every read ``T[indices]`` in its body (inlined stages substituted), the image
of the stage's iteration domain under the access relation must lie inside ``T``'s box, for every value of
the size parameters allowed by the shapes (isl: ``range(access) ⊆ box``). A read only counts where it is
evaluated: under ``if_then_else(c, ...)``/``where=`` the affine part of ``c`` restricts it, and so does the
left operand of ``&``/``|`` (which short-circuit in C). Reads at data-dependent (non-affine) indices, or
under conditions that are not affine, are not judged here. A violation raises
:class:`~tesched.errors.BoundsError` naming the tensor, the stage, the index expression and one offending
iteration, in Halide's words ("accessed at 14, which is beyond the max (9)"). A read of a stage computed
at the root with a ``bound``, outside the bounded region, raises ``ScheduleError`` the same way.
"""
from __future__ import annotations

import re
from typing import Iterator

import islpy as isl

from tesched.errors import BoundsError
from tesched.poly.affine import NotAffine
from tesched.poly.domains import bound_exceeded
from tesched.poly.model import PolyModel, StageModel
from tesched.te.expr import Binary, Expr, Reduce, Select, Unary
from tesched.te.tensor import Tensor, TensorRead
from tesched.te.visit import structural_key

_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "="}


def check_bounds(model: PolyModel) -> None:
    """Raise BoundsError for the first read of any stage that can fall outside its tensor."""
    for sm in model.stages:
        keys: dict[int, tuple] = {}
        checked: set[tuple] = set()
        for read, guard in _guarded_reads(sm.body, (), set()):
            key = (id(read.tensor), tuple(structural_key(i, keys) for i in read.indices),
                   tuple((structural_key(c, keys), holds) for c, holds in guard))
            if key not in checked:      # an inlined chain reads the same element many times
                checked.add(key)
                _check_read(model, sm, read, guard)


def _condition(model: PolyModel, sm: StageModel, cond: Expr, negate: bool = False) -> str | None:
    """isl text of an affine condition (or of its negation), or None if any part of it is not affine."""
    try:
        if isinstance(cond, Unary) and cond.op == "not":
            return _condition(model, sm, cond.a, not negate)
        if isinstance(cond, Binary) and cond.op in ("and", "or"):
            a, b = _condition(model, sm, cond.a, negate), _condition(model, sm, cond.b, negate)
            if a is None or b is None:
                return None
            joiner = "and" if (cond.op == "and") != negate else "or"
            return f"(({a}) {joiner} ({b}))"
        if isinstance(cond, Binary) and cond.op in _NEGATE:
            op = _NEGATE[cond.op] if negate else cond.op
            a, b = model.isl_of(cond.a, sm.coord), model.isl_of(cond.b, sm.coord)
            return f"({a} < {b} or {a} > {b})" if op == "ne" else f"{a} {_SYMBOL[op]} {b}"
    except NotAffine:
        return None
    return None


def _guarded_reads(e: Expr, guard: tuple, seen: set) -> Iterator[tuple[TensorRead, tuple]]:
    """Every tensor read of ``e`` with the conditions (expressions, polarity) under which it runs; a
    subexpression shared in the DAG is visited once per guard."""
    visit = (id(e), tuple((id(c), holds) for c, holds in guard))
    if visit in seen:
        return
    seen.add(visit)
    if isinstance(e, TensorRead):
        yield e, guard
        for idx in e.indices:
            yield from _guarded_reads(idx, guard, seen)
    elif isinstance(e, Select):
        yield from _guarded_reads(e.cond, guard, seen)
        yield from _guarded_reads(e.true_value, guard + ((e.cond, True),), seen)
        yield from _guarded_reads(e.false_value, guard + ((e.cond, False),), seen)
    elif isinstance(e, Reduce):
        inner = guard if e.where is None else guard + ((e.where, True),)
        if e.where is not None:
            yield from _guarded_reads(e.where, guard, seen)
        yield from _guarded_reads(e.source, inner, seen)
    elif isinstance(e, Binary) and e.op in ("and", "or"):
        yield from _guarded_reads(e.a, guard, seen)
        yield from _guarded_reads(e.b, guard + ((e.a, e.op == "and"),), seen)
    else:
        for child in e.children():
            yield from _guarded_reads(child, guard, seen)


def _check_read(model: PolyModel, sm: StageModel, read: TensorRead, guard: tuple) -> None:
    stmt = sm.main
    try:
        access = model.access_map(stmt, "T", read.indices)
    except NotAffine:
        return
    for cond, holds in guard:
        text = _condition(model, sm, cond, negate=not holds)
        if text is None:
            return          # where the read runs depends on data: not judged (never a false alarm)
        where = isl.Set(f"{model.param_prefix}{{ {stmt.name}[{', '.join(stmt.coords)}] : {text} }}")
        access = access.intersect_domain(where)
    access = access.intersect_params(model.context)
    box = model.tensor_domain(read.tensor, "T")
    outside = access.subtract_range(box)
    if not outside.is_empty():
        raise BoundsError(_message(model, sm, read, outside))
    producer = model.by_op.get(id(read.tensor.op))
    if producer is not None and producer.realized is not None:
        beyond = access.subtract_range(producer.realized.set_tuple_name("T"))
        if not beyond.is_empty():
            text = ", ".join(repr(i) for i in read.indices)
            bound_exceeded(model, producer, beyond, f"{sm.name} (reading {read.tensor.name}[{text}])")


def _value(text: str, params: dict[str, int]) -> int:
    """The value of an isl expression of the size parameters at the given parameter values."""
    fixed = re.sub(r"\bN\d+\b", lambda m: str(params[m.group(0)]), text)
    return isl.Set(f"{{ [x] : x = {fixed} }}").dim_max_val(0).to_python()


def _message(model: PolyModel, sm: StageModel, read: TensorRead, outside: isl.Map) -> str:
    point = outside.wrap().sample_point()
    stmt = sm.main
    n_in = len(stmt.coords)
    values = [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_in + read.tensor.ndim)]
    params = {name: point.get_coordinate_val(isl.dim_type.param, k).to_python()
              for k, name in enumerate(model.param_names.values())}
    coord_value = dict(zip(stmt.coords, values[:n_in]))
    names = {sm.coord[id(a)]: a.name for a in sm.axes + sm.raxes}
    at = ", ".join(f"{names[c]} = {coord_value[c]}" for c in stmt.coords if c in names)
    index = values[n_in:]
    tensor: Tensor = read.tensor
    shape = [d if isinstance(d, int) else _value(model.isl_of(d, {}), params) for d in tensor.shape]
    for dim, (got, extent) in enumerate(zip(index, shape)):
        if got < 0 or (isinstance(extent, int) and got >= extent):
            beyond = "below the min (0)" if got < 0 else f"beyond the max ({extent - 1})"
            break
    else:
        dim, got, beyond = 0, index[0], "outside the tensor"
    sizes = ", ".join(f"{p.name} = {params[model.param_names[id(p)]]}" for p in model.params)
    text = ", ".join(repr(i) for i in read.indices)
    return (f"{tensor.name} is accessed out of bounds by stage {sm.name}: {tensor.name}[{text}] at {at}"
            f"{f' (with {sizes})' if sizes else ''} reads dimension {dim} at {got}, which is {beyond}; "
            f"{tensor.name} has shape {tuple(shape)}. Clamp the index or read through ts.boundary "
            f"(constant_exterior, repeat_edge, mirror_interior)")
