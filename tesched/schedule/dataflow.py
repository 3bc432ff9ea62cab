"""Schedule primitives that rewrite the dataflow: ``cache_read``, ``cache_write`` and ``rfactor``.

Each adds a stage and gives the affected stage a new operation, with TVM's semantics:

- ``cache_read(T, scope, readers)``: a copy ``T.scope[i] = T[i]`` that the given readers read instead of T
  (array packing when the copy is computed at a loop of the reader).
- ``cache_write(T, scope)``: T's computation moves to ``T.scope`` (fresh axes); T becomes the copy
  ``T[i] = T.scope[i]`` and keeps the axes users already hold (a write cache / register tile). Loops of T
  already split, fused, reordered or annotated move with the computation, as in TVM: ``T.scope`` gets
  those loops (the loop variables users hold now name its loops) and T starts again from its bare axes,
  keeping its placement.
- ``rfactor(T, axis)``: for a reduction whose reduce loops were split, the reduce loop ``axis`` becomes a
  data-parallel axis of a new stage ``T.rf`` that reduces over the remaining reduce loops; T then reduces
  ``T.rf`` over that axis. This lets the partial reductions run in parallel or vectorized. Of a scatter
  (``ts.scatter``), ``T.rf`` is a scatter of partial results, one per iteration of ``axis`` (which indexes
  them), so its loop ``axis`` may run in parallel without atomics; T becomes their reduction.

Operations users declared are never modified: a stage points to its new operation, and the schedule maps
both the old and the new operation to the stage.
"""
from __future__ import annotations

from typing import Sequence

from tesched.errors import ScheduleError
from tesched.schedule.stage import Fuse, Relation, Split, Stage, StageGraph
from tesched.te.expr import BinOp, Binary, Expr, Select, Var, as_expr
from tesched.te.extern_op import ExternOp
from tesched.te.reduction import MultiValue, Reduce, remapped_reducer
from tesched.te.scan import ScanOp
from tesched.te.scatter import Scatter, ScatterOp
from tesched.te.tensor import ComputeOp, IterType, IterVar, Range, Tensor, TensorRead
from tesched.te.visit import rewrite, substitute


def _new_axes(axes: Sequence[IterVar], outer: dict | None = None) -> list[IterVar]:
    """Fresh copies of ``axes``; bounds that use other axes (``reduce_axis((0, i + 1))``) are rewritten
    through ``outer``, the old axes' replacements."""
    def bound(e: int | Expr) -> int | Expr:
        return e if outer is None or not isinstance(e, Expr) else substitute(e, outer)
    return [IterVar(Range(bound(a.range.min), bound(a.range.extent)), a.name, a.iter_type) for a in axes]


def _with_reads_of(body: Expr, sch: StageGraph, source: Stage, replacement: Tensor, value_index: int = 0) -> Expr:
    def swap(e: Expr) -> Expr | None:
        if isinstance(e, TensorRead) and sch.stage_of_tensor(e.tensor) is source and e.tensor.value_index == value_index:
            return TensorRead(replacement, tuple(rewrite(i, swap) for i in e.indices))
        return None
    return rewrite(body, swap)


def _rebuild_reduce(body: Reduce, mapping: dict, axes: Sequence[IterVar], extra_where: Expr | None = None,
                    keep_init: bool = True) -> Reduce:
    sources = tuple(substitute(s, mapping) for s in body.sources)
    where = None if body.where is None else substitute(body.where, mapping)
    if extra_where is not None:
        where = extra_where if where is None else Binary(BinOp.AND, where, extra_where, "bool")
    inits = None if body.inits is None or not keep_init else [substitute(i, mapping) for i in body.inits]
    return Reduce(body.combiner, sources, axes, where, inits, remapped_reducer(body, mapping))


def _computation(stage: Stage, primitive: str) -> ComputeOp:
    if not isinstance(stage.op, ComputeOp):
        raise ScheduleError(f"{primitive} of {stage.name}: it is an input (placeholder), not a computation")
    if isinstance(stage.op, ExternOp):
        raise ScheduleError(f"{primitive} of {stage.name}: it is an extern stage, computed by one call of C function "
                            f"{stage.op.function}, which no other stage can take over")
    return stage.op


def _move_loops(stage: Stage, cache: Stage, mapping: dict[IterVar, IterVar], sch: StageGraph) -> None:
    """Give ``cache`` the loops ``stage`` has (its splits, fuses, order and loop kinds, re-applied to the
    cache's own axes through ``mapping``) and give ``stage`` back its bare axes, as TVM's ``cache_write``
    does. The loop variables users hold (``i.outer``...) now name loops of the cache; stages computed at
    a loop of ``stage`` are computed at the same loop of the cache, which now does the reading."""
    def m(v: IterVar) -> IterVar:
        return mapping.get(v, v)

    relations: list[Relation] = []
    for rel in stage.relations:
        if isinstance(rel, Split):
            relations.append(Split(m(rel.parent), rel.outer, rel.inner, rel.factor, rel.nparts))
        elif isinstance(rel, Fuse):
            relations.append(Fuse(m(rel.outer), m(rel.inner), rel.fused))
        else:
            relations.append(rel)
    cache.relations = relations
    cache.leaf_iter_vars = [m(v) for v in stage.leaf_iter_vars]
    cache.all_iter_vars = [m(v) for v in stage.all_iter_vars]
    cache.iter_var_attrs = {m(v): kind for v, kind in stage.iter_var_attrs.items()}
    cache.loop_origins = {m(v): origin for v, origin in stage.loop_origins.items()}
    cache.pragmas = {m(v): hints for v, hints in stage.pragmas.items()}
    cache.thread_bindings = {m(v): axis for v, axis in stage.thread_bindings.items()}
    cache.prefetches = [(t, m(v), off) for t, v, off in stage.prefetches]
    for other in sch.stages:
        if other.attach_stage is stage and other.attach_ivar is not None \
                and any(other.attach_ivar is v for v in cache.all_iter_vars + list(mapping)):
            other.attach_stage, other.attach_ivar = cache, m(other.attach_ivar)
    axes = list(stage.op.axis) if isinstance(stage.op, ComputeOp) else []
    stage.all_iter_vars, stage.leaf_iter_vars = list(axes), list(axes)
    stage.relations, stage.iter_var_attrs, stage.loop_origins, stage.pragmas = [], {}, {}, {}
    stage.prefetches, stage.thread_bindings = [], {}


def cache_read(sch: StageGraph, tensor: Tensor, scope: str, readers: Sequence) -> Tensor:
    source = sch[tensor]
    _check_scope(scope, "cache_read", source.name)
    if not readers:
        raise ScheduleError(f"cache_read of {source.name}: give at least one reader")
    reader_stages = [sch[r] for r in readers]
    for r in reader_stages:
        if source not in sch.producers(r):
            raise ScheduleError(f"cache_read of {source.name}: {r.name} does not read it")
        if isinstance(r.op, ExternOp):
            raise ScheduleError(f"cache_read of {source.name}: {r.name} is an extern stage, whose C function "
                                f"{r.op.function} reads the whole of {source.name} itself; cache other readers")
    t = source.op.output(tensor.value_index if tensor.value_index < source.op.num_outputs else 0)
    axes = [IterVar(Range(0, ext), f"ax{k}", IterType.DATA_PAR) for k, ext in enumerate(t.shape)]
    cache_op = ComputeOp(f"{t.name}.{scope}", "cache_read", axes, TensorRead(t, tuple(axes)), None)
    cache = cache_op.output(0)
    for r in reader_stages:
        op = r.op
        assert isinstance(op, ComputeOp)  # it reads a tensor
        r.replace_op(ComputeOp(op.name, op.tag, op.axis, _with_reads_of(op.body, sch, source, cache, t.value_index),
                               op.attrs))
    sch.insert_stage(cache_op, after=source).memory_scope = scope
    return cache


def _check_scope(scope: object, primitive: str, name: str) -> str:
    if not isinstance(scope, str) or not scope:
        raise ScheduleError(f"{primitive} of {name}: scope must be a non-empty str such as \"local\", "
                            f"got {scope!r}")
    return scope


def cache_write(sch: StageGraph, tensor: Tensor | Sequence[Tensor], scope: str) -> Tensor | tuple[Tensor, ...]:
    """Move ``tensor``'s computation to a new stage (see the module docstring). The outputs of a
    multi-output compute are cached together, given as a list of all of them (TVM's
    ``s.cache_write([C1, C2], scope)``); the cache's outputs are returned in the same order."""
    items: list[object] = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
    tensors = [x for x in items if isinstance(x, Tensor)]
    if not items or len(tensors) != len(items):
        raise ScheduleError(f"cache_write: expected a tensor or a list of the outputs of one compute, got {tensor!r}")
    stage = sch[tensors[0]]
    op = _computation(stage, "cache_write")
    if isinstance(op, (ScatterOp, ScanOp)):
        kind = "scatter" if isinstance(op, ScatterOp) else "scan"
        raise ScheduleError(f"cache_write of {stage.name}: it is a {kind}, whose computation cannot move to "
                            "another stage; cache its readers' reads instead (cache_read)")
    _check_scope(scope, "cache_write", stage.name)
    given = [x.value_index for x in tensors] if all(sch[x] is stage for x in tensors) else None
    if given != list(range(op.num_outputs)):
        raise ScheduleError(f"cache_write of {stage.name}: it has {op.num_outputs} outputs; give all of them, in "
                            f"order, as one list (s.cache_write([{', '.join(f'{op.name}[{k}]' for k in range(op.num_outputs))}"
                            f"], scope))" if op.num_outputs > 1 else
                            f"cache_write of {stage.name}: the tensors given are not the outputs of {stage.name}")
    if stage.tensorize_spec is not None:
        raise ScheduleError(f"cache_write of {stage.name}: it is tensorized at loop {stage.tensorize_spec[0].name}; "
                            "apply cache_write first and tensorize the cache stage")
    axes = _new_axes(op.axis)
    raxes = _new_axes(op.reduce_axis, dict(zip(op.axis, axes)))
    mapping = dict(zip(op.axis + op.reduce_axis, axes + raxes))
    body = _rebuild_reduce(op.body, mapping, raxes) if isinstance(op.body, Reduce) else substitute(op.body, mapping)
    cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, axes, body, op.attrs)
    copies = [TensorRead(cache_op.output(k), tuple(op.axis)) for k in range(op.num_outputs)]
    stage.replace_op(ComputeOp(op.name, op.tag, op.axis, copies[0] if len(copies) == 1 else MultiValue(copies),
                               op.attrs))
    cache = sch.insert_stage(cache_op, before=stage)
    cache.memory_scope = scope
    _move_loops(stage, cache, mapping, sch)
    if isinstance(tensor, (list, tuple)):
        return tuple(cache_op.output(k) for k in range(op.num_outputs))
    return cache_op.output(0)


def _lower(v: IterVar) -> int | Expr:
    return 0 if v.dom is None else v.dom.min


def _extent_exprs(stage: Stage) -> dict[int, int | Expr | None]:
    """Trip count of every loop variable by ``id``, as an int or an expression of the sizes (a split of a
    symbolic extent ``n`` by ``f`` has ``(n + f - 1) // f`` outer iterations); None where it is not an
    affine expression (a fused symbolic loop, an ``nparts`` split of a symbolic size)."""
    out: dict[int, int | Expr | None] = {id(v): v.dom.extent for v in stage.all_iter_vars if v.dom is not None}
    for rel in stage.relations:
        if isinstance(rel, Split):
            parent = out[id(rel.parent)]
            factor = rel.factor if rel.factor is not None else (
                -(-parent // rel.parts) if isinstance(parent, int) else None)
            if parent is None or factor is None:
                out[id(rel.outer)] = out[id(rel.inner)] = None
            elif isinstance(parent, int):
                out[id(rel.outer)], out[id(rel.inner)] = -(-parent // factor), min(factor, parent)
            else:
                out[id(rel.outer)], out[id(rel.inner)] = (parent + (factor - 1)) // factor, factor
        elif isinstance(rel, Fuse):
            o, i = out[id(rel.outer)], out[id(rel.inner)]
            out[id(rel.fused)] = o * i if isinstance(o, int) and isinstance(i, int) else None
        else:
            out[id(rel.iter_var)] = 1
    return out


def rfactor(sch: StageGraph, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor | list[Tensor]:
    """The partial stage ``T.rf`` of reduction ``tensor`` over loop ``axis`` (see the module docstring): its
    output, or, of a tuple reduction (argmax), the list of its outputs, one partial per component (TVM's
    return value); ``T`` then combines every component's partials."""
    stage = sch[tensor]
    op = _computation(stage, "rfactor")
    if not isinstance(op.body, Reduce):
        raise ScheduleError(f"rfactor of {stage.name}: it is not a reduction")
    if axis not in stage.leaf_iter_vars or axis.iter_type != IterType.COMM_REDUCE:
        raise ScheduleError(f"rfactor of {stage.name}: {getattr(axis, 'name', axis)!r} is not one of its current "
                            f"reduction loops ({', '.join(v.name for v in stage.leaf_iter_vars if v.iter_type == IterType.COMM_REDUCE)})")
    mixed = [v.name for v in stage.leaf_iter_vars if stage.mixes_reduction(v)]
    if mixed:
        raise ScheduleError(f"rfactor of {stage.name}: loop {mixed[0]} fuses data-parallel and reduction loops; "
                            "rfactor needs reduction loops that only reduce")
    if isinstance(factor_axis, bool) or not isinstance(factor_axis, int) or not 0 <= factor_axis <= len(op.axis):
        raise ScheduleError(f"rfactor of {stage.name}: factor_axis must be an int in [0, {len(op.axis)}], got "
                            f"{factor_axis!r}")
    reduce_leaves = [v for v in stage.leaf_iter_vars if v.iter_type == IterType.COMM_REDUCE]
    extent = _extent_exprs(stage)
    unknown = [v.name for v in reduce_leaves if extent[id(v)] is None]
    if unknown:
        raise ScheduleError(f"rfactor of {stage.name}: the extent of reduce loop {unknown[0]} is not an expression "
                            "of the sizes (a fuse or an nparts split of a symbolic size); split with factor=")
    size: dict[int, int | Expr] = {}
    for v in reduce_leaves:
        ext = extent[id(v)]
        assert ext is not None      # refused above
        size[id(v)] = ext
    scatter = isinstance(op, ScatterOp)
    # a scatter's factor loop stays one of its points (its loops are its points) but indexes the partial
    # results, so the dependence check lets it run in parallel
    spatial = IterVar(Range(0, size[id(axis)]), axis.name, IterType.COMM_REDUCE if scatter else IterType.DATA_PAR)
    others = [v for v in reduce_leaves if v is not axis]
    # a leaf that is an axis the user declared keeps its lower bound (reduce_axis((5, 10)) stays 5..9);
    # leaves made by split or fuse start at 0 and root_values adds their parent's lower bound
    kept = [IterVar(Range(_lower(v), size[id(v)]), v.name, IterType.COMM_REDUCE) for v in others]
    low = _lower(axis)
    leaf_map: dict[int, Expr] = {id(axis): spatial if isinstance(low, int) and low == 0 else spatial + low}
    leaf_map.update({id(v): k for v, k in zip(others, kept)})
    value = stage.root_values(leaf_map)
    new_axes = _new_axes(op.axis)
    mapping: dict[Var, Expr] = dict(zip(op.axis, new_axes))
    bounds = None
    for r in op.reduce_axis:
        mapping[r] = value[id(r)]
        covered: int | Expr = 1
        derived = set(map(id, stage.descendants(r)))
        for v in reduce_leaves:
            if id(v) in derived:
                covered = covered * size[id(v)]
        exact = [v for v in reduce_leaves if id(v) in derived] == [r] or (
            isinstance(covered, int) and covered == extent[id(r)])
        if not exact:  # a split that does not divide (or may not, for a symbolic size): guard the padding
            lo, ext = r.range.min, r.range.extent
            cond = value[id(r)] < (lo + ext if isinstance(lo, int) else as_expr(lo) + ext)
            bounds = cond if bounds is None else Binary(BinOp.AND, bounds, cond, "bool")
    rf_axes = new_axes[:factor_axis] + [spatial] + new_axes[factor_axis:]
    partial = _rebuild_reduce(op.body, mapping, kept, bounds, keep_init=False)   # init: once, in the final stage
    rf_body: Expr = partial
    if scatter:
        assert isinstance(op.body, Scatter)
        at = [substitute(i, mapping) for i in op.body.index]
        rf_body = Scatter(partial.combiner, partial.source, [spatial] + kept, partial.where,
                          at[:factor_axis] + [spatial] + at[factor_axis:])
        rf_axes = new_axes[:factor_axis] + [IterVar(Range(0, size[id(axis)]), f"{axis.name}.v", IterType.DATA_PAR)] \
            + new_axes[factor_axis:]
    elif not kept:  # every reduce loop became data parallel: no reduction left in T.rf
        values = [s if partial.where is None else Select(partial.where, s, start)
                  for s, start in zip(partial.sources, partial.identities())]
        rf_body = values[0] if len(values) == 1 else MultiValue(values)
    rf_op = (ScatterOp if scatter else ComputeOp)(f"{op.name}.rf", op.tag, rf_axes, rf_body, op.attrs)
    kr = IterVar(Range(0, size[id(axis)]), f"{axis.name}.v", IterType.COMM_REDUCE)
    index = tuple(list(op.axis[:factor_axis]) + [kr] + list(op.axis[factor_axis:]))
    reads = tuple(TensorRead(rf_op.output(k), index) for k in range(rf_op.num_outputs))
    stage.replace_op(ComputeOp(op.name, op.tag, op.axis, Reduce(op.body.combiner, reads, [kr], None, op.body.inits,
                                                                op.body.reducer), op.attrs))
    reduce_vars = {id(v) for v in stage.all_iter_vars if v.iter_type == IterType.COMM_REDUCE}
    stage.relations = [rel for rel in stage.relations
                       if not any(id(v) in reduce_vars for v in vars(rel).values() if isinstance(v, IterVar))]
    spatial_leaves = list(op.axis) if scatter else [v for v in stage.leaf_iter_vars if id(v) not in reduce_vars]
    stage.leaf_iter_vars = spatial_leaves + [kr]     # a scatter becomes the reduction of its partial results
    stage.all_iter_vars = (list(op.axis) if scatter else
                           [v for v in stage.all_iter_vars if id(v) not in reduce_vars]) + [kr]
    stage.atomic_updates = False
    stage.iter_var_attrs = {v: k for v, k in stage.iter_var_attrs.items() if id(v) not in reduce_vars}
    stage.pragmas = {v: k for v, k in stage.pragmas.items() if id(v) not in reduce_vars}
    stage.prefetches = [p for p in stage.prefetches if id(p[1]) not in reduce_vars]
    sch.insert_stage(rf_op, before=stage)
    return rf_op.output(0) if rf_op.num_outputs == 1 else [rf_op.output(k) for k in range(rf_op.num_outputs)]
