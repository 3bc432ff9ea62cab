"""The signature of a compiled kernel as data: its buffer arguments, size and runtime parameters, heap buffers.

:func:`signature_of` reads it from a lowered function: each argument's name, dtype, shape (integers and
expressions of the size parameters) and whether the kernel writes it; the size parameters in call order;
the runtime parameters (``ts.param``) in call order; the buffers the kernel allocates on the heap, in
the order of its error codes. :meth:`Signature.to_json` and :meth:`Signature.from_json` turn it into
plain JSON data and back (shapes as small expression trees),
so that a kernel loaded from an exported library checks its arguments exactly as the kernel it was
exported from. This module writes no C and loads nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tesched.ir.nodes import Buffer, BufferScope
from tesched.lower.func import LoweredFunc
from tesched.te.expr import Binary, Cast, Const, Expr, Param, Unary, Var
from tesched.te.tensor import ComputeOp

Dim = int | Expr
"""One extent of a shape: an integer, or an integer expression of the size parameters."""


@dataclass(frozen=True)
class Argument:
    """One buffer argument of a kernel.

    Attributes
    ----------
    name : str
        The tensor's name, as the user gave it.
    dtype : str
        Its element type (``"float32"``, ...).
    shape : tuple of int or Expr
        Its extents; symbolic ones are expressions of the signature's size parameters.
    is_output : bool
        Whether the kernel writes it (a computed tensor) rather than only reads it (a placeholder).
    """

    name: str
    dtype: str
    shape: tuple[Dim, ...]
    is_output: bool


@dataclass(frozen=True)
class Signature:
    """What a kernel's C function takes: buffers, then sizes; and the heap buffers it allocates.

    Attributes
    ----------
    name : str
        The kernel's name.
    args : tuple of Argument
        The buffer arguments, in call order.
    params : tuple of Var
        The symbolic sizes, passed (as ``int64_t``) after the buffers.
    allocations : tuple of Buffer
        The heap buffers: the C function returns ``k`` when the ``k``-th cannot be allocated.
    checks : tuple of str
        The messages of its checked (data-dependent) indices: it returns ``-k`` when the ``k``-th was
        outside its tensor.
    scalars : tuple of Var
        The runtime parameters (``ts.param``), passed after the sizes as values of their dtypes.
    """

    name: str
    args: tuple[Argument, ...]
    params: tuple[Var, ...]
    allocations: tuple[Buffer, ...] = ()
    checks: tuple[str, ...] = ()
    scalars: tuple[Var, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The signature as JSON-compatible data (see :meth:`from_json`)."""
        index = {id(p): k for k, p in enumerate(self.params)}
        return {
            "name": self.name,
            "args": [{"name": a.name, "dtype": a.dtype, "shape": [_dim_to_json(d, index) for d in a.shape],
                      "output": a.is_output} for a in self.args],
            "params": [p.name for p in self.params],
            "allocations": [{"name": b.name, "dtype": b.dtype, "shape": [_dim_to_json(d, index) for d in b.shape]}
                            for b in self.allocations],
            "checks": list(self.checks),
            "scalars": [{"name": p.name, "dtype": p.dtype} for p in self.scalars],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Signature":
        """The signature :meth:`to_json` wrote.

        Parameters
        ----------
        data : dict
            The output of :meth:`to_json` (after a round trip through ``json``).

        Returns
        -------
        Signature
            Equal in every name, dtype and shape to the one written; variables that were not size
            parameters (a loop-dependent heap buffer extent) come back as fresh variables.
        """
        try:
            params = tuple(Var(str(name), "int64") for name in data["params"])
            args = tuple(Argument(str(a["name"]), str(a["dtype"]), tuple(_dim_from_json(d, params) for d in a["shape"]),
                                  bool(a["output"])) for a in data["args"])
            allocations = tuple(Buffer(str(b["name"]), [_dim_from_json(d, params) for d in b["shape"]], str(b["dtype"]),
                                       BufferScope.GLOBAL) for b in data["allocations"])
            checks = tuple(str(c) for c in data.get("checks", ()))
            scalars = tuple(Param(str(p["name"]), str(p["dtype"])) for p in data.get("scalars", ()))
            return cls(str(data["name"]), args, params, allocations, checks, scalars)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"a kernel signature record is malformed ({type(err).__name__}: {err})") from None


def signature_of(func: LoweredFunc, allocations: Sequence[Buffer] = (), checks: Sequence[str] = ()) -> Signature:
    """The signature of lowered function ``func``, with the heap buffers its C code allocates and the
    messages of its checked indices.

    Parameters
    ----------
    func : LoweredFunc
        The lowered function (its arguments, their tensors and its size parameters).
    allocations : sequence of Buffer
        The heap buffers of its generated C, in the order of their error codes.
    checks : sequence of str
        The messages of its checked indices, in the order of their (negative) error codes.

    Returns
    -------
    Signature
    """
    args = tuple(Argument(buf.name, buf.dtype, tuple(buf.shape), isinstance(tensor.op, ComputeOp))
                 for buf, tensor in zip(func.args, func.arg_tensors))
    return Signature(func.name, args, tuple(func.params), tuple(allocations), tuple(checks), tuple(func.scalars))


def _dim_to_json(d: Dim, params: dict[int, int]) -> Any:
    if isinstance(d, int):
        return d
    if isinstance(d, Const):
        return int(d.value)
    if isinstance(d, Var):
        return {"size": params[id(d)]} if id(d) in params else {"var": d.name}
    if isinstance(d, Binary):
        return {"op": d.op, "a": _dim_to_json(d.a, params), "b": _dim_to_json(d.b, params), "dtype": d.dtype}
    if isinstance(d, Unary) and d.op == "neg":
        return {"op": "neg", "a": _dim_to_json(d.a, params)}
    if isinstance(d, Cast):
        return {"cast": d.dtype, "value": _dim_to_json(d.value, params)}
    return {"var": repr(d)}     # not a function of the sizes: only the generated C knows its value


def _dim_from_json(d: Any, params: tuple[Var, ...]) -> Dim:
    if isinstance(d, int):
        return d
    if "size" in d:
        return params[int(d["size"])]
    if "var" in d:
        return Var(str(d["var"]), "int64")
    if "cast" in d:
        return Cast(str(d["cast"]), _as_expr(_dim_from_json(d["value"], params)))
    if d["op"] == "neg":
        return Unary("neg", _as_expr(_dim_from_json(d["a"], params)))
    a, b = _dim_from_json(d["a"], params), _dim_from_json(d["b"], params)
    return Binary(str(d["op"]), _as_expr(a), _as_expr(b), str(d["dtype"]))


def _as_expr(d: Dim) -> Expr:
    return Const(d, "int64") if isinstance(d, int) else d
