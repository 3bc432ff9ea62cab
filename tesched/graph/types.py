"""Types of graph expressions: :class:`TensorType` (shape and dtype), :class:`TupleType` and
:class:`FuncType`, printed as Relay prints them (``Tensor[(1, 64, 56, 56), float32]``).

A shape entry is a positive int or a :class:`Dim`: a named dynamic dimension with a declared range
(``Tensor[(batch, 64), float32]``), whose value is bound from the arguments at call time.

Types are immutable values compared by content. This module does not infer types; see :mod:`.op`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.te import dtype as dt


@dataclass(frozen=True)
class Dim:
    """A dynamic dimension: ``name`` and its declared range ``[min, max]`` (both included). Two dims with
    the same name are the same dimension (their ranges must agree)."""

    name: str
    min: int
    max: int

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a dynamic dimension's name must be an identifier, got {self.name!r}")
        if not 1 <= self.min <= self.max:
            raise ValueError(f"dimension {self.name!r}: range [{self.min}, {self.max}] is empty or not positive")

    def check(self, value: int) -> None:
        """Raise ``ValueError`` naming the dimension unless ``min <= value <= max``."""
        if not self.min <= value <= self.max:
            raise ValueError(f"dimension {self.name!r} = {value} is outside its declared range "
                             f"[{self.min}, {self.max}]")

    def __str__(self) -> str:
        return self.name


Extent = int | Dim


def static_shape(shape: tuple[Extent, ...], sizes: dict[str, int] | None = None) -> tuple[int, ...]:
    """``shape`` with each dim replaced by ``sizes[name]`` (default: its largest value, ``max``)."""
    return tuple(d if isinstance(d, int) else (sizes or {}).get(d.name, d.max) for d in shape)


def dims_of(shapes: "list[tuple[Extent, ...]]") -> list[Dim]:
    """The distinct dims of ``shapes``, in order of first appearance (``ValueError`` when two dims of one
    name have different ranges)."""
    found: dict[str, Dim] = {}
    for shape in shapes:
        for d in shape:
            if isinstance(d, Dim) and found.setdefault(d.name, d) != d:
                raise ValueError(f"dimension {d.name!r} is declared with two ranges: [{found[d.name].min}, "
                                 f"{found[d.name].max}] and [{d.min}, {d.max}]")
    return list(found.values())


@dataclass(frozen=True)
class TensorType:
    """A tensor of shape ``extents`` (positive ints and dynamic :class:`Dim` entries) and ``dtype``.

    ``shape`` is the static shape (ints): reading it on a dynamic type raises a ``TypeError`` naming the
    dim, so code written for static shapes refuses a dynamic one rather than computing with it; code
    that handles dims reads ``extents``."""

    extents: tuple[Extent, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        extents = tuple(self.extents)
        for d in extents:
            if not isinstance(d, Dim) and (isinstance(d, bool) or not isinstance(d, int) or d <= 0):
                raise ValueError(f"shape entries must be positive ints or dynamic dims, got {extents}")
        object.__setattr__(self, "extents", extents)
        object.__setattr__(self, "dtype", dt.normalize(self.dtype))

    @property
    def shape(self) -> tuple[int, ...]:
        """The static shape; a ``TypeError`` naming the dim when a dimension is dynamic."""
        dynamic = [d.name for d in self.extents if isinstance(d, Dim)]
        if dynamic:
            raise TypeError(f"{self} has the dynamic dimension {dynamic[0]!r}, and this use needs a static shape")
        return tuple(d for d in self.extents if isinstance(d, int))      # (all of them, here)

    def size(self, axis: int) -> int:
        """The static size of ``axis`` (negative counts from the end); a ``TypeError`` naming the dim when
        that axis is dynamic."""
        d = self.extents[axis]
        if isinstance(d, Dim):
            raise TypeError(f"axis {axis} of {self} is the dynamic dimension {d.name!r}, and this use needs a "
                            "static size")
        return d

    @property
    def is_dynamic(self) -> bool:
        """Whether a shape entry is a dynamic :class:`Dim`."""
        return any(isinstance(d, Dim) for d in self.extents)

    @property
    def ndim(self) -> int:
        """The number of dimensions (``len(extents)``)."""
        return len(self.extents)

    def __str__(self) -> str:
        return f"Tensor[({', '.join(map(str, self.extents))}), {self.dtype}]"


@dataclass(frozen=True)
class TupleType:
    """The type of a tuple of values."""

    fields: tuple["Type", ...]

    def __str__(self) -> str:
        inner = ", ".join(map(str, self.fields))
        return f"({inner},)" if len(self.fields) == 1 else f"({inner})"


@dataclass(frozen=True)
class FuncType:
    """The type of a function: its parameters' types and its result type."""

    params: tuple["Type", ...]
    ret: "Type"

    def __str__(self) -> str:
        return f"fn ({', '.join(map(str, self.params))}) -> {self.ret}"


def has_dynamic(t: "Type") -> bool:
    """Whether a value of type ``t`` (a tensor, or a tuple or function of them) has a dynamic dimension."""
    if isinstance(t, TensorType):
        return t.is_dynamic
    if isinstance(t, TupleType):
        return any(has_dynamic(f) for f in t.fields)
    return any(has_dynamic(p) for p in t.params) or has_dynamic(t.ret)


Type = TensorType | TupleType | FuncType
