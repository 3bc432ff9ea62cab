"""Stages computed by the user's C function: ``ts.extern`` (TVM's ``te.extern``, Halide's ``define_extern``).

``ts.extern(shape, inputs, fname="blur", source=C_TEXT)`` declares a tensor of ``shape`` that one call of
the C function ``blur`` fills, given its whole inputs. The default calling convention is the graph's
external functions' (:mod:`tesched.graph.external`)::

    void blur(const T0 *in0, ..., T *out, int64_t SIZE0, ..., int64_t SIZE{m-1});

each tensor a C-contiguous row-major array of its whole shape, the ``int64_t`` values the size variables
(``ts.var``) of the input shapes, then of the output shape, in order of first appearance (none for constant
shapes). The function must fill all of ``out``; it may not write its inputs.

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
    """A tensor filled by one call of C function :attr:`function` with :attr:`call_args` (tensors, given
    as pointers to their whole buffers, and int64 sizes)."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: ExternStageCall,
                 call_args: Sequence[Tensor | Expr], output_stand_in: Tensor):
        super().__init__(name, tag, axis, body, None)
        self.function = body.name
        self.call_args: list[Tensor | Expr] = [self.output(0) if a is output_stand_in else a for a in call_args]


def extern(shape: object, inputs: Sequence[Tensor],
           fcompute: Callable[[list[Tensor], list[Tensor]], ExternFunctionCall] | None = None, *,
           name: str = "extern", dtype: str = "float32", fname: str | None = None, source: str | None = None,
           tag: str = "") -> Tensor:
    """A tensor of ``shape`` and ``dtype`` computed by one call of a C function on the whole of ``inputs``.

    Give either ``fname`` and ``source`` (the function takes the inputs, the output, then the size
    variables as ``int64_t``: see the module docstring), or TVM's ``fcompute(ins, outs)`` returning
    :func:`extern_call`. The stage is computed at the root; its loops cannot be split, fused, placed or
    annotated, but its readers can be scheduled freely. CPU targets only.

    Example
    -------
    >>> B = ts.extern((n,), [A], name="B", fname="prefix_sum", source=  # doctest: +SKIP
    ...     "void prefix_sum(const float *a, float *b, int64_t n) {"
    ...     " float s = 0; for (int64_t i = 0; i < n; i++) b[i] = s += a[i]; }")
    """
    checks.check_name(name, "extern")
    what = f"extern {name}"
    out_shape = _normalize_shape(shape, what)
    out_dtype = dt.normalize(dtype, what)
    ins = _inputs(inputs, what)
    stand_in = PlaceholderOp(name, out_shape, out_dtype).output(0)
    if (fcompute is None) == (fname is None):
        raise ValueError(f"{what}: give either fcompute (a function of ins and outs returning ts.extern_call) "
                         "or fname= and source=, not both or neither")
    if fname is not None:
        check_function_name(fname, what)
        if source is None:
            raise ValueError(f"{what}: fname={fname} needs source= (C text defining it)")
        call = ExternFunctionCall(fname, (*ins, stand_in, *_size_vars(ins + [stand_in])),
                                  check_source(fname, source, what))
    else:
        if source is not None:
            raise ValueError(f"{what}: source= goes with fname=; with fcompute, pass it to ts.extern_call")
        call = checks.check_callable(fcompute, name)(list(ins), [stand_in])
        if not isinstance(call, ExternFunctionCall):
            raise TypeError(f"{what}: fcompute must return ts.extern_call(fname, *args, source=...), got "
                            f"{type(call).__name__}")
    args = [_argument(a, k, ins, stand_in, f"{what}, function {call.name}") for k, a in enumerate(call.args)]
    if all(a is not stand_in for a in args):
        raise ValueError(f"{what}: the call of {call.name} is not given the output tensor (outs[0]) to fill")
    axis = [IterVar(Range(0, ext), f"i{k}", IterType.DATA_PAR) for k, ext in enumerate(out_shape)]
    reads = tuple(TensorRead(t, (WholeIndex(),) * t.ndim) for t in ins)
    body = ExternStageCall(call.name, reads, out_dtype, call.source)
    return ExternOp(name, tag, axis, body, args, stand_in).output(0)


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


def _argument(a: object, k: int, ins: list[Tensor], out: Tensor, what: str) -> Tensor | Expr:
    """Argument ``k`` of the C call: a tensor of the stage, or an integer expression of its size variables."""
    if isinstance(a, Tensor):
        if a is out or any(a is t for t in ins):
            return a
        raise ValueError(f"{what}: argument {k} is tensor {a.name}, which is neither an input of the stage "
                         "nor its output")
    if isinstance(a, bool) or (not isinstance(a, (int, Expr))):
        raise TypeError(f"{what}: argument {k} is a {type(a).__name__}; pass tensors of ins and outs, or integer "
                        "expressions of the shapes' size variables")
    e = as_expr(a, "int64")
    sizes = {id(v) for v in _size_vars(ins + [out])}
    strays = [n for n in walk(e) if isinstance(n, (Var, TensorRead)) and id(n) not in sizes]
    if not dt.is_int(e.dtype) or e.dtype == "bool" or strays:
        raise TypeError(f"{what}: argument {k} ({e}) must be an integer expression of the size variables of the "
                        "input and output shapes")
    return e
