"""External C functions a graph can call: their declared signatures, the library that holds them, and
kernels that call them on NumPy arrays.

An :class:`ExternalFunction` declares a C function by name, the shapes of its inputs and of its output
(each dimension an int, or a size name such as ``"N"`` that must take one value across the tensors), and
one dtype for all its tensors. Its calling convention is fixed::

    void NAME(const T *in0, ..., const T *in{n-1}, T *out, int64_t SIZE0, ..., int64_t SIZE{m-1});

- ``T`` is the C type of the dtype (``float`` for float32, ``double``, ``int32_t``, ``uint8_t`` ...,
  ``int8_t`` for bool, ``uint16_t`` holding the bits of a float16 or bfloat16);
- ``in0`` ... are the inputs in declared order, each a C-contiguous row-major array of its shape, read only;
- ``out`` is a C-contiguous row-major array of the output's shape that the function must fill entirely
  (its contents on entry are undefined); it never overlaps an input;
- the ``int64_t`` values are the size names, in order of first appearance reading the input shapes, then
  the output shape, left to right (none when every dimension is an int).

An :class:`ExternalLibrary` holds declared functions and their code: C ``source`` (compiled once by
:mod:`.external_compile` together with the declared prototypes, so a definition that disagrees with its
declaration fails with the compiler's message) or the ``path`` of a shared library (where C carries no
types, so only the presence of each symbol can be checked). Loading is lazy and happens once. Every error
is an :class:`ExternalFunctionError` naming the function and what is wrong. Which graph patterns call
these functions is decided in :mod:`.partition`, not here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import cffi
import numpy as np

from tesched.codegen.argv import argv_function, argv_prototype
from tesched.codegen.names import C_KEYWORDS
from tesched.errors import BuildError, TeschedError
from tesched.graph.external_compile import SIGNATURES_FILE, CompileFailure, compile_shared_library
from tesched.graph.types import TensorType
from tesched.te import dtype as dt

Dim = int | str
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ExternalFunctionError(TeschedError, ValueError):
    """An external function's declaration, code or use is wrong; the message names the function."""


def _check_identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in C_KEYWORDS:
        raise ExternalFunctionError(f"{what} {name!r} is not a valid C identifier (letters, digits and _, not "
                                    "starting with a digit, not a C keyword or a C library name)")
    return name


def _shape_text(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


@dataclass(frozen=True)
class ExternalFunction:
    """A C function declared to tesched: ``name``, the shapes of its ``inputs`` and ``output`` (ints or
    size names), and the ``dtype`` of all its tensors. See the module doc for its calling convention."""

    name: str
    inputs: tuple[tuple[Dim, ...], ...]
    output: tuple[Dim, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        _check_identifier(self.name, "external function name")
        if isinstance(self.inputs, (str, bytes)) or not isinstance(self.inputs, Sequence):
            raise ExternalFunctionError(f"external function {self.name}: inputs must be a list of shapes")
        shapes = tuple(self._shape(s, f"input {k}") for k, s in enumerate(self.inputs))
        object.__setattr__(self, "inputs", shapes)
        object.__setattr__(self, "output", self._shape(self.output, "the output"))
        try:
            object.__setattr__(self, "dtype", dt.normalize(self.dtype))
        except TypeError as err:
            raise ExternalFunctionError(f"external function {self.name}: {err}") from None

    def _shape(self, shape: object, what: str) -> tuple[Dim, ...]:
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
            raise ExternalFunctionError(f"external function {self.name}: the shape of {what} must be a tuple of "
                                        f"ints and size names, got {shape!r}")
        for d in shape:
            if isinstance(d, str):
                _check_identifier(d, f"external function {self.name}: size name in the shape of {what},")
            elif isinstance(d, bool) or not isinstance(d, int) or d < 1:
                raise ExternalFunctionError(f"external function {self.name}: the shape of {what} has {d!r}; "
                                            "dimensions are positive ints or size names")
        return tuple(shape)

    @property
    def size_names(self) -> tuple[str, ...]:
        """The size names in the order they are passed (first appearance in the inputs, then the output)."""
        names: dict[str, None] = {}
        for shape in (*self.inputs, self.output):
            names.update((d, None) for d in shape if isinstance(d, str))
        return tuple(names)

    def parameter_types(self) -> list[str]:
        """The C types of its parameters: ``const T *`` per input, ``T *`` for the output, then ``int64_t``
        per size name."""
        ctype = dt.C_TYPES[self.dtype]
        return [f"const {ctype} *"] * len(self.inputs) + [f"{ctype} *"] + ["int64_t"] * len(self.size_names)

    def prototype(self, named: bool = True) -> str:
        """The C declaration tesched calls, e.g. ``void f(const float *in0, float *out, int64_t N)``."""
        types = self.parameter_types()
        names = [f"in{k}" for k in range(len(self.inputs))] + ["out"] + list(self.size_names)
        params = [t + n if t.endswith("*") else f"{t} {n}" for t, n in zip(types, names)] if named else types
        return f"void {self.name}({', '.join(params)})"

    def signature_text(self) -> str:
        """The declared shapes, e.g. ``(N, C), (C,) -> (N, C) float32``."""
        return f"{', '.join(map(_shape_text, self.inputs))} -> {_shape_text(self.output)} {self.dtype}"

    def bind(self, input_types: Sequence[TensorType], output_type: TensorType) -> tuple[int, ...]:
        """The values of the size names for tensors of these types, in call order; raises
        :class:`ExternalFunctionError` on a different arity, dtype, rank or dimension."""
        if len(input_types) != len(self.inputs):
            got = ", ".join(map(str, input_types))
            raise ExternalFunctionError(f"external function {self.name} declares {len(self.inputs)} inputs "
                                        f"({self.signature_text()}), but is given {len(input_types)}: {got}")
        values: dict[str, tuple[int, str]] = {}
        tensors = [(f"input {k}", t, s) for k, (t, s) in enumerate(zip(input_types, self.inputs))]
        for what, ty, declared in tensors + [("the output", output_type, self.output)]:
            self._bind_one(what, ty, declared, values)
        return tuple(values[name][0] for name in self.size_names)

    def _bind_one(self, what: str, ty: TensorType, declared: tuple[Dim, ...], values: dict[str, tuple[int, str]]) -> None:
        where = f"external function {self.name}: {what} is {ty}, but the function declares {_shape_text(declared)}"
        if ty.dtype != self.dtype:
            raise ExternalFunctionError(f"external function {self.name}: {what} has dtype {ty.dtype}, but the "
                                        f"function declares {self.dtype}")
        if len(ty.shape) != len(declared):
            raise ExternalFunctionError(f"{where} (rank {len(ty.shape)} instead of {len(declared)})")
        for axis, (got, want) in enumerate(zip(ty.shape, declared)):
            if isinstance(want, int) and got != want:
                raise ExternalFunctionError(f"{where}: dimension {axis} must be {want}, not {got}")
            if isinstance(want, str):
                bound, source = values.setdefault(want, (got, what))
                if bound != got:
                    raise ExternalFunctionError(f"{where}: dimension {axis} ({want}) is {got}, but {want} is "
                                                f"{bound} in {source}")


class ExternalLibrary:
    """Declared external ``functions`` with their code: C ``source`` compiled by tesched (with extra
    ``compile_flags``), or the ``path`` of a shared library. Nothing is compiled or loaded before
    :meth:`load`, which ``tesched.graph.partition`` calls."""

    def __init__(self, functions: Sequence[ExternalFunction], *, source: str | None = None,
                 path: str | Path | None = None, compile_flags: Sequence[str] = ()):
        if (source is None) == (path is None):
            raise ExternalFunctionError("ExternalLibrary: give either source= (C text) or path= (a shared library)")
        if source is not None and not isinstance(source, str):
            raise ExternalFunctionError(f"ExternalLibrary: source must be C text, got {type(source).__name__}")
        self.functions: dict[str, ExternalFunction] = {}
        for fn in functions:
            if not isinstance(fn, ExternalFunction):
                raise ExternalFunctionError(f"ExternalLibrary: expected ExternalFunction declarations, got {fn!r}")
            if fn.name in self.functions:
                raise ExternalFunctionError(f"ExternalLibrary: function {fn.name} is declared twice")
            self.functions[fn.name] = fn
        self.source = source
        self.path = Path(path) if path is not None else None
        self.compile_flags = tuple(compile_flags)
        self._ffi: cffi.FFI | None = None
        self._lib: object = None
        self._shims: tuple[cffi.FFI, Any] | None = None

    @property
    def description(self) -> str:
        """Where the library comes from (its path, or its source), as messages name it."""
        return f"the shared library {self.path}" if self.path is not None else "the library source"

    def __repr__(self) -> str:
        return f"ExternalLibrary({', '.join(self.functions)}; {self.description})"

    def function(self, name: str) -> ExternalFunction:
        """The declaration of ``name``."""
        try:
            return self.functions[name]
        except KeyError:
            raise ExternalFunctionError(f"external function {name} is not declared in {self!r}") from None

    def load(self) -> None:
        """Compile (source) or open (path) the library and find every declared function in it."""
        if self._lib is not None:
            return
        prototypes = [fn.prototype(named=False) + ";" for fn in self.functions.values()]
        path = self.path if self.path is not None else self._compile(prototypes)
        if not path.is_file():
            raise ExternalFunctionError(f"external library {path} does not exist")
        ffi = cffi.FFI()
        ffi.cdef("\n".join(prototypes))
        try:
            lib = ffi.dlopen(str(path.resolve()))
        except OSError as err:
            undefined = re.search(r"undefined symbol: (\w+)", str(err))
            if self.source is not None and undefined:
                raise ExternalFunctionError(f"the library source calls {undefined.group(1)}, which it does not define "
                                            "(to link another library, pass compile_flags=['-l...'])") from None
            raise ExternalFunctionError(f"cannot load external library {path}: {err}") from None
        for name in self.functions:
            try:
                getattr(lib, name)
            except AttributeError:
                hint = "is it defined, and not static?" if self.source is not None else "is it spelled the same?"
                raise ExternalFunctionError(f"external function {name}: no symbol {name} in {self.description} "
                                            f"({hint})") from None
        self._ffi, self._lib = ffi, lib

    def _compile(self, prototypes: list[str]) -> Path:
        assert self.source is not None, "only a library given as source is compiled"
        try:
            return compile_shared_library(self.source, prototypes, self.compile_flags)
        except CompileFailure as failure:
            for name, fn in self.functions.items():
                if f"conflicting types for '{name}'" in failure.messages:
                    raise ExternalFunctionError(
                        f"external function {name}: its definition in the library source does not match its "
                        f"declared signature {fn.signature_text()}, which tesched calls as\n    "
                        f"{fn.prototype()};\ncompiler messages:\n{_relevant(failure.messages, name)}") from None
            raise BuildError(f"the external library source does not compile:\n{failure.messages}") from None

    def argv_address(self, name: str) -> int:
        """The address of ``int f(void *const *args)`` calling function ``name``, whose own address is
        ``args[0]`` and its arguments ``args[1:]`` (arrays by pointer, sizes by the address of their
        ``int64_t``): the one calling convention of tesched's C call path (:mod:`tesched.codegen.argv`),
        compiled once for every function of the library and cached."""
        self.function(name)
        if self._shims is None:
            shims = {fn.name: f"tesched_argv_{fn.name}" for fn in self.functions.values()}
            text = "\n\n".join(argv_function(fn.name, fn.parameter_types(), shims[fn.name], returns_int=False,
                                             by_address=True) for fn in self.functions.values())
            prototypes = [argv_prototype(shim) + ";" for shim in shims.values()]
            ffi = cffi.FFI()
            ffi.cdef("\n".join(prototypes))
            self._shims = ffi, ffi.dlopen(str(compile_shared_library(text, prototypes)))
        ffi, lib = self._shims
        return int(ffi.cast("uintptr_t", ffi.addressof(lib, f"tesched_argv_{name}")))

    def symbol(self, name: str) -> tuple[cffi.FFI, Any]:
        """The loaded FFI and C function ``name``."""
        self.function(name)
        self.load()
        return self._ffi, getattr(self._lib, name)


def _relevant(messages: str, name: str) -> str:
    """The compiler lines about ``name`` (all lines if none mention it)."""
    lines = [line for line in messages.splitlines() if f"'{name}'" in line or SIGNATURES_FILE in line]
    return "\n".join(lines or messages.splitlines())


class ExternalKernel:
    """An external function bound to one set of static shapes: ``kernel(*inputs, out)`` checks the arrays
    and calls the C function with the sizes appended."""

    def __init__(self, library: ExternalLibrary, function: ExternalFunction, input_types: Sequence[TensorType],
                 output_type: TensorType):
        self.name = function.name
        self.function = function
        self.sizes = function.bind(input_types, output_type)
        self.types = [*input_types, output_type]
        self._library = library
        self._ffi, self._fn = library.symbol(function.name)
        self._ctype = dt.C_TYPES[function.dtype] + "[]"

    def __repr__(self) -> str:
        return f"ExternalKernel({self.function.prototype()})"

    @property
    def function_address(self) -> int:
        """The address of the C function (called with the inputs, the output, then ``sizes``)."""
        return int(self._ffi.cast("uintptr_t", self._fn))

    @property
    def address(self) -> int:
        """The address of its argv shim (:meth:`ExternalLibrary.argv_address`): ``args[0]`` is
        :attr:`function_address`, then the inputs, the output and the addresses of the sizes."""
        return self._library.argv_address(self.name)

    def _check(self, k: int, array: object) -> None:
        what = f"{self.name}: {'the output' if k == len(self.types) - 1 else f'input {k}'}"
        ty = self.types[k]
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{what}: expected a numpy.ndarray, got {type(array).__name__}")
        if array.dtype != np.dtype(ty.dtype) or array.shape != ty.shape:
            raise ValueError(f"{what}: expected {ty}, got an array of shape {array.shape} and dtype {array.dtype}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{what}: array is not C-contiguous (use np.ascontiguousarray)")

    def _arguments(self, arrays: tuple[np.ndarray, ...]) -> list:
        """The C arguments for ``arrays`` (inputs, then the output), after checking them."""
        if len(arrays) != len(self.types):
            raise TypeError(f"{self.name} takes {len(self.types) - 1} inputs and the output, got {len(arrays)} arrays")
        for k, array in enumerate(arrays):
            self._check(k, array)
        out = arrays[-1]
        if not out.flags.writeable:
            raise ValueError(f"{self.name}: the output array is read-only")
        if any(np.may_share_memory(out, a) for a in arrays[:-1]):
            raise ValueError(f"{self.name}: the output overlaps an input")
        return [self._ffi.from_buffer(self._ctype, a) for a in arrays] + list(self.sizes)

    def __call__(self, *arrays: np.ndarray) -> None:
        self._fn(*self._arguments(arrays))

    def prepare(self, *arrays: np.ndarray) -> Callable[[], None]:
        """Check the arrays once and return a function of no arguments that calls the C function on them
        (the pointers made by ``from_buffer`` keep the arrays alive)."""
        fn, args = self._fn, self._arguments(arrays)
        return lambda: fn(*args)
