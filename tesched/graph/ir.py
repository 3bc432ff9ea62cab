"""The graph IR: immutable, typed dataflow nodes in the style of Relay.

``Var`` (a named input), ``Constant`` (a NumPy parameter), ``Call`` (an operator from :mod:`.op`, or a
primitive ``Function`` made by fusion, applied to arguments), ``Tuple`` and ``TupleGetItem``, and
``Function`` (parameters and a body). Every node's ``checked_type`` is inferred when it is built, so a
shape or dtype mismatch raises right there, naming the op and the types involved. Nodes cannot be
changed after construction; passes build new ones (see :mod:`.visit`). Printing a node gives its text
form (see :mod:`.text`).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tesched.graph.op import Op
from tesched.graph.types import FuncType, TensorType, TupleType, Type
from tesched.graph.visit import post_order
from tesched.nn.pattern import Pattern

_text_form: Callable[["Expr"], str] | None = None


def set_text_form(text_form: Callable[["Expr"], str]) -> None:
    """Install the Relay-style text that ``str()`` prints (:mod:`tesched.graph.text` installs it when
    imported, so the IR does not depend on its printer)."""
    global _text_form
    _text_form = text_form


class Expr:
    """Base class of graph expressions: immutable, typed (``checked_type``), hashed by identity."""

    __slots__ = ("checked_type",)
    checked_type: Type

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"graph expressions are immutable; build a new {type(self).__name__}")

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def children(self) -> tuple["Expr", ...]:
        """The sub-expressions this node reads, in order (none for a leaf)."""
        return ()

    def with_children(self, children: Sequence["Expr"]) -> "Expr":
        """A copy of this node reading ``children`` instead (a leaf is returned as it is)."""
        return self

    @property
    def tensor_type(self) -> TensorType:
        """``checked_type`` when it is a tensor type, else a ``TypeError``."""
        if not isinstance(self.checked_type, TensorType):
            raise TypeError(f"expected a tensor, got a value of type {self.checked_type}")
        return self.checked_type

    def tensor_types(self) -> tuple[TensorType, ...]:
        """The tensor types of the value: the fields of a tuple, or its own type; a ``TypeError`` for a
        value that holds anything but tensors."""
        types = self.checked_type.fields if isinstance(self.checked_type, TupleType) else (self.checked_type,)
        tensors = tuple(t for t in types if isinstance(t, TensorType))
        if len(tensors) != len(types):
            raise TypeError(f"expected tensors, got a value of type {self.checked_type}")
        return tensors

    def __str__(self) -> str:
        return _text_form(self) if _text_form is not None else repr(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ty={self.checked_type})"


def _as_expr(value: object, what: str) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (tuple, list)):
        return Tuple(value)
    raise TypeError(f"{what}: expected a graph expression, got {type(value).__name__}")


class Var(Expr):
    """A named input of a function."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str, type_annotation: TensorType):
        if not isinstance(type_annotation, TensorType):
            raise TypeError(f"variable {name}: expected a TensorType, got {type_annotation!r}")
        self._set(name=str(name), checked_type=type_annotation)

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.checked_type})"


class Constant(Expr):
    """A constant tensor (a read-only copy of a NumPy array), optionally named after its parameter."""

    __slots__ = ("data", "name")
    data: np.ndarray
    name: str | None

    def __init__(self, data: object, name: str | None = None):
        array = np.array(data, copy=True)
        if array.dtype == np.float64 and not isinstance(data, np.ndarray):
            array = array.astype(np.float32)  # Python floats default to float32, as in Relay
        array.setflags(write=False)
        self._set(data=array, name=name, checked_type=TensorType(array.shape, str(array.dtype)))

    def __repr__(self) -> str:
        return f"Constant({self.name or ''}, {self.checked_type})"


class Call(Expr):
    """``op(args..., **attrs)``; ``op`` is an :class:`~.op.Op` or a primitive :class:`Function`."""

    __slots__ = ("op", "args", "attrs")
    op: "Op | Function"
    args: tuple[Expr, ...]
    attrs: Mapping[str, Any]

    def __init__(self, op: "Op | Function", args: Sequence[object], attrs: Mapping[str, Any] | None = None):
        name = op.name if isinstance(op, (Op, Function)) else repr(op)
        arg_exprs = tuple(_as_expr(a, f"argument {k} of {name}") for k, a in enumerate(args))
        attrs = MappingProxyType(dict(attrs or {}))
        if isinstance(op, Op):
            ty: Type = op.infer([a.checked_type for a in arg_exprs], attrs)
        elif isinstance(op, Function):
            got = tuple(a.checked_type for a in arg_exprs)
            want = tuple(p.checked_type for p in op.params)
            if got != want:
                raise TypeError(f"call of {name}: argument types ({', '.join(map(str, got))}) do not match "
                                f"its parameters ({', '.join(map(str, want))})")
            ty = op.body.checked_type
        else:
            raise TypeError(f"Call: op must be an Op or a Function, got {type(op).__name__}")
        self._set(op=op, args=arg_exprs, attrs=attrs, checked_type=ty)

    @property
    def op_name(self) -> str:
        """The name of the op (or of the primitive function) called."""
        return self.op.name

    @property
    def pattern(self) -> Pattern:
        """How the op fuses (:class:`~tesched.nn.pattern.Pattern`); a primitive function is ``OPAQUE``."""
        return self.op.pattern if isinstance(self.op, Op) else Pattern.OPAQUE

    def children(self) -> tuple[Expr, ...]:
        """The call's arguments."""
        return self.args

    def with_children(self, children: Sequence[Expr]) -> "Call":
        """The same call (operator and attributes) on the arguments ``children``."""
        return Call(self.op, children, self.attrs)

    def __repr__(self) -> str:
        return f"Call({self.op_name}, ty={self.checked_type})"


class Tuple(Expr):
    """A tuple of values (e.g. several outputs); ``t[i]`` and unpacking give its fields."""

    __slots__ = ("fields",)
    fields: tuple[Expr, ...]

    def __init__(self, fields: Sequence[object]):
        exprs = tuple(_as_expr(f, f"field {k} of a tuple") for k, f in enumerate(fields))
        self._set(fields=exprs, checked_type=TupleType(tuple(f.checked_type for f in exprs)))

    def __getitem__(self, index: int) -> Expr:
        return self.fields[index]

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self):
        return iter(self.fields)

    def children(self) -> tuple[Expr, ...]:
        """The tuple's fields."""
        return self.fields

    def with_children(self, children: Sequence[Expr]) -> "Tuple":
        """A tuple of the fields ``children``."""
        return Tuple(children)


class TupleGetItem(Expr):
    """Field ``index`` of a tuple-typed value."""

    __slots__ = ("tuple_value", "index")
    tuple_value: Expr
    index: int

    def __init__(self, tuple_value: Expr, index: int):
        ty = tuple_value.checked_type
        if not isinstance(ty, TupleType):
            raise TypeError(f"TupleGetItem: value of type {ty} is not a tuple")
        if not -len(ty.fields) <= index < len(ty.fields):
            raise IndexError(f"TupleGetItem: index {index} out of range for {ty}")
        index %= len(ty.fields)
        self._set(tuple_value=tuple_value, index=index, checked_type=ty.fields[index])

    def children(self) -> tuple[Expr, ...]:
        """The one tuple this node reads a field of."""
        return (self.tuple_value,)

    def with_children(self, children: Sequence[Expr]) -> "TupleGetItem":
        """The same field index, read from the tuple ``children[0]``."""
        return TupleGetItem(children[0], self.index)


class Function(Expr):
    """``fn (params) { body }``. Every variable of the body must be a parameter.

    ``attrs`` carries ``primitive`` (a fused group, compiled as one kernel) and ``name``.
    """

    __slots__ = ("params", "body", "attrs")
    params: tuple[Var, ...]
    body: Expr
    attrs: Mapping[str, Any]

    def __init__(self, params: Sequence[Var], body: object, attrs: Mapping[str, Any] | None = None):
        params = tuple(params)
        for p in params:
            if not isinstance(p, Var):
                raise TypeError(f"Function parameters must be Vars, got {type(p).__name__}")
        names = [p.name for p in params]
        if len(set(map(id, params))) != len(params) or len(set(names)) != len(names):
            raise ValueError(f"Function: parameters {names} repeat a variable or a name")
        body = _as_expr(body, "Function body")
        known = set(map(id, params))
        free = [v.name for v in post_order(body) if isinstance(v, Var) and id(v) not in known]
        if free:
            raise ValueError(f"Function: the body uses variables that are not parameters: {', '.join(free)}")
        self._set(params=params, body=body, attrs=MappingProxyType(dict(attrs or {})),
                  checked_type=FuncType(tuple(p.checked_type for p in params), body.checked_type))

    @property
    def name(self) -> str:
        """The function's ``name`` attribute (``"fn"`` when it has none)."""
        return str(self.attrs.get("name", "fn"))

    @property
    def is_primitive(self) -> bool:
        """True for a fused group made by ``fuse_ops`` (compiled to one kernel)."""
        return bool(self.attrs.get("primitive", False))

    def with_body(self, body: Expr, params: Sequence[Var] | None = None) -> "Function":
        """The same function with a new body (and optionally new parameters)."""
        return Function(self.params if params is None else params, body, self.attrs)

    def __repr__(self) -> str:
        return f"Function({self.name}, ty={self.checked_type})"
