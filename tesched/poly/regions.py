"""Bounds inference: the region each compute declared without a shape must compute (Halide's).

A compute declared with ``shape=None`` (:mod:`tesched.te.inferred`) is defined everywhere; the region it
computes is the bounding box of every element its readers read, over the readers' own regions (their
shapes, or their inferred regions), taken from the outputs back to the inputs. With isl: each read is an
access relation from the reader's instances (its axes, then its reduce axes, under the affine conditions
of ``if_then_else``/``where`` around the read) to the element read; the union of their images is the
footprint, and its per-dimension minimum and maximum, as functions of the size variables, give the
region ``[min, max + 1)`` (over symbolic sizes, the ``min``/``max`` of the pieces isl finds, so a shape
stays affine). A Func with update definitions also covers what they touch: their pure axes run over the
readers' footprint along their dimensions, their reduce axes over their own ranges. A data-dependent index
counts the range of its values (:mod:`tesched.arith.value_range`: a clamped lookup); one whose values are
unbounded, or an unbounded footprint, has no region: a :class:`LoweringError` names the stage and the
read. :func:`realize_outputs` runs the inference and rebuilds the pipeline (:mod:`tesched.te.realize`)
for a new schedule; it builds no loop.
"""
from __future__ import annotations

import math
from typing import Iterator, Sequence

import islpy as isl

from tesched.arith.value_range import value_range
from tesched.errors import LoweringError
from tesched.poly.affine import NotAffine, condition_to_isl, to_isl
from tesched.poly.astgen import pw_aff_to_ir
from tesched.poly.guards import reads_with_guards
from tesched.poly.isl_lock import ISL_LOCK
from tesched.poly.model import piece_constants
from tesched.schedule.schedule import dependence_order
from tesched.te.expr import BinOp, Binary, Expr, Param, Var, as_expr
from tesched.te.functions import maximum, minimum
from tesched.te.inferred import InferredOp
from tesched.te.realize import Region, realize
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, TensorRead
from tesched.te.update import UpdateOp
from tesched.te.visit import rewrite, walk


def realize_outputs(outputs: Sequence[Operation]) -> list[tuple[Operation, Operation]]:
    """Every inferred compute the outputs depend on and every operation reading one, each with its rebuilt
    operation; empty when there is none."""
    order = dependence_order(outputs)
    if not any(isinstance(op, InferredOp) for op in order):
        return []
    for op in outputs:
        if isinstance(op, InferredOp):
            raise LoweringError(f"compute {op.name} is an output but was declared without a shape: outputs carry "
                                f"their sizes (Halide's realize); give {op.name} a shape")
    with ISL_LOCK:
        regions = _Inference(order).regions()
    rebuilt = realize(order, regions)
    return [(op, rebuilt[id(op)]) for op in order if id(op) in rebuilt]


class _Inference:
    """The regions of the inferred computes of ``order`` (inputs first), readers before producers."""

    def __init__(self, order: list[Operation]):
        self.order = order
        sizes: dict[int, Var] = {}
        for op in order:
            exprs = [b for r in op.reduce_axis for b in (r.range.min, r.range.extent)]
            exprs += [op.body] if isinstance(op, ComputeOp) else []
            if not isinstance(op.base if isinstance(op, UpdateOp) else op, InferredOp):   # no placeholder extents
                exprs += [d for k in range(op.num_outputs) for d in op.output(k).shape]
            for e in exprs:
                if isinstance(e, Expr):
                    sizes.update((id(v), v) for v in walk(e)
                                 if isinstance(v, Var) and not isinstance(v, (IterVar, Param)))
        self.names = {key: f"p{k}" for k, key in enumerate(sizes)}
        self.env: dict[str, Expr] = {self.names[key]: v for key, v in sizes.items()}
        self.prefix = f"[{', '.join(self.names.values())}] -> " if sizes else ""
        self.context = isl.Set(self.prefix + "{ : " + (" and ".join(f"{n} > 0" for n in self.names.values())
                                                          or "true") + " }")
        self.boxes: dict[int, isl.Set] = {}     # the region of each inferred compute, as a box
        self.numeric: dict[int, Region] = {}

    def regions(self) -> dict[int, Region]:
        """The region of every inferred compute and of each of its update definitions (the same)."""
        out: dict[int, Region] = {}
        for op in reversed(self.order):
            if isinstance(op, InferredOp):
                updates = [u for u in self.order if isinstance(u, UpdateOp) and u.base is op]
                out[id(op)] = self._region(op, updates)
                out.update((id(u), out[id(op)]) for u in updates)
        return out

    def _region(self, op: InferredOp, updates: list[UpdateOp]) -> Region:
        """The box of what the readers of ``op`` (of its latest version) read, and, with update definitions
        (Halide's), of what those touch (their pure axes over that box, their reduce axes over theirs)."""
        group = {id(op)} | {id(u) for u in updates}
        footprint: isl.Set | None = None
        for reader in self.order:
            if not isinstance(reader, ComputeOp) or id(reader) in group:
                continue
            for read, guard in _reads_of(reader, group, op.name):
                part = self._image(reader, read, guard)
                footprint = part if footprint is None else footprint.union(part)
        if footprint is None or footprint.is_empty():
            raise LoweringError(f"compute {op.name} was declared without a shape, but no stage of these outputs "
                                "reads it anywhere, so its region cannot be inferred; give it a shape")
        box, region = self._box(op, footprint)
        for u in updates:
            dims = [next(d for d, i in enumerate(u.body.index) if i is a) for a in u.axis]
            pure = box
            for d in reversed(range(len(op.axis))):
                if d not in dims:
                    pure = pure.project_out(isl.dim_type.set, d, 1)
            self.boxes[id(u)], self.numeric[id(u)] = pure, [region[d] for d in dims]
            for read, guard in [(u.target(), ()), *_reads_of(u, group, op.name)]:
                footprint = footprint.union(self._image(u, read, guard))
        return self._box(op, footprint)[1] if updates else region

    def _box(self, op: InferredOp, footprint: isl.Set) -> tuple[isl.Set, Region]:
        """The bounding box of a footprint of ``op``, as a set and as its region (also recorded for the
        readers of ``op``)."""
        footprint = footprint.coalesce()
        if not footprint.is_bounded():
            raise LoweringError(f"compute {op.name}: its readers read an unbounded region of it "
                                f"({footprint}), so its region cannot be inferred; bound the reads or give it a shape")
        n = len(op.axis)
        box = isl.Set.universe(footprint.get_space())
        region: Region = []
        for d in range(n):
            (lo, low), (hi, high) = self._bound(footprint.dim_min(d), False), self._bound(footprint.dim_max(d), True)
            region.append((low, high - low + 1 if isinstance(low, int) and isinstance(high, int) else
                           as_expr(high, "int64") - low + 1))
            axis = isl.PwAff.from_aff(isl.Aff.var_on_domain(isl.LocalSpace.from_space(box.get_space()),
                                                            isl.dim_type.set, d))
            box = box.intersect(axis.ge_set(lo.insert_dims(isl.dim_type.in_, 0, n))).intersect(
                axis.le_set(hi.insert_dims(isl.dim_type.in_, 0, n)))
        self.boxes[id(op)], self.numeric[id(op)] = box, region
        return box, region

    def _bound(self, pa: isl.PwAff, upper: bool) -> tuple[isl.PwAff, int | Expr]:
        """A bound of a footprint's minimum (or maximum, ``upper``) over every size, as isl and as an
        expression: the minimum (maximum) of its pieces' affine functions, so an affine expression or a
        ``min``/``max`` of them (a shape isl can read), never a ``select`` between pieces. It is the exact
        minimum where the pieces agree on which is smallest; at worst a few more points are computed."""
        whole: isl.PwAff | None = None
        values: dict[str, int | Expr] = {}
        for _, aff in pa.gist_params(self.context).get_pieces():
            part = isl.PwAff.from_aff(aff)
            whole = part if whole is None else whole.max(part) if upper else whole.min(part)
            constants = piece_constants(part)
            value = constants[0] if constants is not None else _floors(pw_aff_to_ir(part, self.context, self.env))
            values.setdefault(str(value), value)
        assert whole is not None, "a non-empty footprint has bounds"
        ints = [v for v in values.values() if isinstance(v, int)]
        terms: list[int | Expr] = [v for v in values.values() if not isinstance(v, int)]
        if ints:
            terms.append(max(ints) if upper else min(ints))
        out = terms[0]
        for t in terms[1:]:
            out = maximum(out, t) if upper else minimum(out, t)
        return whole, out

    def _image(self, reader: ComputeOp, read: TensorRead, guard: tuple) -> isl.Set:
        """The elements ``read`` reads over the reader's region, where the affine conditions of ``guard`` hold."""
        loops = list(reader.axis) + list(reader.reduce_axis)
        coords = [f"c{k}" for k in range(len(loops))]
        names = dict(self.names)
        names.update((id(a), c) for a, c in zip(loops, coords))
        inferred = id(reader) in self.boxes
        conds = []
        try:
            for a, c in zip(loops, coords):
                if not (inferred and a.iter_type is IterType.DATA_PAR):
                    lo, ext = to_isl(a.range.min, names), to_isl(a.range.extent, names)
                    conds.append(f"{lo} <= {c} < ({lo}) + ({ext})")
        except NotAffine as err:
            raise LoweringError(f"stage {reader.name}: a bound of its loops is not affine ({err}), so the region "
                                f"it reads of {read.tensor.name} cannot be inferred") from None
        for cond, holds in guard:
            try:
                text = condition_to_isl(cond, names)
            except NotAffine:
                continue        # a data-dependent condition: the read may run anywhere (a superset)
            conds.append(text if holds else f"not {text}")
        index = []
        for k, i in enumerate(read.indices):
            try:
                index.append(to_isl(i, names))
            except NotAffine:       # a data-dependent index: the range of its values, if they are bounded
                low, high = value_range(i, self._loop_ranges(reader, loops))
                if math.isinf(low) or math.isinf(high):
                    raise LoweringError(self._unbounded(reader, read, i)) from None
                index.append(f"v{k}")
                conds.append(f"{math.floor(low)} <= v{k} <= {math.ceil(high)}")
        where = " and ".join(conds) or "true"
        rel = isl.Map(f"{self.prefix}{{ [{', '.join(coords)}] -> [{', '.join(index)}] : {where} }}")
        if inferred:
            rcoords = ", ".join(coords[len(reader.axis):])
            rel = rel.intersect_domain(self.boxes[id(reader)].flat_product(isl.Set(f"{self.prefix}{{ [{rcoords}] }}")))
        return rel.range()

    def _loop_ranges(self, reader: ComputeOp, loops: list[IterVar]) -> dict[int, tuple[float, float]]:
        """The constant ranges of the reader's loops (its region's, for an inferred reader)."""
        out: dict[int, tuple[float, float]] = {}
        region = self.numeric.get(id(reader))
        for k, a in enumerate(loops):
            lo, ext = region[k] if region is not None and k < len(region) else (a.range.min, a.range.extent)
            if isinstance(lo, int) and isinstance(ext, int):
                out[id(a)] = (float(lo), float(lo + ext - 1))
        return out

    def _unbounded(self, reader: ComputeOp, read: TensorRead, index: Expr) -> str:
        data = [e for e in walk(index) if isinstance(e, (TensorRead, Param))]
        what = (f"a data-dependent index, {index!r}, whose values are not bounded (clamp it)" if data else
                f"{index!r}, which is neither affine in its loops and sizes nor bounded")
        return (f"stage {reader.name} reads {read!r} at {what}, so the region of {read.tensor.name}, declared "
                f"without a shape, cannot be inferred; bound the index or give {read.tensor.name} a shape")


def _floors(e: Expr) -> Expr:
    """``e`` with the loop IR's C divisions (which isl emits only where the operands are non-negative, or
    the division exact) as the floor divisions of declarations, which shapes may use."""
    def declared(node: Expr) -> Expr | None:
        if isinstance(node, Binary) and node.op in _FLOOR:
            return Binary(_FLOOR[node.op], _floors(node.a), _floors(node.b), node.dtype)
        return None

    return rewrite(e, declared)


_FLOOR = {BinOp.CDIV: BinOp.FLOORDIV, BinOp.CMOD: BinOp.FLOORMOD}


def _reads_of(reader: ComputeOp, group: set[int], name: str) -> Iterator[tuple[TensorRead, tuple]]:
    """Every read by ``reader`` (a compute or an update definition) of a definition in ``group`` (the
    inferred compute ``name`` and its updates), with its conditions."""
    if not any(id(t.op) in group for t in reader.input_tensors):
        return
    if type(reader) is not ComputeOp and not isinstance(reader, (InferredOp, UpdateOp)):
        raise LoweringError(f"stage {reader.name} ({type(reader).__name__}) reads {name}, whose region "
                            f"is inferred; only computes and update definitions may read it: give {name} a shape")
    for read, guard in reads_with_guards(reader.body):
        if id(read.tensor.op) in group:
            yield read, guard
