"""The dynamic dimensions of an executable: which input axis gives each its value at call time, the
range check, and shapes made concrete.

A graph whose inputs have dynamic dimensions (:class:`~.types.Dim`) is built once; each call binds every
dim from the first input axis that has it, checks it lies in its declared range (a ``ValueError`` naming
the dimension otherwise) and that every other input axis with that dim agrees; the C checks of the call
(:mod:`tesched.driver.call`) verify the same of the results. This module runs nothing.
"""
from __future__ import annotations

from typing import Any, Sequence

from tesched.graph.types import Dim, Extent, TensorType, dims_of

Sizes = dict[str, int]


class SizeBinding:
    """The dims of ``inputs`` (the executable's parameter types), in order of first appearance."""

    def __init__(self, inputs: Sequence[TensorType]):
        self.dims: list[Dim] = dims_of([t.extents for t in inputs])
        self.index = {d.name: k for k, d in enumerate(self.dims)}
        self._axes = [(k, axis, d) for k, t in enumerate(inputs) for axis, d in enumerate(t.extents)
                      if isinstance(d, Dim)]

    def __bool__(self) -> bool:
        return bool(self.dims)

    def bind(self, arrays: Sequence[Any]) -> Sizes:
        """Each dim's value from the input arrays (anything with a ``shape``): the first axis that has it
        binds it. A ``ValueError`` names a dim outside its range, or an axis that disagrees with the
        first; a ``TypeError`` or ``ValueError`` an input that is missing or has too few axes."""
        sizes: Sizes = {}
        for k, axis, d in self._axes:
            if k >= len(arrays):
                raise TypeError(f"expected an input at position {k} to bind dimension {d.name!r}")
            shape = getattr(arrays[k], "shape", None)
            if shape is None or len(shape) <= axis:
                raise ValueError(f"input {k}: expected an array with at least {axis + 1} axes (dimension "
                                 f"{d.name!r} is axis {axis}), got shape {shape}")
            value = int(shape[axis])
            if d.name not in sizes:
                d.check(value)
                sizes[d.name] = value
            elif sizes[d.name] != value:
                raise ValueError(f"input {k}: axis {axis} is dimension {d.name!r} = {value}, but an earlier "
                                 f"input set it to {sizes[d.name]}")
        return sizes

    def spec_dims(self, shape: tuple[Extent, ...]) -> tuple[int, ...]:
        """``shape`` as the C checks take it: extents, and ``-(p + 1)`` for dim ``p``."""
        return tuple(d if isinstance(d, int) else -self.index[d.name] - 1 for d in shape)

    def size_args(self, names: Sequence[str], what: str) -> list[int]:
        """The step arguments ``-(p + 1)`` passing the sizes ``names`` (a kernel's size variables)."""
        unknown = [n for n in names if n not in self.index]
        if unknown:
            raise ValueError(f"{what}: size {', '.join(unknown)} is not a dynamic dimension of the inputs")
        return [-self.index[n] - 1 for n in names]
