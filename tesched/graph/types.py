"""Types of graph expressions: :class:`TensorType` (static shape and dtype), :class:`TupleType` and
:class:`FuncType`, printed as Relay prints them (``Tensor[(1, 64, 56, 56), float32]``).

Types are immutable values compared by content. This module does not infer types; see :mod:`.op`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.te import dtype as dt


@dataclass(frozen=True)
class TensorType:
    """A tensor of static ``shape`` (positive ints) and ``dtype``."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d <= 0:
                raise ValueError(f"shape entries must be positive ints, got {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dt.normalize(self.dtype))

    @property
    def ndim(self) -> int:
        """The number of dimensions (``len(shape)``)."""
        return len(self.shape)

    def __str__(self) -> str:
        return f"Tensor[({', '.join(map(str, self.shape))}), {self.dtype}]"


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


Type = TensorType | TupleType | FuncType
