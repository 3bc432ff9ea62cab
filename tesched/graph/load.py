"""Load a graph exported with ``Executable.export_library`` back, without a compiler:
``tesched.graph.load_executable``.

The library's build record (checked for module ABI and CPU features before the library is opened, see
:mod:`tesched.driver.load`) lists the graph's inputs and outputs; a :class:`LoadedExecutable` checks its
arguments against them as an :class:`~.executor.Executable` does (exact dtype and shape, by position or
by name), allocates the outputs and calls the library's entry point (checks and call in one pass of
tesched's C call helper when it is there, else through cffi). When the constants ship in a side file, it
is read from beside the library at load time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tesched.codegen.argv import ARGV_SUFFIX
from tesched.driver.call import ArgSpec, Program, StepFailed, describable, helper_available
from tesched.driver.timing import BenchmarkResult, time_calls
from tesched.driver.load import ExportedLibrary, checked_record, open_library
from tesched.errors import ModuleLoadError
from tesched.graph.ir import Var
from tesched.graph.params import bind_arguments
from tesched.graph.types import TensorType
from tesched.te import dtype as dt


class LoadedExecutable:
    """A graph loaded from an exported library: ``m(x)`` or ``m(data=x)`` returns the output (a tuple when
    the graph has several).

    Attributes
    ----------
    inputs : list of Var
        The graph's inputs (names and types), in call order.
    output_types : list of TensorType
        The types of its outputs.
    build_record : BuildRecord
        What the library was built for.
    """

    def __init__(self, library: ExportedLibrary, inputs: list[Var], output_types: list[TensorType]):
        self.library = library
        self.inputs = inputs
        self.output_types = output_types
        self.build_record = library.record
        self._fn = getattr(library.lib, library.record.entry)
        types = [v.tensor_type for v in inputs] + output_types
        self._ctypes = [f"{dt.C_TYPES[t.dtype]}[]" for t in types]
        self._program = None
        dtypes = [dt.numpy_dtype(t.dtype) for t in types]
        if all(map(describable, dtypes)) and helper_available():   # checks and call in one C pass
            argv = library.ffi.addressof(library.lib, library.record.entry + ARGV_SUFFIX)
            address = int(library.ffi.cast("uintptr_t", argv))
            specs = [ArgSpec(d, t.shape, k >= len(inputs), k) for k, (d, t) in enumerate(zip(dtypes, types))]
            self._program = Program(specs, [0] * len(types), [(address, list(range(len(types))))])

    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray) -> Any:
        """Run the graph on ``args`` (by position) and ``kwargs`` (by input name); returns new arrays."""
        outputs = [np.empty(t.shape, dt.numpy_dtype(t.dtype)) for t in self.output_types]
        try:
            if self._program is None or kwargs or not self._program.run(args + tuple(outputs)):
                self._checked_call(bind_arguments(self.inputs, args, kwargs), outputs)
        except StepFailed as failure:
            self.library.raise_status(failure.status)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _checked_call(self, arrays: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        """Call the entry point on checked arrays."""
        if self._program is not None:
            if not self._program.run(tuple(arrays + outputs)):
                raise TypeError(f"{self!r}: the inputs passed the checks but their buffers could not be read")
            return
        from_buffer = self.library.ffi.from_buffer
        status = self._fn(*[from_buffer(c, a) for c, a in zip(self._ctypes, arrays + outputs)])
        if status:
            self.library.raise_status(status)

    def benchmark(self, *args: np.ndarray, repeat: int = 20, warmup: int = 2, **kwargs: np.ndarray) -> BenchmarkResult:
        """Median and minimum seconds per call of the whole graph over ``repeat`` calls."""
        return time_calls(lambda: self(*args, **kwargs), repeat, warmup=warmup)

    def __repr__(self) -> str:
        record = self.build_record
        return (f"LoadedExecutable({self.library.path.name}: {', '.join(v.name for v in self.inputs)} -> "
                f"{len(self.output_types)} output(s), target {record.target}, "
                f"{len(record.contents['kernels'])} kernels)")


def load_executable(path: str | Path) -> LoadedExecutable:
    """Load a graph exported with ``Executable.export_library`` (a shared object), without a compiler.

    Parameters
    ----------
    path : str or Path
        The ``.so`` file; a constants file it ships (``<name>.constants``) must sit beside it.

    Returns
    -------
    LoadedExecutable
        Called like the executable it was exported from.

    Raises
    ------
    ModuleLoadError
        Not an exported graph, another module ABI, a CPU feature missing, or its constants file missing or
        not its own.

    Example
    -------
    >>> m = G.load_executable("model.so")          # doctest: +SKIP
    >>> out = m(data)                              # doctest: +SKIP
    """
    record = checked_record(path, "graph")
    try:
        inputs = [Var(str(v["name"]), TensorType(tuple(v["shape"]), str(v["dtype"])))
                  for v in record.contents["inputs"]]
        outputs = [TensorType(tuple(v["shape"]), str(v["dtype"])) for v in record.contents["outputs"]]
        constants_file = record.contents["constants"]["file"]
    except (KeyError, TypeError, ValueError) as err:
        raise ModuleLoadError(f"{path}: its build record does not describe a graph ({err})") from None
    arguments = [f"const {dt.C_TYPES[v.tensor_type.dtype]} *" for v in inputs] + \
        [f"{dt.C_TYPES[t.dtype]} *" for t in outputs]
    declarations = [f"int {record.entry}({', '.join(arguments)});"]
    if constants_file is not None:
        declarations.append(f"int {record.entry}_load_constants(const char *path);")
    library = open_library(path, record, declarations)
    if constants_file is not None:
        side = Path(path).resolve().parent / str(constants_file)
        status = getattr(library.lib, f"{record.entry}_load_constants")(str(side).encode())
        if status:
            library.raise_status(status)
    return LoadedExecutable(library, inputs, outputs)
