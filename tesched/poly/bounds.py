"""Model phase 3: prove that every read stays inside the tensor it reads, or raise ``BoundsError``.

For every computed stage and every read ``T[indices]`` in its body (inlined stages substituted), the image
of the stage's iteration domain under the access relation must lie inside ``T``'s box, for every value of
the size parameters allowed by the shapes (isl: ``range(access) ⊆ box``; a read whose indices interval
arithmetic over the stage's declared axes already bounds inside, as clamps and resampling do, is not given
to isl). A read only counts where it is
evaluated: under ``if_then_else(c, ...)``/``where=`` the affine part of ``c`` restricts it, and so does the
left operand of ``&``/``|`` (which short-circuit in C). Only the affine dimensions of a read are judged
here (``A[I[i], j + 1]``: dimension 1); a read under a condition that is not affine is judged as if it ran
everywhere. What cannot be proven this way (a data-dependent or non-affine index, an affine index that
only a data-dependent condition keeps inside) is not an error: it is recorded in ``model.unproven`` and
checked when the kernel runs (:mod:`.index_checks`). A violation raises
:class:`~tesched.errors.BoundsError` naming the tensor, the stage, the index expression and one offending
iteration, in Halide's words ("accessed at 14, which is beyond the max (9)"). A read of a stage computed
at the root with a ``bound``, outside the bounded region, raises ``ScheduleError`` the same way.
"""
from __future__ import annotations

import re
import islpy as isl

from tesched.errors import BoundsError
from tesched.poly.affine import NotAffine
from tesched.poly.domains import bound_exceeded
from tesched.poly.guards import guarded_reads, restrict_to_guard
from tesched.poly.index_checks import index_range
from tesched.poly.model import PolyModel, StageModel
from tesched.te.tensor import Tensor, TensorRead
from tesched.te.visit import structural_key


def check_bounds(model: PolyModel) -> None:
    """Raise BoundsError for the first read of any stage that can fall outside its tensor; record in
    ``model.unproven`` the dimensions of reads that only the kernel can check."""
    for sm in model.stages:
        keys: dict[int, tuple] = {}
        checked: dict[tuple, frozenset[int]] = {}
        for read, guard in guarded_reads(sm):
            key = (id(read.tensor), tuple(structural_key(i, keys) for i in read.indices),
                   tuple((structural_key(c, keys), holds) for c, holds in guard))
            if key not in checked:      # an inlined chain reads the same element many times
                proven = _proven_by_intervals(model, sm, read)
                checked[key] = proven if proven is not None else _check_read(model, sm, read, guard)
            if checked[key]:
                model.unproven[id(read)] = model.unproven.get(id(read), frozenset()) | checked[key]


def _proven_by_intervals(model: PolyModel, sm: StageModel, read: TensorRead) -> frozenset[int] | None:
    """The dimensions left to the kernel (the non-affine ones) when interval arithmetic over the stage's
    declared axis ranges (a superset of any schedule's instances) already proves every affine dimension
    of ``read`` inside its tensor, as for clamped or resampled indices (``min(max(y // 2 - 1 + 2 * (y %
    2), 0), 63)``) whose isl proof composes floors and modulos with the tiles of the reading stage (a
    tenth of a second each); None where isl must decide (symbolic sizes, a bounded producer, an index
    intervals cannot bound)."""
    producer = model.by_op.get(id(read.tensor.op))
    if producer is not None and producer.realized is not None:
        return None
    runtime = []
    for k, (index, extent) in enumerate(zip(read.indices, read.tensor.shape)):
        try:
            model.isl_of(index, sm.coord)
        except NotAffine:
            runtime.append(k)
            continue
        span = index_range(index)
        if not isinstance(extent, int) or span is None or span[0] < 0 or span[1] >= extent:
            return None
    return frozenset(runtime)


def _check_read(model: PolyModel, sm: StageModel, read: TensorRead, guard: tuple) -> frozenset[int]:
    """Raise BoundsError if an affine dimension of ``read`` can fall outside; return the dimensions left
    to the kernel (not affine, or kept inside only by a data-dependent condition)."""
    stmt = sm.main
    affine = []
    for k, index in enumerate(read.indices):
        try:
            model.isl_of(index, sm.coord)
            affine.append(k)
        except NotAffine:
            pass
    runtime = frozenset(range(read.tensor.ndim)) - frozenset(affine)
    if not affine:
        return runtime
    access = model.access_map(stmt, "T", read.indices, loose=True).intersect_range(
        model.tensor_domain(read.tensor, "T", runtime))
    access, exact = restrict_to_guard(model, sm, access, guard)
    access = access.intersect_params(model.context)
    box = model.tensor_domain(read.tensor, "T")
    outside = access.subtract_range(box)
    if not outside.is_empty():
        if not exact:
            return frozenset(range(read.tensor.ndim))
        raise BoundsError(_message(model, sm, read, outside))
    producer = model.by_op.get(id(read.tensor.op))
    if producer is not None and producer.realized is not None and not runtime and exact:
        beyond = access.subtract_range(producer.realized.set_tuple_name("T"))
        if not beyond.is_empty():
            text = ", ".join(repr(i) for i in read.indices)
            bound_exceeded(model, producer, beyond, f"{sm.name} (reading {read.tensor.name}[{text}])")
    return runtime


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
