"""Model phase 3: the buffer of every computed stage, and how many points each stage computes.

A root stage's buffer is its whole tensor (a kernel argument or a global intermediate). A stage computed
at a loop gets a local buffer whose shape is the footprint's box (the largest extent over all iterations
of that loop) and whose origin is the footprint's per-iteration minimum: a constant where it is one, else
an origin variable that the ``alloc`` statement sets per iteration.
"""
from __future__ import annotations

import islpy as isl

from tesched.ir.nodes import Buffer, BufferScope, OriginVar
from tesched.poly.analysis import points_by_constant_pieces
from tesched.poly.astgen import pw_aff_to_ir
from tesched.poly.model import PolyModel, StageModel, piece_constants
from tesched.te.expr import Const, Expr


def allocate_buffers(model: PolyModel) -> None:
    """Give every stage of ``model`` its buffer."""
    for sm in model.stages:
        _make_buffer(model, sm)


def _make_buffer(model: PolyModel, sm: StageModel) -> None:
    tensor = sm.tensor
    if sm.parent is None:
        scope = BufferScope.ARG if any(t is tensor for t in model.arg_tensors) else BufferScope.GLOBAL
        sm.buffer = Buffer(sm.name, list(tensor.shape), tensor.dtype, scope)
        return
    fp = sm.footprint
    assert fp is not None, f"{sm.name} is computed at a loop but has no footprint"
    if fp.is_empty():   # never needed (a scan's update when the initial steps are all of them)
        sm.offset_pwaffs = [None] * tensor.ndim
        sm.buffer = Buffer(sm.name, [1] * tensor.ndim, tensor.dtype, BufferScope.LOCAL,
                           [Const(0, "int64")] * tensor.ndim)
        return
    shape: list[int | Expr] = []
    offsets: list[Expr] = []
    for d in range(tensor.ndim):
        lo, hi = fp.dim_min(d), fp.dim_max(d)
        size = hi.sub(lo).add_constant_val(isl.Val(1))
        biggest = size.as_map().range().dim_max(0)
        constants = piece_constants(biggest)
        if constants is not None:
            shape.append(max(constants))
        else:
            shape.append(pw_aff_to_ir(biggest, model.context, model.param_env))
        origin = piece_constants(lo)
        if origin is not None and len(set(origin)) == 1:
            offsets.append(Const(origin[0], "int64"))
            sm.offset_pwaffs.append(None)
        else:
            offsets.append(OriginVar(f"{sm.name}.min{d}"))
            sm.offset_pwaffs.append(lo)
    sm.buffer = Buffer(sm.name, shape, tensor.dtype, BufferScope.LOCAL, offsets)


def computed_points(model: PolyModel, sm: StageModel) -> int | None:
    """How many points of ``sm`` the schedule computes (halo recompute included), or None when the
    sizes are symbolic. Counted per distinct box size: tiles with equal boxes are counted by isl."""
    if model.params:
        return None
    size = 1
    for d in sm.tensor.shape:
        size *= int(d)
    if sm.footprint is None:
        return size
    fp = sm.footprint
    sizes = [fp.dim_max(d).sub(fp.dim_min(d)).add_constant_val(isl.Val(1)) for d in range(sm.tensor.ndim)]
    total = points_by_constant_pieces(fp, sizes)
    if total is None:
        return int(sm.statements[0].domain.count_val().to_python()) if sm.init is not None or \
            not sm.raxes else None
    return total


def redundancy(model: PolyModel) -> dict[str, float]:
    """Points computed / points in the tensor, for every stage computed inside another."""
    out = {}
    for sm in model.stages:
        if sm.parent is not None and sm.absorbed_by is None:
            points = computed_points(model, sm)
            if points is not None:
                size = 1
                for d in sm.tensor.shape:
                    size *= int(d)
                out[sm.name] = points / size
    return out

