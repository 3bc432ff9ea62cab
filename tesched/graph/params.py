"""Matching NumPy arrays to a function's parameters: ``bind_params`` (named parameters become constants)
and ``bind_arguments`` (a call's positional and keyword arrays, checked against the parameter types;
torch tensors and other arrays are read as NumPy arrays without copying).

Shape and dtype mismatches raise ``ValueError``/``TypeError`` naming the parameter; arrays are never
converted silently to another dtype.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from tesched.driver.arrays import as_array, readable
from tesched.graph.ir import Constant, Function, Var
from tesched.graph.types import TensorType
from tesched.graph.visit import rewrite


def check_array(value: object, ty: TensorType, what: str) -> np.ndarray:
    """``value`` as a C-contiguous array of type ``ty``, or an error naming ``what``."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{what}: expected a numpy.ndarray of {ty}, got {type(value).__name__}")
    if value.dtype != np.dtype(ty.dtype):
        raise TypeError(f"{what}: expected dtype {ty.dtype}, got {value.dtype}")
    if len(value.shape) != ty.ndim or any(isinstance(d, int) and d != v for d, v in zip(ty.extents, value.shape)):
        want = f"({', '.join(map(str, ty.extents))})" if ty.is_dynamic else str(ty.shape)
        raise ValueError(f"{what}: expected shape {want}, got {value.shape}")
    return readable(np.ascontiguousarray(value), np.dtype(ty.dtype))[0]     # inputs: an aligned copy if need be


def bind_params(f: Function, params: Mapping[str, np.ndarray]) -> Function:
    """``f`` with each parameter named in ``params`` replaced by a constant of that value (the constant
    keeps the name). The other parameters remain, in order."""
    by_name = {p.name: p for p in f.params}
    unknown = [name for name in params if name not in by_name]
    if unknown:
        raise ValueError(f"bind_params: {', '.join(unknown)} are not parameters of the function "
                         f"(its parameters: {', '.join(by_name)})")
    constants = {id(by_name[name]): Constant(check_array(value, by_name[name].tensor_type, f"parameter {name}"),
                                             name=name)
                 for name, value in params.items()}
    body = rewrite(f.body, lambda node, original: constants.get(id(original)) if isinstance(original, Var) else None)
    return Function([p for p in f.params if id(p) not in constants], body, f.attrs)


def bind_arguments(params: Sequence[Var], args: Sequence[object], kwargs: Mapping[str, object]) -> list[np.ndarray]:
    """The arrays for ``params``, from positional ``args`` then keyword ``kwargs``, each checked."""
    if len(args) > len(params):
        raise TypeError(f"expected at most {len(params)} inputs ({', '.join(p.name for p in params)}), "
                        f"got {len(args)}")
    values: dict[str, object] = {p.name: a for p, a in zip(params, args)}
    names = {p.name for p in params}
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"unknown input {name!r}; inputs are {', '.join(p.name for p in params)}")
        if name in values:
            raise TypeError(f"input {name!r} given twice (by position and by name)")
        values[name] = value
    missing = [p.name for p in params if p.name not in values]
    if missing:
        raise TypeError(f"missing inputs: {', '.join(missing)}")
    return [check_array(as_array(values[p.name], f"input {p.name}"), p.tensor_type, f"input {p.name}") for p in params]
