"""Tensors and the operations that define them: ``placeholder``, ``compute``, ``reduce_axis``, ``var``.

A :class:`Tensor` is the output of an operation: a :class:`PlaceholderOp` (an input) or a :class:`ComputeOp`
(``out[axis] = body``, where ``body`` may be a top-level reduction). Axes are :class:`IterVar` objects,
which are themselves expressions, so ``A[i, k]`` reads naturally. This module is pure declaration: it
knows nothing of schedules, loops or code.
"""
from __future__ import annotations

import inspect
import operator
import traceback
from enum import StrEnum
from pathlib import Path
from typing import Callable, SupportsIndex

from tesched.errors import LoweringError
from tesched.te import checks
from tesched.te import dtype as dt
from tesched.te.expr import Const, Expr, Var, as_expr
from tesched.te.reduction import MultiValue, Reduce, remapped_reducer
from tesched.te.visit import collect, rewrite, substitute, walk


class Range:
    """A half-open interval ``[min, min + extent)`` whose bounds are ints or size expressions."""

    __slots__ = ("min", "extent")

    def __init__(self, min: int | Expr, extent: int | Expr):
        self.min, self.extent = min, extent

    def __repr__(self) -> str:
        return f"Range(min={self.min!r}, extent={self.extent!r})"


class IterType(StrEnum):
    """What an axis runs over: the points of the output (data parallel) or a reduction."""

    DATA_PAR = "data_par"
    COMM_REDUCE = "comm_reduce"


class IterVar(Var):
    """A loop variable of a stage: an axis of a compute, a reduction axis, or a split/fuse result.

    ``dom`` is the interval the variable iterates over (``None`` for variables made by split/fuse, whose
    bounds come from the schedule). ``iter_type`` says whether it is a reduction loop (:class:`IterType`).
    """

    __slots__ = ("dom", "iter_type")

    def __init__(self, dom: Range | None, name: str, iter_type: IterType):
        super().__init__(name, "int32")
        self.dom, self.iter_type = dom, iter_type

    @property
    def range(self) -> Range:
        """``dom`` of an axis; a loop made by split or fuse has none, and asking is an internal error."""
        if self.dom is None:
            raise LoweringError(f"internal: loop {self.name} was made by split or fuse and has no fixed range")
        return self.dom

    @property
    def var(self) -> "IterVar":
        """The variable itself (TVM code reads ``axis.var``)."""
        return self

    @property
    def constant_extent(self) -> int | None:
        """The axis' extent when it is a constant (``None`` when it depends on a size or on another axis)."""
        extent = self.range.extent
        if isinstance(extent, Const):
            return int(extent.value)
        return extent if isinstance(extent, int) else None


class Operation:
    """Base of the operations that define tensors."""

    name: str
    tag: str = ""
    _output: "Tensor"
    axis: list["IterVar"]          # the output's loop axes (none for a placeholder)
    reduce_axis: list["IterVar"]   # the axes of a top-level reduction (none otherwise)

    def output(self, index: int = 0) -> "Tensor":
        if index != 0:
            raise IndexError(f"operation {self.name} has a single output")
        return self._output

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list["Tensor"]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape: tuple, dtype: str):
        self.name = name
        self.axis, self.reduce_axis = [], []
        self._output = Tensor(self, shape, dtype)


def output_bodies(body: Expr) -> list[Expr]:
    """The value of each output of an operation whose body is ``body``: the values of a
    :class:`MultiValue`, every component of a tuple reduction, else ``body`` alone."""
    if isinstance(body, MultiValue):
        return list(body.values)
    if isinstance(body, Reduce) and len(body.sources) > 1:
        return [body.component(k) for k in range(len(body.sources))]
    return [body]


class ComputeOp(Operation):
    """``name[axis...] = body``; ``reduce_axis`` lists the axes of a top-level reduction.

    A compute with several outputs (TVM's multi-output compute) has a :class:`MultiValue` body, or a
    tuple reduction (the body is its component 0); ``bodies`` holds each output's value."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: Expr, attrs: dict | None):
        if isinstance(body, Reduce) and body.value_index != 0:
            body = body.component(0)
        self.name, self.tag, self.axis, self.body = name, tag, axis, body
        self.attrs = dict(attrs or {})
        self.reduce_axis: list[IterVar] = ([a for a in body.axis if isinstance(a, IterVar)]
                                           if isinstance(body, Reduce) else [])
        shape = tuple(_shape_value(iv.range.extent) for iv in axis)
        self.bodies = output_bodies(body)
        self._outputs = [Tensor(self, shape, b.dtype, k) for k, b in enumerate(self.bodies)]
        self._output = self._outputs[0]

    def output(self, index: int = 0) -> "Tensor":
        if not 0 <= index < len(self._outputs):
            raise IndexError(f"operation {self.name} has {len(self._outputs)} output(s), not {index + 1}")
        return self._outputs[index]

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    @property
    def loop_axes(self) -> list[IterVar]:
        """The loops a schedule starts from: the axes, then the reduce axes."""
        return list(self.axis) + list(self.reduce_axis)

    @property
    def input_tensors(self) -> list["Tensor"]:
        seen: dict[int, Tensor] = {}
        for read in collect(self.body, TensorRead):
            seen.setdefault(id(read.tensor), read.tensor)
        return list(seen.values())


class Tensor:
    """The output of an operation; index it to read an element: ``A[i, j]``."""

    def __init__(self, op: Operation, shape: tuple, dtype: str, value_index: int = 0):
        self.op, self.shape, self.dtype = op, tuple(shape), dtype
        self.value_index = value_index

    @property
    def name(self) -> str:
        """The name of the operation that produces this tensor."""
        return self.op.name

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def __getitem__(self, indices) -> "TensorRead":
        return TensorRead(self, integer_indices(indices, self.ndim, f"tensor {self.name}", self.name))

    def __call__(self, *indices) -> "TensorRead":
        """``A(i, j)`` is ``A[i, j]`` (TVM's call syntax, as in ``lambda *i: A(*i)``)."""
        return self[indices]

    def __repr__(self) -> str:
        return f"Tensor(name={self.name!r}, shape={self.shape!r}, dtype={self.dtype!r})"

    __hash__ = object.__hash__


def integer_indices(indices: object, ndim: int, owner: str, of: str) -> tuple[Expr, ...]:
    """``indices`` (one index or a tuple) as ``ndim`` integer expressions; IndexError or TypeError naming
    ``owner`` (``"tensor A"``: "tensor A has 2 dimensions") or ``of`` ("index 0 of A") otherwise."""
    items = indices if isinstance(indices, tuple) else (indices,)
    if len(items) != ndim:
        raise IndexError(f"{owner} has {ndim} dimensions, indexed with {len(items)}")
    exprs = []
    for k, idx in enumerate(items):
        e = as_expr(idx, "int32")
        if not dt.is_int(e.dtype) or e.dtype == "bool":
            raise TypeError(f"index {k} of {of} must be an integer expression, got {e.dtype}")
        exprs.append(e)
    return tuple(exprs)


class TensorRead(Expr):
    """Reading one element of a tensor (TVM's ProducerLoad)."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices, self.dtype = tensor, tuple(indices), tensor.dtype

    def children(self):
        return self.indices

    def with_children(self, children):
        return TensorRead(self.tensor, tuple(children))


class WholeTensor(Expr):
    """A tensor given whole where the compute reads it at its own axes (``init=I``); ``compute`` replaces
    it by ``I[axes...]`` after checking the shapes match."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor):
        self.tensor, self.dtype = tensor, tensor.dtype


def _shape_value(value: object, what: str = "tensor") -> int | Expr:
    if isinstance(value, Const):
        value = value.value
    if isinstance(value, Expr):
        if not dt.is_int(value.dtype) or value.dtype == "bool":
            raise TypeError(f"{what}: shape entries must be integers, got a {value.dtype} expression")
        return value
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise TypeError(f"{what}: shape entries must be ints or size variables, got {value!r}")
    size = operator.index(value)
    if not 0 < size < 1 << 62:
        raise ValueError(f"{what}: shape entries must be positive and below 2**62, got {size}")
    return size


def _normalize_shape(shape, what: str) -> tuple:
    return tuple(_shape_value(s, what) for s in checks.check_shape_container(shape, what))


def var(name: str = "n", dtype: str = "int32") -> Var:
    """A symbolic size, usable in shapes; kernels read its value from their arguments' shapes."""
    checks.check_name(name, "var")
    if not dt.is_int(dt.normalize(dtype)) or dt.normalize(dtype) == "bool":
        raise TypeError(f"var {name}: size variables must be integers, got dtype {dtype!r}; a value passed at "
                        f"call time is ts.param({name!r}, {dtype!r})")
    return Var(name, dtype)


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given shape and dtype."""
    checks.check_name(name, "placeholder")
    return PlaceholderOp(name, _normalize_shape(shape, f"placeholder {name}"),
                         dt.normalize(dtype, f"placeholder {name}")).output(0)


def reduce_axis(dom, name: str = "rv") -> IterVar:
    """A reduction axis over ``dom = (lo, hi)`` (half-open), as in TVM."""
    checks.check_name(name, "reduce_axis")
    if isinstance(dom, Range):
        rng = Range(checks.reduce_bound(dom.min, "lower", name), checks.reduce_bound(dom.extent, "extent", name))
    else:
        lo, hi = checks.reduce_bounds(dom, name)
        rng = Range(lo, hi - lo if isinstance(lo, int) and isinstance(hi, int) else as_expr(hi) - lo)
    if isinstance(rng.extent, int) and rng.extent <= 0:
        raise ValueError(f"reduce_axis {name}: empty range {dom}")
    return IterVar(rng, name, IterType.COMM_REDUCE)


def compute(shape, fcompute: Callable[..., object], name: str = "compute", tag: str = "",
            attrs: dict | None = None) -> Tensor:
    """``out[i...] = fcompute(i...)``; the body may be a reduction (``ts.sum`` ...). A reduction inside a larger
    expression (Halide's inline reduction, ``ts.sum(A[i, k], axis=k) * 2.0``) becomes a compute of its own
    over the same axes, named ``<name>.sum0`` (the reducer and a count), which the body reads.

    When ``fcompute`` returns a tuple (plain expressions, or every component of a tuple reduction such as
    argmax), the compute has one output per element and returns them as a tuple (TVM's multi-output
    compute); they are one stage, ``s[T0]`` and ``s[T1]`` alike.

    Axis names come from the parameter names of ``fcompute`` (``lambda i, j: ...`` gives axes i, j).
    """
    checks.check_name(name, "compute")
    shape = _normalize_shape(shape, f"compute {name}")
    params = _param_names(checks.check_callable(fcompute, name), len(shape), name)
    axis = [IterVar(Range(0, ext), pname, IterType.DATA_PAR) for pname, ext in zip(params, shape)]
    body = _body(name, _evaluate(name, fcompute, axis))
    if isinstance(body, Reduce):
        parts = [_lift_reductions(name, axis, shape, e) for e in body.children()]
        if any(p is not e for p, e in zip(parts, body.children())):
            body = body.with_children(parts)
    else:
        body = _lift_reductions(name, axis, shape, body)
    if isinstance(body, Reduce):
        body = _resolve_init(name, body, axis, shape)
        checks.check_reduction(name, body)
    checks.check_free_axes(name, axis, body, lambda e: isinstance(e, IterVar))
    op = ComputeOp(name, tag, axis, body, attrs)
    return op.output(0) if op.num_outputs == 1 else tuple(op.output(k) for k in range(op.num_outputs))  # type: ignore[return-value]  # TVM returns a tuple of the outputs of a multi-output compute


def _lift_reductions(name: str, axis: list[IterVar], shape: tuple, body: Expr) -> Expr:
    """Halide's inline reductions (``f(x) = sum(g(x + r)) * 2 + 3``): every reduction inside a larger
    expression becomes a compute of its own over the same axes, ``<name>.<reducer><k>``, which ``body``
    reads at its axes (a stage like any other: it may be scheduled, computed at a loop of ``name``...)."""
    count = [0]

    def lift(e: Expr) -> Expr | None:
        if not isinstance(e, Reduce):
            return None

        def fcompute(*axes: IterVar) -> object:
            mapping: dict = dict(zip(axis, axes))
            raxes = [IterVar(Range(*(substitute(b, mapping) if isinstance(b, Expr) else b
                                     for b in (r.range.min, r.range.extent))), r.name, r.iter_type)
                     if isinstance(r, IterVar) else r for r in e.axis]
            mapping.update((r, nr) for r, nr in zip(e.axis, raxes) if r is not nr)
            return Reduce(e.combiner, [substitute(s, mapping) for s in e.sources], raxes,
                          None if e.where is None else substitute(e.where, mapping),
                          None if e.inits is None else [substitute(i, mapping) for i in e.inits],
                          remapped_reducer(e, mapping), 0)

        setattr(fcompute, "__signature__", inspect.Signature(    # the lifted axes keep their names
            [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_ONLY) for a in axis]))
        count[0] += 1
        outputs = compute(shape, fcompute, name=f"{name}.{e.combiner}{count[0] - 1}")
        return (outputs[e.value_index] if isinstance(outputs, tuple) else outputs)[tuple(axis)]

    return rewrite(body, lift)


_PACKAGE = Path(__file__).resolve().parents[1]


def _evaluate(name: str, fcompute: Callable[..., object], axis: list[IterVar]) -> object:
    """``fcompute(*axis)``; a ``TypeError`` tesched raises while building the body (a bitwise operation on
    floats, a literal that does not fit) is raised again naming the compute."""
    try:
        return fcompute(*axis)
    except TypeError as err:
        frames = traceback.extract_tb(err.__traceback__)
        ours = bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(_PACKAGE)
        if ours and not str(err).startswith(f"compute {name}:"):
            raise TypeError(f"compute {name}: {err}") from err
        raise


def _as_body(name: str, value: object) -> Expr:
    try:
        return as_expr(value)
    except TypeError:
        raise TypeError(f"compute {name}: fcompute must return an expression (or a tuple of them), got "
                        f"{type(value).__name__} {value!r}") from None


def _body(name: str, value: object) -> Expr:
    """The body of compute ``name`` from what ``fcompute`` returned: an expression, a tuple of plain
    expressions (one output each), or every component of one tuple reduction, in order."""
    if not isinstance(value, (tuple, list)):
        body = _as_body(name, value)
        if isinstance(body, Reduce) and len(body.sources) > 1:
            raise ValueError(f"compute {name}: reducer {body.combiner} reduces {len(body.sources)} expressions; "
                             "return all its components (T0, T1 = ts.compute(..., lambda i: r((a, b), axis=k)))")
        return body
    if not value:
        raise ValueError(f"compute {name}: fcompute returned an empty tuple")
    parts = [_as_body(name, v) for v in value]
    if not any(isinstance(p, Reduce) for p in parts):
        return parts[0] if len(parts) == 1 else MultiValue(parts)
    first = parts[0]
    if not (isinstance(first, Reduce) and len(first.sources) == len(parts) and all(
            isinstance(p, Reduce) and p.sources == first.sources and p.value_index == k for k, p in enumerate(parts))):
        raise ValueError(f"compute {name}: a compute with several outputs returns plain expressions, or all the "
                         "components of one tuple reduction in order (argmax((idx, val), axis=k)); not a mix")
    return first


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or (isinstance(x, int) and isinstance(y, int) and x == y) for x, y in zip(a, b))


def _resolve_init(name: str, body: Reduce, axis: list[IterVar], shape: tuple) -> Reduce:
    """``init=`` tensors read at the compute's axes (their shape must be the output's); an init that uses a
    reduce axis is refused (it is one starting value per output point)."""
    if body.inits is None:
        return body
    inits = []
    for start in body.inits:
        if isinstance(start, WholeTensor):
            t = start.tensor
            if not _same_shape(t.shape, shape):
                raise ValueError(f"compute {name}: init tensor {t.name} has shape {t.shape}, the output has shape "
                                 f"{shape}; give a tensor of the output's shape or an expression of the axes")
            start = TensorRead(t, tuple(axis))
        start = rewrite(start, lambda e: TensorRead(e.tensor, tuple(axis)) if isinstance(e, WholeTensor) else None)
        for e in walk(start):
            if any(e is r for r in body.axis):
                raise ValueError(f"compute {name}: init uses reduce axis {getattr(e, 'name', e)}; it is the "
                                 "starting value of "
                                 "each output point, an expression of the compute's own axes")
        inits.append(start)
    return Reduce(body.combiner, body.sources, body.axis, body.where, inits, body.reducer, body.value_index)


def _param_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(ndim)]
    # parameters with defaults (``lambda i, prev=prev: ...``, a common way to bind a loop variable) are not axes
    params = [p for p in sig.parameters.values()
              if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.KEYWORD_ONLY]
    if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        return [f"i{k}" for k in range(ndim)]
    if len(params) != ndim:
        raise ValueError(f"compute {name}: fcompute takes {len(params)} arguments but the shape has {ndim} dimensions")
    return [p.name for p in params]
