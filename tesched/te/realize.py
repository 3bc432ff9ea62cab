"""Rebuild a pipeline once the regions of its inferred computes are known (Halide's realization).

A compute declared without a shape (:class:`~tesched.te.inferred.InferredOp`) whose region along
dimension ``d`` is ``[min_d, min_d + extent_d)`` becomes a plain compute of shape ``extent`` over axes
from 0: element ``k`` of its buffer holds the value at ``k + min`` (the region's *origin*), so its body
reads its axes shifted by the origin, and every reader's index is shifted back (``f[x - 1]`` becomes
``f'[x - 1 - min]``). Negative offsets are thus never stored: a tensor keeps its buffer from 0, and the
origin lives in the indices. The update definitions of an inferred ``Func`` are rebuilt over the same
region: their pure axes run from 0 too, still alone at their positions of the element written. Readers of
rebuilt tensors are rebuilt too (same names, axes and attributes, new bodies), transitively up to the
outputs; operations that read nothing rebuilt stay as they are. The axes of an inferred compute are the
user's handles for scheduling (``s[f].split(f.op.axis[0], 8)``), so they are kept, and their extents set
to the region's: a compute's region is inferred once (:func:`realize` refuses a second, different one).
:func:`inferred_region` gives a rebuilt compute's region, for printing. The regions themselves come from :mod:`tesched.poly.regions`.
"""
from __future__ import annotations

import weakref
from typing import Sequence

from tesched.errors import LoweringError
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.te.inferred import InferredOp
from tesched.te.printer import expr_str
from tesched.te.tensor import ComputeOp, IterVar, Operation, Range, Tensor, TensorRead
from tesched.te.update import Definition, UpdateOp
from tesched.te.visit import rewrite, structural_key, substitute

Bound = int | Expr
Region = list[tuple[Bound, Bound]]      # (min, extent) per dimension

_REGIONS: "weakref.WeakKeyDictionary[ComputeOp, Region]" = weakref.WeakKeyDictionary()


def inferred_region(op: Operation) -> Region | None:
    """The region a rebuilt compute computes, ``(min, extent)`` per dimension; None for any other."""
    return _REGIONS.get(op) if isinstance(op, ComputeOp) else None


def region_text(e: Bound) -> str:
    """The text of a bound of a region."""
    return str(e) if isinstance(e, int) else expr_str(e)


def realize(order: Sequence[Operation], regions: dict[int, Region]) -> dict[int, Operation]:
    """The rebuilt operation of every operation of ``order`` (inputs first) that is inferred (its region in
    ``regions``) or reads a rebuilt one, by the id of the declared operation."""
    rebuilt: dict[int, Operation] = {}
    tensors: dict[int, tuple[Tensor, Region | None]] = {}
    for op in order:
        if isinstance(op, InferredOp):
            new: Operation = _inferred(op, regions[id(op)], tensors)
        elif isinstance(op, UpdateOp) and isinstance(op.base, InferredOp):
            new = _inferred_update(op, regions[id(op)], rebuilt, tensors)
        elif any(id(t) in tensors for t in op.input_tensors) or (
                isinstance(op, UpdateOp) and id(op.base) in rebuilt):
            new = _reader(op, rebuilt, tensors)
        else:
            continue
        rebuilt[id(op)] = new
        region = regions.get(id(op))
        for k in range(op.num_outputs):
            tensors[id(op.output(k))] = (new.output(k), region)
    return rebuilt


def _inferred(op: InferredOp, region: Region, tensors: dict[int, tuple[Tensor, Region | None]]) -> ComputeOp:
    """The plain compute of an inferred one over its region (see the module docstring)."""
    for d, (axis, (_, extent)) in enumerate(zip(op.axis, region)):
        _set_extent(op.name, axis, d, extent)
    shift = {a: a + lo for a, (lo, _) in zip(op.axis, region) if not (isinstance(lo, int) and lo == 0)}
    new = ComputeOp(op.name, op.tag, list(op.axis), _reads(substitute(op.body, shift), tensors), op.attrs)
    _REGIONS[new] = region
    return new


def _inferred_update(op: UpdateOp, region: Region, rebuilt: dict[int, Operation],
                     tensors: dict[int, tuple[Tensor, Region | None]]) -> UpdateOp:
    """An update definition of an inferred compute over its region: its pure axes run from 0 over the
    region along their dimensions (each still alone at its own position of the element written), and
    every other index is shifted as a read is."""
    dims = [next(d for d, i in enumerate(op.body.index) if i is a) for a in op.axis]
    for a, d in zip(op.axis, dims):
        _set_extent(op.base.name, a, d, region[d][1])
    shift = {a: a + region[d][0] for a, d in zip(op.axis, dims) if not (isinstance(region[d][0], int)
                                                                        and region[d][0] == 0)}
    index = [i if d in dims else _minus(_reads(substitute(i, shift), tensors), region[d][0])
             for d, i in enumerate(op.body.index)]
    base, previous = rebuilt[id(op.base)], tensors[id(op.previous)][0]
    assert isinstance(base, ComputeOp)
    return UpdateOp(base, previous, op.position, op.axis, op.reduce_axis,
                    Definition(_reads(substitute(op.body.value, shift), tensors), index))


def _set_extent(name: str, axis: IterVar, dim: int, extent: Bound) -> None:
    """Give an axis of inferred compute ``name`` (along dimension ``dim``) its region's extent, once."""
    assert axis.dom is not None
    declared = axis.dom.extent
    if isinstance(declared, Var) and declared.name == f"{name}.extent{dim}":
        axis.dom = Range(0, extent)
    elif not _same(declared, extent):
        raise LoweringError(f"compute {name}: its region was inferred as extent {region_text(declared)} along "
                            f"{axis.name} for an earlier schedule, and these outputs need extent "
                            f"{region_text(extent)}; a compute's region is inferred once: declare it again for "
                            "another pipeline")


def _minus(index: Expr, origin: Bound) -> Expr:
    """``index - origin``, as the bare term when ``index`` is ``term + origin`` (an axis shifted by it)."""
    if isinstance(origin, int) and origin == 0:
        return index
    if isinstance(index, Binary) and index.op == BinOp.ADD and _same(index.b, origin):
        return index.a
    return index - origin


def _same(a: Bound | Expr, b: Bound | Expr) -> bool:
    """Whether two bounds are the same number or the same expression."""
    x, y = (v.value if isinstance(v, Const) else v for v in (a, b))
    if isinstance(x, Expr) and isinstance(y, Expr):
        return structural_key(x) == structural_key(y)
    return not isinstance(x, Expr) and not isinstance(y, Expr) and x == y


def _reader(op: Operation, rebuilt: dict[int, Operation],
            tensors: dict[int, tuple[Tensor, Region | None]]) -> Operation:
    """A compute or update that reads rebuilt tensors, reading them instead (shifted by their origins)."""
    if isinstance(op, UpdateOp):
        base = rebuilt.get(id(op.base), op.base)
        previous = tensors.get(id(op.previous), (op.previous, None))[0]
        assert isinstance(base, ComputeOp)
        body = _reads(op.body, tensors)
        assert isinstance(body, Definition)
        return UpdateOp(base, previous, op.position, op.axis, op.reduce_axis, body)
    if type(op) is not ComputeOp:
        read = next(t for t in op.input_tensors if id(t) in tensors)
        origin = _origin(read.op)
        path = f"{read.name}, whose region is inferred" if origin is read.op else (
            f"{read.name}, which reads {origin.name}, whose region is inferred")
        raise LoweringError(f"stage {op.name} ({type(op).__name__}) reads {path}; a stage that is not a compute or "
                            f"an update definition is not rebuilt over inferred regions: give {origin.name} a shape")
    return ComputeOp(op.name, op.tag, op.axis, _reads(op.body, tensors), op.attrs)


def _origin(op: Operation) -> Operation:
    """The first compute declared without a shape that ``op`` is, or reads through other operations."""
    stack, seen = [op], set()
    while stack:
        top = stack.pop()
        if isinstance(top, InferredOp):
            return top
        seen.add(id(top))
        stack.extend(t.op for t in reversed(top.input_tensors) if id(t.op) not in seen)
    raise AssertionError(f"{op.name} reads no inferred compute")


def _reads(body: Expr, tensors: dict[int, tuple[Tensor, Region | None]]) -> Expr:
    """``body`` reading each rebuilt tensor instead of the declared one, at indices shifted by its origin."""
    def swap(e: Expr) -> Expr | None:
        if not isinstance(e, TensorRead) or id(e.tensor) not in tensors:
            return None
        tensor, region = tensors[id(e.tensor)]
        indices = [rewrite(i, swap) for i in e.indices]
        if region is not None:
            indices = [_minus(i, lo) for i, (lo, _) in zip(indices, region)]
        return TensorRead(tensor, tuple(indices))

    return rewrite(body, swap)
