"""Stages computed by the user's C function: ``ts.extern`` (TVM's ``te.extern``, Halide's ``define_extern``).

``ts.extern(shape, inputs, fname="blur", source=C_TEXT)`` declares a tensor of ``shape`` that one call of
the C function ``blur`` fills, given its whole inputs. The default calling convention is the graph's
external functions' (:mod:`tesched.graph.external`)::

    void blur(const T0 *in0, ..., T *out, int64_t SIZE0, ..., int64_t SIZE{m-1});

each tensor a C-contiguous row-major array of its whole shape, the ``int64_t`` values the size variables
(``ts.var``) of the input shapes, then of the output shape, in order of first appearance (none for constant
shapes). The function must fill all of ``out``; it may not write its inputs. A stage may have several
outputs of one shape (``shape`` a list of equal shapes): the function takes them all, after the inputs.

TVM's form takes ``fcompute(ins, outs)`` instead, which returns ``ts.extern_call(fname, *args,
source=C_TEXT)``: the arguments in the order the C function takes them, each a tensor of ``ins`` or
``outs`` (a pointer to its first element) or an integer expression of the size variables (an
``int64_t``). TVM's ``call_packed`` of a registered function has no equivalent: the function is C
text compiled into the kernel.

The operation is an :class:`ExternOp`, a :class:`~tesched.te.tensor.ComputeOp` over the output's axes whose
body (an :class:`ExternStageCall`) reads each input at :class:`WholeIndex` indices, so the polyhedral
model sees one statement reading all of its inputs and writing all of its output; the lowering replaces
the stage's loops by the call (:mod:`tesched.poly.extern_stage`). The stage is computed at the root and
its loops cannot be scheduled; its readers can. This module only declares.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from tesched.te import checks
from tesched.te import dtype as dt
from tesched.te.expr import Expr, Param, Var, as_expr
from tesched.te.extern import ExternCall, check_function_name, check_source
from tesched.te.reduction import MultiValue
from tesched.te.tensor import (ComputeOp, IterType, IterVar, PlaceholderOp, Range, Tensor, TensorRead,
                               _normalize_shape)
from tesched.te.visit import walk


class WholeIndex(Expr):
    """Any index along a dimension: a read of the whole tensor (the footprint of an extern call)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.dtype = "int32"


class ExternStageCall(ExternCall):
    """The body of an :class:`ExternOp`: the C function reading its inputs whole (for the analyses; the
    call's own arguments are :attr:`ExternOp.call_args`)."""

    __slots__ = ()
    label = "extern"

    def with_children(self, children):
        return ExternStageCall(self.name, tuple(children), self.dtype, self.source)


@dataclass(frozen=True)
class ExternFunctionCall:
    """What ``fcompute`` of :func:`extern` returns: the C function, its arguments in order and its source."""

    name: str
    args: tuple
    source: str


def extern_call(fname: str, *args: object, source: str) -> ExternFunctionCall:
    """The call of C function ``fname`` that fills an extern stage (what ``fcompute`` of :func:`extern`
    returns): ``args`` in the order the function takes them, each a tensor of ``ins`` or ``outs`` (passed
    as a pointer to its first element) or an integer expression of size variables (an ``int64_t``);
    ``source`` is the C text defining ``fname``."""
    check_function_name(fname, "extern_call")
    return ExternFunctionCall(fname, args, check_source(fname, source, f"extern_call {fname}"))


class ExternOp(ComputeOp):
    """Tensors filled by one call of C function :attr:`function` with :attr:`call_args` (tensors, given
    as pointers to their whole buffers, and int64 sizes); one output per value of the body."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: Expr, function: str,
                 call_args: Sequence[Tensor | Expr], stand_ins: Sequence[Tensor]):
        super().__init__(name, tag, axis, body, None)
        self.function = function
        outputs = {id(t): self.output(k) for k, t in enumerate(stand_ins)}
        self.call_args: list[Tensor | Expr] = [outputs.get(id(a), a) if isinstance(a, Tensor) else a
                                               for a in call_args]


def extern(shape: object, inputs: Sequence[Tensor],
           fcompute: Callable[[list[Tensor], list[Tensor]], ExternFunctionCall] | None = None, *,
           name: str = "extern", dtype: str | Sequence[str] = "float32", fname: str | None = None,
           source: str | None = None, tag: str = "") -> Tensor | tuple[Tensor, ...]:
    """A tensor of ``shape`` and ``dtype`` computed by one call of a C function on the whole of ``inputs``.

    Give either ``fname`` and ``source`` (the function takes the inputs, the output, then the size
    variables as ``int64_t``: see the module docstring), or TVM's ``fcompute(ins, outs)`` returning
    :func:`extern_call`. The stage is computed at the root; its loops cannot be split, fused, placed or
    annotated, but its readers can be scheduled freely. CPU targets only.

    Several outputs (TVM's list of shapes): ``shape`` a list of equal shapes and ``dtype`` one dtype or one
    per output; the function takes every output (after the inputs) and the tensors are returned as a
    tuple.

    Example
    -------
    >>> B = ts.extern((n,), [A], name="B", fname="prefix_sum", source=  # doctest: +SKIP
    ...     "void prefix_sum(const float *a, float *b, int64_t n) {"
    ...     " float s = 0; for (int64_t i = 0; i < n; i++) b[i] = s += a[i]; }")
    """
    checks.check_name(name, "extern")
    what = f"extern {name}"
    out_shape, count = _output_shape(shape, what)
    dtypes = [dtype] * count if isinstance(dtype, str) else list(dtype)
    if len(dtypes) != count:
        raise ValueError(f"{what}: {count} outputs but {len(dtypes)} dtypes")
    dtypes = [dt.normalize(d, what) for d in dtypes]
    ins = _inputs(inputs, what)
    outs = [PlaceholderOp(name if count == 1 else f"{name}.v{k}", out_shape, d).output(0)
            for k, d in enumerate(dtypes)]
    if (fcompute is None) == (fname is None):
        raise ValueError(f"{what}: give either fcompute (a function of ins and outs returning ts.extern_call) "
                         "or fname= and source=, not both or neither")
    if fname is not None:
        check_function_name(fname, what)
        if source is None:
            raise ValueError(f"{what}: fname={fname} needs source= (C text defining it)")
        call = ExternFunctionCall(fname, (*ins, *outs, *_size_vars(ins + outs)), check_source(fname, source, what))
    else:
        if source is not None:
            raise ValueError(f"{what}: source= goes with fname=; with fcompute, pass it to ts.extern_call")
        call = checks.check_callable(fcompute, name)(list(ins), list(outs))
        if not isinstance(call, ExternFunctionCall):
            raise TypeError(f"{what}: fcompute must return ts.extern_call(fname, *args, source=...), got "
                            f"{type(call).__name__}")
    args = [_argument(a, k, ins, outs, f"{what}, function {call.name}") for k, a in enumerate(call.args)]
    for k, out in enumerate(outs):
        if all(a is not out for a in args):
            raise ValueError(f"{what}: the call of {call.name} is not given output tensor outs[{k}] to fill")
    axis = [IterVar(Range(0, ext), f"i{k}", IterType.DATA_PAR) for k, ext in enumerate(out_shape)]
    reads = tuple(TensorRead(t, (WholeIndex(),) * t.ndim) for t in ins)
    values = [ExternStageCall(call.name, reads, d, call.source) for d in dtypes]
    op = ExternOp(name, tag, axis, values[0] if count == 1 else MultiValue(values), call.name, args, outs)
    return op.output(0) if count == 1 else tuple(op.output(k) for k in range(count))


def _output_shape(shape: object, what: str) -> tuple[tuple, int]:
    """The shape of every output and how many there are: ``shape`` is one shape, or a list of equal ones."""
    if isinstance(shape, (list, tuple)) and shape and all(isinstance(x, (list, tuple)) for x in shape):
        shapes = [_normalize_shape(x, what) for x in shape]
        if any(len(x) != len(shapes[0]) or any(not (a is b or isinstance(a, int) and a == b) for a, b in zip(x, shapes[0]))
               for x in shapes):
            raise ValueError(f"{what}: outputs of different shapes ({', '.join(map(str, shapes))}) are not "
                             "supported; one extern stage's outputs share a shape (use one stage per shape)")
        return shapes[0], len(shapes)
    return _normalize_shape(shape, what), 1


def _inputs(inputs: object, what: str) -> list[Tensor]:
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{what}: inputs must be a list of tensors, got {type(inputs).__name__}")
    out: list[Tensor] = []
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: input {k} is a {type(t).__name__}, not a tensor")
        if all(t is not u for u in out):
            out.append(t)
    return out


def _size_vars(tensors: list[Tensor]) -> list[Expr]:
    """The size variables of the tensors' shapes, in order of first appearance."""
    found: dict[int, Expr] = {}
    for t in tensors:
        for d in t.shape:
            if isinstance(d, Expr):
                for node in walk(d):
                    if isinstance(node, Var) and not isinstance(node, (IterVar, Param)):
                        found.setdefault(id(node), node)
    return list(found.values())


def _argument(a: object, k: int, ins: list[Tensor], outs: list[Tensor], what: str) -> Tensor | Expr:
    """Argument ``k`` of the C call: a tensor of the stage, or an integer expression of its size variables."""
    if isinstance(a, Tensor):
        if any(a is t for t in ins + outs):
            return a
        raise ValueError(f"{what}: argument {k} is tensor {a.name}, which is neither an input of the stage "
                         "nor an output")
    if isinstance(a, bool) or (not isinstance(a, (int, Expr))):
        raise TypeError(f"{what}: argument {k} is a {type(a).__name__}; pass tensors of ins and outs, or integer "
                        "expressions of the shapes' size variables")
    e = as_expr(a, "int64")
    sizes = {id(v) for v in _size_vars(ins + outs)}
    strays = [n for n in walk(e) if isinstance(n, (Var, TensorRead)) and id(n) not in sizes]
    if not dt.is_int(e.dtype) or e.dtype == "bool" or strays:
        raise TypeError(f"{what}: argument {k} ({e}) must be an integer expression of the size variables of the "
                        "input and output shapes")
    return e
