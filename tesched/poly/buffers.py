"""Model phase 3: the buffer of every computed stage, and how many points each stage computes.

A root stage's buffer is its whole tensor (a kernel argument or a global intermediate). A stage computed
at a loop gets a local buffer whose shape is the footprint's box (the largest extent over all iterations
of that loop) and whose origin is the footprint's per-iteration minimum: a constant where it is one, else
an origin variable that the ``alloc`` statement sets per iteration. A stage stored outside the loop it
is computed at (``store_at``) gets the box of the union of the regions of the iterations sharing the
buffer; along a dimension where each iteration's region slides within a bounded window, the buffer is
*folded*: it keeps a power of two of slices no smaller than the window, index taken modulo that, when isl
proves that no slice is overwritten while a later read still needs it (:func:`fold_is_safe`). A stage's
``storage_align`` requests pad the strides of its buffer and ``reorder_storage`` permutes them
(intermediates and ``compute_at`` buffers only); ``fold_storage`` chooses the fold (checked by isl) instead of
the power of two.
"""
from __future__ import annotations

import islpy as isl

from tesched.errors import ScheduleError
from tesched.ir.nodes import Buffer, BufferScope, OriginVar
from tesched.poly.analysis import points_by_constant_pieces
from tesched.poly.astgen import pw_aff_to_ir
from tesched.poly.domains import bounding_box
from tesched.poly.model import PolyModel, StageModel, piece_constants
from tesched.schedule.kinds import AttachType
from tesched.te.expr import Const, Expr


def allocate_buffers(model: PolyModel) -> None:
    """Give every stage of ``model`` its buffer."""
    for st in model.schedule.stages:
        for primitive, asked in (("storage_align", st.storage_aligns), ("reorder_storage", st.storage_order),
                                 ("fold_storage", st.storage_folds)):
            if asked and st.attach_type is AttachType.INLINE:
                raise ScheduleError(f"{primitive} of {st.name}: it is inlined, so it has no buffer to lay out")
    for sm in model.stages:
        _make_buffer(model, sm)


def _lay_out(sm: StageModel) -> None:
    """Apply the stage's ``storage_align`` and ``reorder_storage`` requests to its buffer."""
    buf = sm.buffer
    aligns, order = sm.stage.storage_aligns, sm.stage.storage_order
    if buf is None or not (aligns or order):
        return
    if buf.scope is BufferScope.ARG:
        primitive = "storage_align" if aligns else "reorder_storage"
        raise ScheduleError(f"{primitive} of {sm.name}: it is a kernel argument, whose layout is the array's; "
                            "lay out a cache stage (cache_read, cache_write) or an intermediate")
    if aligns and buf.constant_shape() is None:
        raise ScheduleError(f"storage_align of {sm.name}: its buffer has symbolic extents ({buf.shape}); align "
                            "a buffer of constant shape (a stage computed at a tile loop)")
    buf.aligns, buf.order = dict(aligns), order


def _make_buffer(model: PolyModel, sm: StageModel) -> None:
    tensor = sm.tensor
    if sm.update_of is not None:     # an update definition writes its pure definition's buffer
        sm.buffer, sm.buffers = sm.update_of.buffer, []
        return
    if sm.parent is None:
        versions = [tensor] + [u.tensor for u in model.stages if u.update_of is sm]
        scope = BufferScope.ARG if any(t is v for t in model.arg_tensors for v in versions) else BufferScope.GLOBAL
        sm.buffer = Buffer(sm.name, list(tensor.shape), tensor.dtype, scope)
        _check_no_fold(sm, "it is computed at the root, where its buffer is the whole tensor")
        _lay_out(sm)
        _companions(model, sm)
        return
    fp = sm.storage if sm.hoisted else sm.footprint
    assert fp is not None, f"{sm.name} is computed at a loop but has no footprint"
    if fp.is_empty():   # never needed (a scan's update when the initial steps are all of them)
        sm.offset_pwaffs = [None] * tensor.ndim
        sm.buffer = Buffer(sm.name, [1] * tensor.ndim, tensor.dtype, BufferScope.LOCAL,
                           [Const(0, "int64")] * tensor.ndim)
        return
    if not sm.hoisted:
        _check_no_fold(sm, "it is stored where it is computed (fold a buffer that store_root or store_at "
                           "keeps across the iterations of the loops it is computed in)")
    folds = _folds(model, sm) if sm.hoisted else {}
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
        if d in folds:
            shape[-1] = folds[d]
            offsets.append(Const(0, "int64"))
            sm.offset_pwaffs.append(None)
        elif origin is not None and len(set(origin)) == 1:
            offsets.append(Const(origin[0], "int64"))
            sm.offset_pwaffs.append(None)
        else:
            offsets.append(OriginVar(f"{sm.name}.min{d}"))
            sm.offset_pwaffs.append(lo)
    sm.buffer = Buffer(sm.name, shape, tensor.dtype, BufferScope.LOCAL, offsets, folds)
    sm.origin = list(offsets)
    _lay_out(sm)
    _companions(model, sm)


def _companions(model: PolyModel, sm: StageModel) -> None:
    """One buffer per output of the stage: the outputs of a multi-output compute have one shape and one
    region, so the others copy the first buffer's shape and fold and share its origin (``buffers``)."""
    first = sm.buffer
    assert first is not None
    sm.buffers = [first]
    for t in [sm.op.output(k) for k in range(1, sm.op.num_outputs)]:
        scope = first.scope
        if scope is not BufferScope.LOCAL:
            scope = BufferScope.ARG if any(a is t for a in model.arg_tensors) else BufferScope.GLOBAL
        buf = Buffer(f"{sm.name}.v{t.value_index}", list(first.shape), t.dtype, scope, folds=first.folds,
                     aligns=first.aligns if scope is not BufferScope.ARG else None,
                     order=first.order if scope is not BufferScope.ARG else None)
        buf.offsets = first.offsets
        sm.buffers.append(buf)


def _largest(size: isl.PwAff) -> int | None:
    """The largest value of a piecewise constant-bounded extent, or None if it is not constant."""
    constants = piece_constants(size.as_map().range().dim_max(0))
    return None if constants is None else max(constants)


def _folds(model: PolyModel, sm: StageModel) -> dict[int, int]:
    """The one dimension (the outermost that can be) along which a hoisted buffer is folded, with its
    fold: the smallest power of two at least the per-iteration window that isl proves safe and that is
    smaller than the storage's extent (for a symbolic extent, that smallest power of two if it is safe
    for every size); empty when no dimension can be folded."""
    fp, storage = sm.footprint, sm.storage
    assert fp is not None and storage is not None
    if sm.stage.storage_folds:
        return _requested_fold(model, sm)
    for d in range(sm.tensor.ndim):
        window = _largest(fp.dim_max(d).sub(fp.dim_min(d)).add_constant_val(isl.Val(1)))
        extent = _largest(storage.dim_max(d).sub(storage.dim_min(d)).add_constant_val(isl.Val(1)))
        if window is None:
            continue
        fold = 1 << max(window - 1, 0).bit_length()
        if extent is None:              # a symbolic extent: a constant-size buffer if the smallest fold is safe
            if fold_is_safe(model, sm, d, fold):
                return {d: fold}
            continue
        while fold < extent:
            if fold_is_safe(model, sm, d, fold):
                return {d: fold}
            fold *= 2
    return {}


def _check_no_fold(sm: StageModel, why: str) -> None:
    if sm.stage.storage_folds:
        raise ScheduleError(f"fold_storage of {sm.name}: {why}")


def _requested_fold(model: PolyModel, sm: StageModel) -> dict[int, int]:
    """The fold ``fold_storage`` asked for, once isl proves it safe; else an error naming the smallest safe
    fold along that dimension."""
    [(dim, fold)] = sm.stage.storage_folds.items()
    fp, storage = sm.footprint, sm.storage
    assert fp is not None and storage is not None
    axis = sm.stage.op.axis[dim].name
    extent = _largest(storage.dim_max(dim).sub(storage.dim_min(dim)).add_constant_val(isl.Val(1)))
    if extent is not None and fold >= extent:
        return {}       # as many slices as the storage has: nothing to fold
    if fold_is_safe(model, sm, dim, fold):
        return {dim: fold}
    window = _largest(fp.dim_max(dim).sub(fp.dim_min(dim)).add_constant_val(isl.Val(1))) or 1
    limit = extent if extent is not None else max(2 * fold, window) * 4
    safe = next((f for f in range(max(window, fold + 1), limit) if fold_is_safe(model, sm, dim, f)), None)
    hint = f"the smallest safe fold is {safe}" if safe is not None else "no fold smaller than the storage is safe"
    raise ScheduleError(f"fold_storage of {sm.name}.{axis} by {fold}: a slot would be overwritten while a later "
                        f"iteration still reads it ({hint})")


def fold_is_safe(model: PolyModel, sm: StageModel, dim: int, fold: int) -> bool:
    """Whether indexing ``sm``'s hoisted buffer modulo ``fold`` along ``dim`` keeps every value until its
    last read: no element ``e'`` sharing a slot with a live element ``e`` is computed in an iteration
    where ``e`` is live (computed in that or an earlier iteration, read in that or a later one; iterations
    of the loops between the storage and the computation, within one buffer)."""
    fp, new = sm.footprint, sm.computed
    assert fp is not None and new is not None
    space = fp.domain().get_space()
    before, after = isl.Map.lex_le(space), isl.Map.lex_ge(space)
    for d in range(sm.store_len):
        before = before.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
        after = after.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
    live = fp.reverse().apply_range(after).intersect(new.reverse().apply_range(before))
    rank = sm.tensor.ndim
    xs, ys = [f"x{k}" for k in range(rank)], [f"y{k}" for k in range(rank)]
    same = " and ".join([f"y{k} = x{k}" for k in range(rank) if k != dim]
                        + [f"exists (q : y{dim} = x{dim} + {fold} * q)", f"y{dim} != x{dim}"])
    tag = fp.get_tuple_name(isl.dim_type.out)
    slot = isl.Map(f"{model.param_prefix}{{ {tag}[{', '.join(xs)}] -> {tag}[{', '.join(ys)}] : {same} }}")
    clash = slot.apply_range(new.reverse())
    return clash.intersect(live).is_empty()



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
    if sm.hoisted and sm.computed is not None:   # a sliding window: what earlier iterations did not compute
        fp = sm.computed
        tdom = model.tensor_domain(sm.tensor, sm.tag)
        if not bounding_box(model, fp, tdom).is_equal(fp):
            return int(fp.wrap().count_val().to_python())
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

