"""Boundary conditions in Halide's style: read a tensor anywhere, with a defined value outside its box.

``constant_exterior(A, value)``, ``repeat_edge(A)``, ``repeat_image(A)``, ``mirror_image(A)`` and
``mirror_interior(A)`` return a
:class:`BoundedTensor`; index it like ``A`` inside any ``compute`` body (``B[i - 1, j + 2]``). Every read
it makes is clamped into ``A``'s box, so it never reads outside ``A`` (the bounds check at lowering time
accepts it) and its footprint stays exact for ``compute_at``:

- ``constant_exterior``: ``value`` outside the box, ``A`` inside;
- ``repeat_edge``: the nearest edge element (the index clamped into the box);
- ``repeat_image``: the image tiled periodically (``-1 -> n - 1``, ``n -> 0``);
- ``mirror_image``: the image mirrored about its edges, edge elements repeated (``-1 -> 0``, ``n -> n - 1``);
- ``mirror_interior``: the image mirrored about its edge elements without repeating them
  (``-1 -> 1``, ``n -> n - 2``).

The last three are periodic for constant extents; for symbolic extents, exact within one extent of the box
and clamped beyond.

This module only builds expressions; it knows nothing of schedules or code.

Example
-------
>>> import tesched as ts
>>> A = ts.placeholder((8,), name="A")
>>> P = ts.boundary.repeat_edge(A)
>>> B = ts.compute((8,), lambda i: P[i - 1] + A[i] + P[i + 1], name="B")
"""
from __future__ import annotations

from typing import Callable

from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Expr, Select, as_expr, binary, cast_to
from tesched.te.functions import all as all_of
from tesched.te.tensor import Tensor


class BoundedTensor:
    """A tensor read through a boundary condition: ``bounded[indices]`` is an expression for any indices."""

    def __init__(self, tensor: Tensor, kind: str, index_map: Callable[[Expr, int | Expr], Expr],
                 exterior: Expr | None = None):
        self.tensor, self.kind, self.exterior = tensor, kind, exterior
        self._index_map = index_map

    @property
    def name(self) -> str:
        """The name of the bounded tensor."""
        return self.tensor.name

    @property
    def shape(self) -> tuple:
        """The shape of the bounded tensor (reads may fall outside it)."""
        return self.tensor.shape

    @property
    def dtype(self) -> str:
        """The element type of the bounded tensor."""
        return self.tensor.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions of the bounded tensor."""
        return self.tensor.ndim

    def __getitem__(self, indices) -> Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise IndexError(f"{self.kind}({self.name}) has {self.ndim} dimensions, indexed with {len(indices)}")
        exprs = []
        for k, idx in enumerate(indices):
            e = as_expr(idx, "int32")
            if not dt.is_int(e.dtype) or e.dtype == "bool":
                raise TypeError(f"index {k} of {self.kind}({self.name}) must be an integer expression, "
                                f"got {e.dtype}")
            exprs.append(e)
        read = self.tensor[tuple(self._index_map(e, n) for e, n in zip(exprs, self.shape))]
        if self.exterior is None:
            return read
        inside = all_of(*[binary(BinOp.AND, e >= 0, e < n) for e, n in zip(exprs, self.shape)])
        return Select(inside, read, self.exterior)

    def __repr__(self) -> str:
        return f"{self.kind}({self.tensor!r})"


def _clamp(e: Expr, n: int | Expr) -> Expr:
    return binary(BinOp.MIN, binary(BinOp.MAX, e, 0), n - 1)


def _mirror(e: Expr, n: int | Expr) -> Expr:
    if isinstance(n, int):
        if n == 1:
            return binary(BinOp.MUL, e, 0)
        period = 2 * (n - 1)
        folded = e % period
        return binary(BinOp.MIN, folded, period - folded)
    reflected = binary(BinOp.MAX, e, -e)
    return _clamp(binary(BinOp.MIN, reflected, 2 * (n - 1) - reflected), n)


def _mirror_edges(e: Expr, n: int | Expr) -> Expr:
    if isinstance(n, int):
        folded = e % (2 * n)
        return binary(BinOp.MIN, folded, 2 * n - 1 - folded)
    reflected = binary(BinOp.MAX, e, -1 - e)
    return _clamp(binary(BinOp.MIN, reflected, 2 * n - 1 - reflected), n)


def _wrap(e: Expr, n: int | Expr) -> Expr:
    if isinstance(n, int):
        return e % n
    shifted = Select(e < 0, e + n, Select(e >= n, e - n, e))
    return _clamp(shifted, n)


def _checked(tensor: object, what: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"boundary.{what}: expected a Tensor (a placeholder or compute), got "
                        f"{type(tensor).__name__} {tensor!r}")
    return tensor


def constant_exterior(tensor: Tensor, value: object) -> BoundedTensor:
    """``tensor`` inside its box and ``value`` outside it (Halide's ``BoundaryConditions::constant_exterior``).

    Parameters
    ----------
    tensor : Tensor
        The tensor to read.
    value : number or Expr
        The value outside the box (converted to the tensor's dtype).

    Returns
    -------
    BoundedTensor
        Index it like the tensor, with any integer indices.
    """
    tensor = _checked(tensor, "constant_exterior")
    try:
        exterior = as_expr(value, tensor.dtype)
    except TypeError:
        raise TypeError(f"boundary.constant_exterior({tensor.name}): value must be a number or an expression, "
                        f"got {type(value).__name__} {value!r}") from None
    return BoundedTensor(tensor, "constant_exterior", _clamp, cast_to(exterior, tensor.dtype))


def repeat_edge(tensor: Tensor) -> BoundedTensor:
    """``tensor`` with each index clamped into its box (Halide's ``repeat_edge``).

    Parameters
    ----------
    tensor : Tensor
        The tensor to read.

    Returns
    -------
    BoundedTensor
        Index it like the tensor, with any integer indices.
    """
    return BoundedTensor(_checked(tensor, "repeat_edge"), "repeat_edge", _clamp)


def mirror_interior(tensor: Tensor) -> BoundedTensor:
    """``tensor`` mirrored about its edge elements, which are not repeated (Halide's ``mirror_interior``).

    Parameters
    ----------
    tensor : Tensor
        The tensor to read.

    Returns
    -------
    BoundedTensor
        Index it like the tensor, with any integer indices.
    """
    return BoundedTensor(_checked(tensor, "mirror_interior"), "mirror_interior", _mirror)


def repeat_image(tensor: Tensor) -> BoundedTensor:
    """``tensor`` repeated periodically in every direction (Halide's ``repeat_image``: index ``n`` reads
    ``0``, ``-1`` reads ``n - 1``); periodic for constant extents, exact within one extent of the box and
    clamped beyond for symbolic ones.

    Parameters
    ----------
    tensor : Tensor
        The tensor to read.

    Returns
    -------
    BoundedTensor
        Index it like the tensor, with any integer indices.
    """
    return BoundedTensor(_checked(tensor, "repeat_image"), "repeat_image", _wrap)


def mirror_image(tensor: Tensor) -> BoundedTensor:
    """``tensor`` mirrored about its edges, the edge elements repeated (Halide's ``mirror_image``: ``-1``
    reads ``0``, ``n`` reads ``n - 1``); periodic for constant extents, exact within one extent of the box
    and clamped beyond for symbolic ones.

    Parameters
    ----------
    tensor : Tensor
        The tensor to read.

    Returns
    -------
    BoundedTensor
        Index it like the tensor, with any integer indices.
    """
    return BoundedTensor(_checked(tensor, "mirror_image"), "mirror_image", _mirror_edges)
