"""Update definitions: Halide's ``f(x) = 0; f(im(r)) += 1``, a tensor defined by a pure definition and
then updated in place, in order.

Two spellings of one thing:

- ``f = ts.Func((n,), "int32", name="hist")``, ``x, = f.axis``, ``f[x] = 0`` (the pure definition, over
  ``f.axis`` in order), then ``f[im[r]] += 1`` or ``f[x, r] = f[x, r - 1] + g[x, r]`` (updates);
  ``f.tensor`` is the result, ``s[f]`` the pure definition's stage.
- ``T = ts.compute(...)`` then ``T1 = ts.update(T, index, value)``: ``T1`` is ``T`` after the update
  ``T[index] = value`` (``value`` reads ``T`` as it is before that element is written), and
  ``ts.update(T1, ...)`` updates it again.

Each update is an :class:`UpdateOp`: a stage of its own (``s[T1]``, or ``s[f].update(0)``) whose loops are
the pure axes its left-hand side uses (the pure definition's variables, each alone at its own position),
outermost first, then the reduce axes it uses in order of first appearance (innermost: Halide runs an
update's reduction domain inside its pure variables). It stores into the same buffer as the pure
definition; reads of any version of the tensor in an update read that buffer. Only the last version may
be read by other stages or passed to a kernel (checked when lowering). This module only declares; the
dependence analysis (:mod:`tesched.poly.deps`) decides which loops of an update may run in parallel.
"""
from __future__ import annotations

import inspect
import weakref
from typing import Sequence

from tesched.te import checks
from tesched.te import dtype as dt
from tesched.te.expr import Expr, Var, as_expr, cast_to
from tesched.te.inferred import InferredOp, compute
from tesched.te.tensor import ComputeOp, IterType, IterVar, Operation, Range, Tensor, TensorRead, integer_indices
from tesched.te.visit import collect, substitute


class Definition(Expr):
    """The body of an update: ``value`` stored at ``index`` (the element written, an index per dimension)."""

    __slots__ = ("value", "index")

    def __init__(self, value: Expr, index: Sequence[Expr]):
        self.value, self.index, self.dtype = value, tuple(index), value.dtype

    def children(self):
        return (self.value,) + self.index

    def with_children(self, children):
        return Definition(children[0], children[1:])


class Version(Tensor):
    """The tensor after an update: named after the tensor (its storage), its operation after the update."""

    op: "UpdateOp"

    @property
    def name(self) -> str:
        return self.op.base.name


class UpdateOp(ComputeOp):
    """Update ``position`` of the tensor ``base`` (its pure definition): ``out[index] = value`` over the
    pure axes ``axis`` and the reduce axes ``reduce_axis``; ``previous`` is the version it updates."""

    body: Definition

    def __init__(self, base: ComputeOp, previous: Tensor, position: int, axis: list[IterVar],
                 reduce_axis: list[IterVar], body: Definition):
        self.name, self.tag, self.attrs = f"{base.name}.update{position}", base.tag, {}
        self.base, self.previous, self.position = base, previous, position
        self.axis, self.reduce_axis, self.body = axis, reduce_axis, body
        self.bodies = [body.value]
        self._outputs = [Version(self, base.output(0).shape, base.output(0).dtype)]
        self._output = self._outputs[0]

    @property
    def input_tensors(self) -> list[Tensor]:
        """The version it updates first (it runs after it), then what its value and index read."""
        seen: dict[int, Tensor] = {id(self.previous): self.previous}
        for read in collect(self.body, TensorRead):
            seen.setdefault(id(read.tensor), read.tensor)
        return list(seen.values())

    def target(self, body: Definition | None = None) -> TensorRead:
        """The element ``body`` (default: the declared body) writes, as a read of the output."""
        return TensorRead(self.output(0), (self.body if body is None else body).index)


# pure definition -> its latest update (a version may only be updated while it is the latest)
_LATEST: "weakref.WeakKeyDictionary[ComputeOp, UpdateOp]" = weakref.WeakKeyDictionary()


def versions(op: Operation) -> int:
    """How many definitions precede ``op`` (0 for a pure definition)."""
    return op.position + 1 if isinstance(op, UpdateOp) else 0


def _ordered_axes(exprs: Sequence[Expr]) -> list[IterVar]:
    """The loop variables of ``exprs`` in order of first appearance (left to right, depth first)."""
    found: dict[int, IterVar] = {}
    stack = list(reversed(exprs))
    while stack:
        e = stack.pop()
        if isinstance(e, IterVar):
            found.setdefault(id(e), e)
        stack.extend(reversed(e.children()))
    return list(found.values())


def update(tensor: Tensor, index: object, value: object) -> Tensor:
    """``tensor[index] = value`` as an update definition of ``tensor`` (see the module docstring): returns
    the tensor after the update. ``tensor`` is a compute's tensor or its latest update; ``index`` gives one
    expression per dimension, each either the pure definition's axis of that dimension or an expression
    without pure axes (of reduce axes, sizes, tensor reads); ``value`` may read any version of the tensor."""
    base = tensor.op.base if isinstance(tensor.op, UpdateOp) else tensor.op
    name = base.name
    if not (type(base) is ComputeOp or isinstance(base, InferredOp)) or base.num_outputs != 1 or base.reduce_axis:
        raise TypeError(f"update of {name}: only a single-output compute without a reduction can be updated "
                        f"(it is a {type(base).__name__}); write its reduction as an update instead")
    latest: ComputeOp = _LATEST.get(base, base)
    if tensor.op is not latest:
        raise ValueError(f"update of {name}: {tensor.op.name} is not its latest definition ({latest.name}); "
                         "updates apply in order to the latest version")
    position = versions(latest)
    where = f"update {position} of {name}"
    lhs = integer_indices(index, tensor.ndim, f"{where}: tensor {name}", name)
    rhs = cast_to(as_expr(value), tensor.dtype)
    pure = {id(a): d for d, a in enumerate(base.axis)}
    own = [e for d, e in enumerate(lhs) if e is base.axis[d]]
    for d, e in enumerate(lhs):
        stray = [a for a in _ordered_axes([e]) if id(a) in pure and not any(a is o for o in own)]
        if stray:
            a = stray[0]
            raise ValueError(f"{where}: index {d} is {e!r}, which uses the pure axis {a.name}, but {a.name} is not "
                             f"alone at its own position (index {pure[id(a)]}); an update uses a pure axis only "
                             "where the left-hand side indexes that axis' dimension with it alone")
    loops = _ordered_axes(list(lhs) + [rhs])
    for a in loops:
        if a.iter_type == IterType.DATA_PAR and not any(a is o for o in own):
            raise ValueError(f"{where}: the value uses {a.name}, which is not a pure axis of the left-hand side "
                             f"({', '.join(o.name for o in own) or 'none'}); index the element with it")
    raxes = [a for a in loops if a.iter_type == IterType.COMM_REDUCE]
    fresh = {id(a): IterVar(Range(a.range.min, a.range.extent), a.name, a.iter_type) for a in own + raxes}
    mapping = {a: fresh[id(a)] for a in own + raxes}
    body = Definition(substitute(rhs, mapping), [substitute(i, mapping) for i in lhs])
    op = UpdateOp(base, latest.output(0), position, [fresh[id(a)] for a in own], [fresh[id(r)] for r in raxes], body)
    _LATEST[base] = op
    return op.output(0)


class Func:
    """A tensor defined in Halide's style: ``f[x, y] = ...`` (the pure definition over ``f.axis``), then
    any number of updates ``f[index] = value`` or ``f[index] += value`` (``-=``, ``*=``, ...). Reading
    ``f[...]`` reads the latest version; ``f.tensor`` is it (pass it to kernels and other stages).

    ``shape=None`` declares a Func whose region is inferred from its readers (Halide's Func, defined
    everywhere; see :mod:`tesched.te.inferred`): ``axes`` then names its dimensions."""

    def __init__(self, shape, dtype: str = "float32", name: str = "func", axes: Sequence[str] | None = None):
        checks.check_name(name, "Func")
        self.dtype = dt.normalize(dtype, f"Func {name}")
        self.name = name
        if shape is None and axes is None:
            raise ValueError(f"Func {name}: a Func without a shape (its region inferred) names its axes, which "
                             "give its dimensions: ts.Func(None, dtype, name, axes=('x', 'y'))")
        dims = ((None,) * len(list(axes or ())) if shape is None else
                tuple(shape) if isinstance(shape, (tuple, list)) else (shape,))
        names = list(axes) if axes is not None else ["x", "y", "z", "w"][:len(dims)] + [
            f"i{k}" for k in range(4, len(dims))]
        if len(names) != len(dims):
            raise ValueError(f"Func {name}: {len(names)} axis names for {len(dims)} dimensions")
        self.shape: tuple | None = None if shape is None else dims
        self.axis = [IterVar(Range(0, Var(f"{name}.extent{k}") if d is None else d), n, IterType.DATA_PAR)
                     for k, (n, d) in enumerate(zip(names, dims))]
        self._tensor: Tensor | None = None

    @property
    def tensor(self) -> Tensor:
        """The latest version, the pure definition's tensor or that of its last update."""
        if self._tensor is None:
            raise ValueError(f"Func {self.name} has no definition yet; define it first: "
                             f"{self.name}[{', '.join(a.name for a in self.axis)}] = ...")
        return self._tensor

    @property
    def op(self) -> ComputeOp:
        """The pure definition's operation (``s[f]`` is its stage; ``s[f].update(k)`` update ``k``'s)."""
        op = self.tensor.op
        base = op.base if isinstance(op, UpdateOp) else op
        assert isinstance(base, ComputeOp)
        return base

    def __getitem__(self, index: object) -> TensorRead:
        return self.tensor[index]

    def __setitem__(self, index: object, value: object) -> None:
        if self._tensor is not None:     # the user's axes are the pure definition's
            own = dict(zip(self.axis, self.op.axis))
            items = tuple(as_expr(i, "int32") for i in (index if isinstance(index, tuple) else (index,)))
            self._tensor = update(self._tensor, tuple(substitute(i, own) for i in items),
                                  substitute(as_expr(value), own))
            return
        items = index if isinstance(index, tuple) else (index,)
        if len(items) != len(self.axis) or any(i is not a for i, a in zip(items, self.axis)):
            names = ", ".join(a.name for a in self.axis)
            raise ValueError(f"Func {self.name}: its pure definition is {self.name}[{names}] = ... (the axes "
                             "f.axis, in order); an update comes after it")
        axes = self.axis
        v = cast_to(as_expr(value), self.dtype)

        def fcompute(*i: IterVar) -> Expr:
            return substitute(v, dict(zip(axes, i)))

        setattr(fcompute, "__signature__", inspect.Signature(    # the axes keep their names
            [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_ONLY) for a in axes]))
        tensor = compute(self.shape, fcompute, name=self.name)
        assert isinstance(tensor, Tensor)
        self._tensor = tensor
