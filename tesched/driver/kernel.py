"""A compiled kernel: checks its array arguments, binds symbolic sizes, and calls the C function.

Every argument is checked before any pointer reaches C: it must be an array of the exact dtype, the
declared shape (symbolic sizes must agree across arguments and be positive), C-contiguous, and, for
outputs, writeable and not overlapping another argument. The checks run in one C pass over the buffers
(:mod:`.call`); when it fails, the same checks in Python raise ``TypeError`` or ``ValueError`` naming the
argument. Arguments may be NumPy arrays, DLPack tensors (``torch.Tensor``) or anything with the array
interface (:mod:`.arrays`), read without copying. Outputs may be omitted: they are then allocated and
returned, as torch tensors when an argument was one. A heap buffer that cannot be allocated raises
``MemoryError`` naming it (:mod:`.allocations`): the kernel returns an error code, never aborts.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tesched.arith.linear import linear
from tesched.codegen.c import CSource
from tesched.codegen.signature import Signature, signature_of
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.arrays import as_array, like, torch_module
from tesched.driver.call import ArgSpec, Program, StepFailed, address, describable, helper_available
from tesched.driver.export import export_kernel, export_kernel_c
from tesched.driver.manifest import BuildRecord
from tesched.driver.profile import Profile, measure_profile, read_profile
from tesched.driver.threads import sync_thread
from tesched.errors import BoundsError
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import write_page
from tesched.target import Target, as_target
from tesched.te import dtype as dt
from tesched.te.expr import Var


@dataclass(frozen=True)
class BenchmarkResult:
    median: float
    min: float
    repeat: int

    def __str__(self) -> str:
        return f"median {self.median * 1e6:.1f} us, min {self.min * 1e6:.1f} us over {self.repeat} runs"


@dataclass(frozen=True)
class _ArgSpec:
    name: str
    dtype: np.dtype
    ctype: str
    dims: tuple            # per dimension: int, or ("param", k), or ("expr", Expr)
    is_output: bool


class Kernel:
    """A callable compiled kernel. ``c_source`` is its C code, ``lowered`` its loop IR (None for a kernel
    loaded from an exported library: ``build_record`` then says what it was built for)."""

    compiled: bool = False     # whether building it ran the C compiler (False: found in the cache)
    cache_key: str = ""        # the hash under which the compiled module is cached
    target: Target | None = None                    # what it was built for
    timed_regions: tuple = ()                       # profile counters (build(..., profile=True))
    uninstrumented: Callable[[], "Kernel"] | None = None   # builds the same kernel without timers
    last_profile: Profile | None = None             # the latest profile() measurement
    build_record: BuildRecord | None = None         # for a kernel loaded by tesched.load_module

    def __init__(self, func: LoweredFunc | None, src: CSource, module: Any, signature: Signature | None = None,
                 allocations: Allocations | None = None):
        """A kernel built from lowered function ``func`` into ``module`` (cffi's), or, for an exported library
        loaded back, from its recorded ``signature`` (``allocations`` then turns a nonzero status into the
        library's own error; without a C compiler to build the call helper, calls go through cffi)."""
        if signature is None:
            if func is None:
                raise TypeError("Kernel needs a lowered function or a signature")
            signature = signature_of(func, src.allocations, src.checks)
        self.lowered = func
        self.signature = signature
        self.name = signature.name
        self.c_source = src.source
        self._ffi = module.ffi
        self._fn = getattr(module.lib, src.name)
        self._profile_reader = getattr(module.lib, src.profile) if src.profile else None
        self._params = list(signature.params)
        pindex = {id(p): k for k, p in enumerate(self._params)}
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
            specs.append(_ArgSpec(arg.name, dt.numpy_dtype(arg.dtype), f"{dt.C_TYPES[arg.dtype]}[]", tuple(dims),
                                  arg.is_output))
        self._specs = specs
        self._n_inputs = sum(not s.is_output for s in specs)
        self._inputs_first = all(not s.is_output for s in specs[:self._n_inputs])
        self._output_shapes = [(s.dims, s.dtype) for s in specs if s.is_output] \
            if self._inputs_first and not self._params else None
        self._allocations = allocations or Allocations(self.name, signature.allocations, evaluate_size,
                                                          signature.checks)
        self._through_helper = func is not None or helper_available()   # else: no compiler, calls through cffi
        function = self._ffi.addressof(module.lib, src.name) if func is not None else self._fn
        self._address = int(self._ffi.cast("uintptr_t", function))
        arg_dims = self.arg_dims()
        checkable = arg_dims is not None and all(describable(s.dtype) for s in specs)
        self._program = None if not checkable or arg_dims is None or not self._through_helper else Program(
            [ArgSpec(s.dtype, d, s.is_output, k) for k, (s, d) in enumerate(zip(specs, arg_dims))], [0] * len(specs),
            [(self._address, list(range(len(specs))) + [-p - 1 for p in range(len(self._params))], True)],
            n_params=len(self._params))

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, args=[{', '.join(s.name for s in self._specs)}])"

    # argument checking ----------------------------------------------------------------------------
    def _bind(self, arrays: list) -> list[int]:
        values: list[int | None] = [None] * len(self._params)
        for spec, arr in zip(self._specs, arrays):
            if arr is None:
                continue
            for k, d in enumerate(spec.dims):
                if isinstance(d, tuple) and d[0] == "param":
                    got = arr.shape[k]
                    if values[d[1]] is None:
                        values[d[1]] = got
                    elif values[d[1]] != got:
                        p = self._params[d[1]].name
                        raise ValueError(f"argument {spec.name}: dimension {k} is {got}, but size {p} is "
                                         f"{values[d[1]]} from an earlier argument")
        self._solve_affine_sizes(arrays, values)
        sizes: list[int] = []
        for k, v in enumerate(values):
            if v is None:
                raise ValueError(f"size {self._params[k].name} cannot be inferred from the inputs; "
                                 "pass the output arrays")
            if v < 1:
                raise ValueError(f"size {self._params[k].name} must be positive, got {v}")
            sizes.append(v)
        return sizes

    def _solve_affine_sizes(self, arrays: list, values: list[int | None]) -> None:
        """Bind sizes that appear only in dimensions such as ``8*m`` or ``m + 2``: each dimension that is
        affine in a single unbound size gives that size (it must divide exactly)."""
        pindex = {id(p): k for k, p in enumerate(self._params)}
        progress = True
        while progress and None in values:
            progress = False
            for spec, arr in zip(self._specs, arrays):
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
                        p = self._params[pindex[unknown[0][1]]].name
                        raise ValueError(f"argument {spec.name}: dimension {k} is {arr.shape[k]}, which is not "
                                         f"{d[1]!r} for any integer {p}")
                    values[pindex[unknown[0][1]]] = rest // coeff
                    progress = True

    def _expected_shape(self, spec: _ArgSpec, values: list[int]) -> tuple[int, ...]:
        out = []
        for d in spec.dims:
            if isinstance(d, int):
                out.append(d)
            elif d[0] == "param":
                out.append(values[d[1]])
            else:
                out.append(evaluate_size(d[1], dict(zip(map(id, self._params), values))))
        return tuple(out)

    def _check(self, spec: _ArgSpec, arr: object, values: list[int]) -> None:
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"argument {spec.name}: expected a numpy.ndarray, got {type(arr).__name__}")
        if arr.dtype != spec.dtype:
            raise TypeError(f"argument {spec.name}: expected dtype {spec.dtype}, got {arr.dtype}")
        shape = self._expected_shape(spec, values)
        if arr.shape != shape:
            raise ValueError(f"argument {spec.name}: expected shape {shape}, got {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"argument {spec.name}: array is not C-contiguous (use np.ascontiguousarray)")
        if spec.is_output and not arr.flags.writeable:
            raise ValueError(f"argument {spec.name}: output array is read-only")

    def _checked(self, arrays: tuple) -> tuple[list, list, list[int]]:
        """Validate (and complete with new outputs) the arguments: (arrays, new outputs, sizes)."""
        n_all = len(self._specs)
        allocate = len(arrays) == self._n_inputs and self._n_inputs != n_all
        if allocate and not self._inputs_first:
            raise TypeError(f"{self.name}: outputs can be omitted only when inputs come first in the "
                            "argument list; pass all arguments")
        if not allocate and len(arrays) != n_all:
            raise TypeError(f"{self.name} takes {n_all} arrays ({', '.join(s.name for s in self._specs)}) "
                            f"or its {self._n_inputs} inputs, got {len(arrays)}")
        args = list(arrays) + [None] * (n_all - len(arrays))
        for spec, arr in zip(self._specs, arrays):
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"argument {spec.name}: expected a numpy.ndarray, got {type(arr).__name__}")
        for spec, arr in zip(self._specs, args):
            if arr is not None and not isinstance(arr, np.ndarray):
                raise TypeError(f"argument {spec.name}: expected a numpy.ndarray, got {type(arr).__name__}")
            if arr is not None and arr.ndim != len(spec.dims):
                raise ValueError(f"argument {spec.name}: expected {len(spec.dims)} dimensions, got {arr.ndim}")
        values = self._bind(args) if self._params else []
        outputs = []
        for k, spec in enumerate(self._specs):
            if args[k] is None:
                args[k] = np.empty(self._expected_shape(spec, values), spec.dtype)
                outputs.append(args[k])
            else:
                self._check(spec, args[k], values)
                if spec.is_output:
                    for j, other in enumerate(args):
                        if j != k and other is not None and np.may_share_memory(args[k], other):
                            raise ValueError(f"argument {spec.name}: output overlaps argument "
                                             f"{self._specs[j].name} in memory")
        self._allocations.check_sizes(self._value_map(values))
        return args, outputs, values

    def _value_map(self, values: list[int]) -> dict[int, int]:
        return dict(zip(map(id, self._params), values))

    def __call__(self, *arrays: Any) -> Any:
        """``f(inputs..., outputs...)`` writes outputs in place; ``f(inputs...)`` returns new outputs (torch
        tensors when an argument is one). Arguments may be any arrays :func:`~.arrays.as_array` reads."""
        sync_thread()
        try:
            return self._call(arrays)
        except StepFailed as failure:
            raise self.allocation_error(failure.status, arrays) from None

    def allocation_error(self, status: int, arrays: tuple = ()) -> Exception:
        """The error for the kernel's nonzero return ``status`` (``MemoryError`` for a failed allocation,
        ``BoundsError`` for a data-dependent index outside its tensor), with the sizes ``arrays`` bind."""
        values: dict[int, int] = {}
        if self._params:
            try:
                values = self._value_map(self._bind([as_array(a, "argument") for a in arrays]))
            except (TypeError, ValueError):
                values = {}
        try:
            self._allocations.raise_for(status, values)
        except (MemoryError, BoundsError) as err:
            return err
        return MemoryError(f"{self.name}: failed with code {status}")

    def _call(self, arrays: tuple) -> Any:
        program = self._program
        if program is not None and program.run(arrays):
            return None
        torch = torch_module(arrays)
        arrays = tuple(as_array(a, f"argument {s.name}") for s, a in zip(self._specs, arrays)) + \
            arrays[len(self._specs):]
        if program is not None and self._output_shapes is not None and len(arrays) == self._n_inputs:
            outputs = [np.empty(shape, dtype) for shape, dtype in self._output_shapes]
            if program.run(arrays + tuple(outputs)):
                return self._returned(outputs, torch)
        elif program is not None and program.run(arrays):
            return None
        args, outputs, values = self._checked(arrays)
        self._invoke(args, values)
        return self._returned(outputs, torch) if outputs else None

    @staticmethod
    def _returned(outputs: list[np.ndarray], torch: Any) -> Any:
        converted = [like(o, torch) for o in outputs]
        return converted[0] if len(converted) == 1 else tuple(converted)

    def _invoke(self, args: list, values: list[int]) -> None:
        """Run the kernel on checked arrays and sizes."""
        if self._program is not None:
            if not self._program.run(tuple(args)):
                raise TypeError(f"{self.name}: the arguments passed the checks but their buffers could not be read")
            return
        from_buffer = self._ffi.from_buffer
        status = self._fn(*[from_buffer(spec.ctype, a) for spec, a in zip(self._specs, args)], *values)
        if status:
            raise StepFailed(0, status)

    def prepare(self, *arrays: Any) -> Callable[[], Any]:
        """Check the arguments once and return a function of no arguments that runs the kernel on them
        (for calls in a loop: it skips the per-call checks). Omitted outputs are allocated here and
        returned by each call."""
        torch = torch_module(arrays)
        args, outputs, values = self._checked(tuple(as_array(a, f"argument {s.name}")
                                                    for s, a in zip(self._specs, arrays)) + arrays[len(self._specs):])
        result = None if not outputs else [like(o, torch) for o in outputs]
        value_map = self._value_map(values)
        if not self._through_helper:
            return _direct_run(self, args, values, None if result is None else
                               (result[0] if len(result) == 1 else tuple(result)))
        words = [address(a) for a in args] + list(values)
        program = Program([], words, [(self.address, range(len(words)), True)], keep=args)

        def failed(status: int) -> Exception:
            try:
                self._allocations.raise_for(status, value_map)
            except (MemoryError, BoundsError) as err:
                return err
            return MemoryError(f"{self.name}: failed with code {status}")
        return _bind_run(program.runner(), program, None if result is None else
                         (result[0] if len(result) == 1 else tuple(result)), failed)

    @property
    def address(self) -> int:
        """The address of the compiled C function."""
        return self._address

    def arg_dims(self) -> list[tuple[int, ...]] | None:
        """Per argument its dimensions as a program reads them (an extent, or ``-(p + 1)`` for symbolic
        size ``p``); ``None`` when a dimension is an expression of the sizes."""
        dims = []
        for spec in self._specs:
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

    def export_library(self, path: str | Path, static: bool | None = None, target: Target | str | None = None,
                       name: str | None = None) -> Path:
        """Compile the kernel into a C library that needs neither Python nor tesched to run.

        Writes ``path`` (a shared object, or with ``static`` an archive) and, beside it, the header
        ``<name>.h`` declaring ``int <name>(const float *in..., float *out..., int64_t size...)``: the
        buffers in the build's argument order, then the symbolic sizes; it returns 0 or an error code
        with a message (see the header). :func:`tesched.load_module` loads a shared object back.

        Parameters
        ----------
        path : str or Path
            The library to write (``.so``, or ``.a`` for a static archive).
        static : bool, optional
            Write a static archive; default: whether ``path`` ends with ``.a``.
        target : Target or str, optional
            The instruction set to compile for (e.g. ``"x86-64-avx2"`` for a machine without AVX-512);
            default: the target the kernel was built for.
        name : str, optional
            The C entry point's name; default: the kernel's name.

        Returns
        -------
        Path
            The library written.

        Example
        -------
        >>> f.export_library("conv_relu.so")          # doctest: +SKIP
        PosixPath('conv_relu.so')
        """
        func, machine = self._exportable(target)
        return export_kernel(func, machine, path, static, name)

    def export_c(self, directory: str | Path, target: Target | str | None = None,
                 name: str | None = None) -> list[Path]:
        """Write the kernel as C sources into ``directory``: the kernel, its entry point, the header, the
        runtime headers and a Makefile (``make`` builds ``<name>.so`` and ``lib<name>.a``).

        Parameters
        ----------
        directory : str or Path
            Where to write (created if needed).
        target : Target or str, optional
            The instruction set the Makefile compiles for; default: the kernel's target.
        name : str, optional
            The C entry point's name; default: the kernel's name.

        Returns
        -------
        list of Path
            The files written.
        """
        func, machine = self._exportable(target)
        return export_kernel_c(func, machine, directory, name)

    def _exportable(self, target: Target | str | None) -> tuple[LoweredFunc, Target]:
        if self.lowered is None:
            raise TypeError(f"kernel {self.name} was loaded from an exported library and has no loop IR to "
                            "compile again: copy its library file instead")
        return self.lowered, as_target(target if target is not None else self.target)

    def benchmark(self, *arrays: np.ndarray, repeat: int = 20, number: int = 1,
                  warmup: int = 1) -> BenchmarkResult:
        """Median and minimum seconds per call over ``repeat`` timings of ``number`` calls each."""
        return time_calls(lambda: self(*arrays), repeat, number, warmup)

    # profiling --------------------------------------------------------------------------------------
    def _reader(self) -> Callable[[bool], Profile]:
        reader = self._profile_reader
        if reader is None:
            raise ValueError(f"{self.name} was built without timers; build it with profile=True")
        return lambda reset: read_profile(reader, self._ffi, self.timed_regions, reset)

    def profile_counters(self, reset: bool = False) -> Profile:
        """Per-call stage times over every call so far (``profile=True`` builds only); ``reset`` zeroes
        the counters. Kernels with the same C source share their counters."""
        return self._reader()(reset)

    def profile(self, *arrays: np.ndarray, repeat: int = 20) -> Profile:
        """Time every stage over ``repeat`` calls on ``arrays``, in turns with the same kernel built
        without timers, so the result reports what the timers cost (``Profile.overhead``). The result is
        also kept in ``last_profile`` (``to_html`` draws it)."""
        read = self._reader()
        assert self.uninstrumented is not None
        plain = self.uninstrumented()
        self.last_profile = measure_profile(self.prepare(*arrays), plain.prepare(*arrays), read, repeat)
        return self.last_profile

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """Write a self-contained HTML page of this kernel (loop IR beside its C, tiles and halos, stage
        times when profiled; see :func:`tesched.viz.write_kernel_page`) and return its path."""
        return write_page("kernel", self, path, **options)


def time_calls(call: Callable[[], object], repeat: int, number: int = 1, warmup: int = 1) -> BenchmarkResult:
    """Median and minimum seconds per call of ``call`` over ``repeat`` timings of ``number`` calls each,
    after ``warmup`` untimed calls.

    Parameters
    ----------
    call : callable
        What to time, called without arguments.
    repeat, number, warmup : int
        Timings, calls per timing, untimed calls first.

    Returns
    -------
    BenchmarkResult
    """
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - t0) / number)
    return BenchmarkResult(statistics.median(times), min(times), repeat)


def _bind_run(runner: Callable[[], None], program: Program, result: Any,
              failed: Callable[[int], Exception]) -> Callable[[], Any]:
    """A closure running a prepared program; it holds the program (and so its arrays), and raises
    ``failed(status)`` when the kernel reports a failed allocation."""
    def run():
        sync_thread()
        try:
            runner()
        except StepFailed as failure:
            raise failed(failure.status) from None
        return result

    run.__dict__["program"] = program
    return run


def _direct_run(kernel: Kernel, args: list, values: list[int], result: Any) -> Callable[[], Any]:
    """A closure calling a loaded kernel's entry point through cffi on checked arrays (no call helper)."""
    pointers = [kernel._ffi.from_buffer(spec.ctype, a) for spec, a in zip(kernel._specs, args)] + list(values)
    value_map = kernel._value_map(values)

    def run():
        sync_thread()
        status = kernel._fn(*pointers)
        if status:
            kernel._allocations.raise_for(status, value_map)
        return result

    run.__dict__["arrays"] = args
    return run
