"""Arrays from other libraries: kernels and executables read their arguments as NumPy arrays without
copying, from anything with ``__dlpack__`` (a ``torch.Tensor``, a JAX or CuPy host array), the array
interface or the buffer protocol; and they return results of the type they were given (torch in, torch out).

torch is never imported here: a tensor's own module is looked up in ``sys.modules``, where it already is
when the caller passed a tensor. This module converts; it checks neither shapes nor dtypes.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

_TORCH_TYPES: dict[type, bool] = {np.ndarray: False}


def _is_torch(value: object) -> bool:
    kind = type(value)
    found = _TORCH_TYPES.get(kind)
    if found is None:
        found = _TORCH_TYPES[kind] = kind.__module__.partition(".")[0] == "torch"
    return found


def as_array(value: object, what: str) -> np.ndarray:
    """``value`` as a NumPy array sharing its memory; ``TypeError`` naming ``what`` when it is no array.

    Parameters
    ----------
    value
        A NumPy array, a DLPack tensor, or an object with the array interface or a buffer.
    what
        How to name the value in an error (``"argument x"``).

    Returns
    -------
    numpy.ndarray
        A view of the same memory (never a copy).
    """
    if isinstance(value, np.ndarray):
        return value
    if _is_torch(value) and hasattr(value, "numpy"):
        try:
            return value.numpy()
        except (RuntimeError, TypeError) as err:
            raise TypeError(f"{what}: cannot read this torch tensor as host memory ({err})") from None
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (RuntimeError, TypeError, ValueError, BufferError) as err:
            raise TypeError(f"{what}: cannot read this {type(value).__name__} through DLPack ({err})") from None
    if hasattr(value, "__array_interface__") or hasattr(value, "__array_struct__"):
        return np.asarray(value)
    if not isinstance(value, (list, tuple, int, float, complex, bool, str, bytes)):
        try:
            return np.asarray(memoryview(value))  # type: ignore[arg-type]  # any buffer-protocol object
        except TypeError:
            pass
    raise TypeError(f"{what}: expected an array (a numpy.ndarray, a tensor with __dlpack__ such as torch.Tensor, "
                    f"or an object with the array interface), got {type(value).__name__}")


def torch_module(values: Sequence[object]) -> Any:
    """The torch module when one of ``values`` is a torch tensor, else ``None`` (nothing is imported)."""
    for value in values:
        if _is_torch(value):
            return sys.modules.get("torch")
    return None


def like(array: np.ndarray, torch: Any) -> Any:
    """``array`` as a torch tensor sharing its memory when ``torch`` is given, else unchanged."""
    return array if torch is None else torch.from_numpy(array)


def readable(array: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, bool]:
    """``array`` (already checked to be of ``dtype``) as C can read it: ``(buffer, copied)``.

    A NumPy type that equals ``dtype`` under another name (``np.longlong`` for int64 on Linux, ``np.intc``
    for int32) is viewed as ``dtype``; an array whose data is not aligned to its element size (a view at
    an odd byte offset) is copied into an aligned one, and ``copied`` says so, so that a caller copies an
    output back."""
    if array.dtype.char != dtype.char:
        array = array.view(dtype)
    if array.flags.aligned:
        return array, False
    return np.array(array, dtype=dtype, order="C", copy=True), True
