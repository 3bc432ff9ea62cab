"""The arguments of a compiled kernel: their specification, and the checks a call runs in Python.

:class:`KernelArguments` holds, per array argument, its name, dtype, C type and dimensions (an extent, a
symbolic size, or an expression of the sizes), and binds the symbolic sizes from the arrays passed. Its
checks raise ``TypeError`` or ``ValueError`` naming the argument (dtype, shape, contiguity, writeability,
overlap of an output with another argument) and allocate omitted outputs. It does not run the kernel
(:mod:`.kernel`) nor check in C (:mod:`.call`, which runs the same checks in one pass and falls back here
to word the error).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tesched.arith.linear import linear
from tesched.codegen.signature import Signature
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.arrays import readable
from tesched.te import dtype as dt
from tesched.te.expr import Var


@dataclass(frozen=True)
class ArgumentSpec:
    """One array argument of a kernel."""

    name: str
    dtype: np.dtype
    ctype: str
    dims: tuple            # per dimension: int, or ("param", k), or ("expr", Expr)
    is_output: bool


class KernelArguments:
    """The array arguments and symbolic sizes of kernel ``name`` (from its ``signature``), with the
    checks of a call; ``allocations`` bounds the heap buffers the bound sizes imply."""

    def __init__(self, name: str, signature: Signature, allocations: Allocations):
        self.name = name
        self.allocations = allocations
        self.params = list(signature.params)
        pindex = {id(p): k for k, p in enumerate(self.params)}
        specs = []
        for arg in signature.args:
            dims: list[int | tuple[str, object]] = []
            for d in arg.shape:
                if isinstance(d, int):
                    dims.append(d)
                elif isinstance(d, Var) and id(d) in pindex:
                    dims.append(("param", pindex[id(d)]))
                else:
                    dims.append(("expr", d))
            specs.append(ArgumentSpec(arg.name, dt.numpy_dtype(arg.dtype), f"{dt.C_TYPES[arg.dtype]}[]", tuple(dims),
                                 arg.is_output))
        self.specs = specs
        self.n_inputs = sum(not s.is_output for s in specs)
        self.inputs_first = all(not s.is_output for s in specs[:self.n_inputs])
        # the outputs' shapes and dtypes when they need no sizes (omitted outputs are then quick to allocate)
        self.output_shapes = [(s.dims, s.dtype) for s in specs if s.is_output] \
            if self.inputs_first and not self.params else None

    def arg_dims(self) -> list[tuple[int, ...]] | None:
        """Per argument its dimensions as a program reads them (an extent, or ``-(p + 1)`` for symbolic
        size ``p``); ``None`` when a dimension is an expression of the sizes."""
        dims = []
        for spec in self.specs:
            row = []
            for d in spec.dims:
                if isinstance(d, int):
                    row.append(d)
                elif d[0] == "param":
                    row.append(-d[1] - 1)
                else:
                    return None
            dims.append(tuple(row))
        return dims

    def bind(self, arrays: list) -> list[int]:
        values: list[int | None] = [None] * len(self.params)
        for spec, arr in zip(self.specs, arrays):
            if arr is None:
                continue
            for k, d in enumerate(spec.dims):
                if isinstance(d, tuple) and d[0] == "param":
                    got = arr.shape[k]
                    if values[d[1]] is None:
                        values[d[1]] = got
                    elif values[d[1]] != got:
                        p = self.params[d[1]].name
                        raise ValueError(f"argument {spec.name}: dimension {k} is {got}, but size {p} is "
                                         f"{values[d[1]]} from an earlier argument")
        self._solve_affine_sizes(arrays, values)
        sizes: list[int] = []
        for k, v in enumerate(values):
            if v is None:
                raise ValueError(f"size {self.params[k].name} cannot be inferred from the inputs; "
                                 "pass the output arrays")
            if v < 1:
                raise ValueError(f"size {self.params[k].name} must be positive, got {v}")
            sizes.append(v)
        return sizes

    def _solve_affine_sizes(self, arrays: list, values: list[int | None]) -> None:
        """Bind sizes that appear only in dimensions such as ``8*m`` or ``m + 2``: each dimension that is
        affine in a single unbound size gives that size (it must divide exactly)."""
        pindex = {id(p): k for k, p in enumerate(self.params)}
        progress = True
        while progress and None in values:
            progress = False
            for spec, arr in zip(self.specs, arrays):
                for k, d in enumerate(spec.dims if arr is not None else ()):
                    if not (isinstance(d, tuple) and d[0] == "expr"):
                        continue
                    terms, const = linear(d[1])
                    unknown = [key for key in terms if key[0] != "var" or values[pindex.get(key[1], -1)] is None]
                    if len(unknown) != 1 or unknown[0][0] != "var" or unknown[0][1] not in pindex:
                        continue
                    known = sum(c * values[pindex[key[1]]] for key, c in terms.items()
                                if key not in unknown)
                    coeff, rest = terms[unknown[0]], arr.shape[k] - const - known
                    if rest % coeff:
                        p = self.params[pindex[unknown[0][1]]].name
                        raise ValueError(f"argument {spec.name}: dimension {k} is {arr.shape[k]}, which is not "
                                         f"{d[1]!r} for any integer {p}")
                    values[pindex[unknown[0][1]]] = rest // coeff
                    progress = True

    def expected_shape(self, spec: ArgumentSpec, values: list[int]) -> tuple[int, ...]:
        out = []
        for d in spec.dims:
            if isinstance(d, int):
                out.append(d)
            elif d[0] == "param":
                out.append(values[d[1]])
            else:
                out.append(evaluate_size(d[1], dict(zip(map(id, self.params), values))))
        return tuple(out)

    def check(self, spec: ArgumentSpec, arr: np.ndarray, values: list[int]) -> None:
        """Dtype, shape, contiguity and writeability of array ``arr`` given for ``spec``."""
        if arr.dtype != spec.dtype:
            raise TypeError(f"argument {spec.name}: expected dtype {spec.dtype}, got {arr.dtype}")
        shape = self.expected_shape(spec, values)
        if arr.shape != shape:
            raise ValueError(f"argument {spec.name}: expected shape {shape}, got {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"argument {spec.name}: array is not C-contiguous (use np.ascontiguousarray)")
        if spec.is_output and not arr.flags.writeable:
            raise ValueError(f"argument {spec.name}: output array is read-only")

    def checked(self, arrays: tuple) -> tuple[list, list, list[int], list[tuple[np.ndarray, np.ndarray]]]:
        """Validate (and complete with new outputs) the arguments: (arrays C reads, new outputs, sizes, and
        the (given output, aligned copy) pairs to copy back after the call)."""
        n_all = len(self.specs)
        allocate = len(arrays) == self.n_inputs and self.n_inputs != n_all
        if allocate and not self.inputs_first:
            raise TypeError(f"{self.name}: outputs can be omitted only when inputs come first in the "
                            "argument list; pass all arguments")
        if not allocate and len(arrays) != n_all:
            raise TypeError(f"{self.name} takes {n_all} arrays ({', '.join(s.name for s in self.specs)}) "
                            f"or its {self.n_inputs} inputs, got {len(arrays)}")
        args = list(arrays) + [None] * (n_all - len(arrays))
        for spec, arr in zip(self.specs, arrays):
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"argument {spec.name}: expected a numpy.ndarray, got {type(arr).__name__}")
        for spec, arr in zip(self.specs, args):
            if arr is not None and arr.ndim != len(spec.dims):
                raise ValueError(f"argument {spec.name}: expected {len(spec.dims)} dimensions, got {arr.ndim}")
        values = self.bind(args) if self.params else []
        outputs = []
        write_back = []
        for k, spec in enumerate(self.specs):
            if args[k] is None:
                args[k] = np.empty(self.expected_shape(spec, values), spec.dtype)
                outputs.append(args[k])
            else:
                self.check(spec, args[k], values)
                if spec.is_output:
                    for j, other in enumerate(args):
                        if j != k and other is not None and np.may_share_memory(args[k], other):
                            raise ValueError(f"argument {spec.name}: output overlaps argument "
                                             f"{self.specs[j].name} in memory")
        for k, spec in enumerate(self.specs):
            buffer, copied = readable(args[k], spec.dtype)
            if copied and spec.is_output:
                write_back.append((args[k], buffer))
            args[k] = buffer
        self.allocations.check_sizes(self.value_map(values))
        return args, outputs, values, write_back

    def value_map(self, values: list[int]) -> dict[int, int]:
        return dict(zip(map(id, self.params), values))
