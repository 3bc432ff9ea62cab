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

from pathlib import Path
from typing import Any, Callable

import numpy as np

from tesched.codegen.c import CSource
from tesched.codegen.signature import Signature, signature_of
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.arguments import KernelArguments
from tesched.driver.arrays import as_array, like, torch_module
from tesched.driver.call import ArgSpec, Program, StepFailed, address, describable, helper_available, value_slots
from tesched.driver.export import export_kernel, export_kernel_c
from tesched.driver.manifest import BuildRecord
from tesched.driver.profile import Profile, measure_profile, read_profile
from tesched.driver.scalars import ScalarParams
from tesched.driver.threads import sync_thread
from tesched.driver.timing import BenchmarkResult, time_calls
from tesched.errors import BoundsError
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import write_page
from tesched.target import Target, as_target
from tesched.te import dtype as dt


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
        self._allocations = allocations or Allocations(self.name, signature.allocations, evaluate_size,
                                                          signature.checks)
        self._args = KernelArguments(self.name, signature, self._allocations)
        self._specs = self._args.specs
        self._scalars = ScalarParams(self.name, signature.scalars, len(self._specs))
        self._through_helper = func is not None or helper_available()   # else: no compiler, calls through cffi
        self._address = int(self._ffi.cast("uintptr_t", self._ffi.addressof(module.lib, src.argv))) if src.argv else 0
        arg_dims = self._args.arg_dims()
        checkable = arg_dims is not None and all(describable(s.dtype) for s in self._specs)
        n_args, n_params, n_scalars = len(self._specs), len(self._args.params), len(signature.scalars)
        self._program: Program | None = None
        if checkable and arg_dims is not None and self._address and self._through_helper:
            scalar_specs = [ArgSpec(dt.numpy_dtype(p.dtype), (), False, n_args + k)
                            for k, p in enumerate(signature.scalars)]
            self._program = Program(
                [ArgSpec(s.dtype, d, s.is_output, k) for k, (s, d) in enumerate(zip(self._specs, arg_dims))]
                + scalar_specs, [0] * (n_args + n_scalars),
                [(self._address, list(range(n_args)) + [-p - 1 for p in range(n_params)]
                  + list(range(n_args, n_args + n_scalars)))], n_params=n_params)

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.dtype}" for p in self.signature.scalars)
        return f"Kernel({self.name!r}, args=[{', '.join(s.name for s in self._specs)}]" \
            + (f", params=[{params}])" if params else ")")

    def __call__(self, *arrays: Any, **params: Any) -> Any:
        """``f(inputs..., outputs...)`` writes outputs in place; ``f(inputs...)`` returns new outputs (torch
        tensors when an argument is one). Arguments may be any arrays :func:`~.arrays.as_array` reads.
        The values of runtime parameters (``ts.param``) follow the arrays, or are passed by keyword
        (``f(a, out, sigma=2.0)``)."""
        sync_thread()
        arrays, values = self._scalars.split(arrays, params)
        try:
            return self._call(arrays, values)
        except StepFailed as failure:
            raise self.allocation_error(failure.status, arrays) from None

    def allocation_error(self, status: int, arrays: tuple = ()) -> Exception:
        """The error for the kernel's nonzero return ``status`` (``MemoryError`` for a failed allocation,
        ``BoundsError`` for a data-dependent index outside its tensor), with the sizes ``arrays`` bind."""
        values: dict[int, int] = {}
        if self._args.params:
            try:
                values = self._args.value_map(self._args.bind([as_array(a, "argument") for a in arrays]))
            except (TypeError, ValueError):
                values = {}
        try:
            self._allocations.raise_for(status, values)
        except (MemoryError, BoundsError) as err:
            return err
        return MemoryError(f"{self.name}: failed with code {status}")

    def _call(self, arrays: tuple, values: tuple[np.ndarray, ...]) -> Any:
        program = self._program
        if program is not None and program.run(arrays + values):
            return None
        torch = torch_module(arrays)
        arrays = tuple(as_array(a, f"argument {s.name}") for s, a in zip(self._specs, arrays)) + \
            arrays[len(self._specs):]
        if program is not None and self._args.output_shapes is not None and len(arrays) == self._args.n_inputs:
            outputs = [np.empty(shape, dtype) for shape, dtype in self._args.output_shapes]
            if program.run(arrays + tuple(outputs) + values):
                return self._returned(outputs, torch)
        elif program is not None and program.run(arrays + values):
            return None
        args, outputs, sizes, write_back = self._args.checked(arrays)
        self._invoke(args, sizes, values)
        _copy_back(write_back)
        return self._returned(outputs, torch) if outputs else None

    @staticmethod
    def _returned(outputs: list[np.ndarray], torch: Any) -> Any:
        converted = [like(o, torch) for o in outputs]
        return converted[0] if len(converted) == 1 else tuple(converted)

    def _invoke(self, args: list, sizes: list[int], values: tuple[np.ndarray, ...]) -> None:
        """Run the kernel on checked arrays, sizes and parameter values."""
        if self._program is not None:
            if not self._program.run(tuple(args) + values):
                raise TypeError(f"{self.name}: the arguments passed the checks but their buffers could not be read")
            return
        from_buffer = self._ffi.from_buffer
        status = self._fn(*[from_buffer(spec.ctype, a) for spec, a in zip(self._specs, args)], *sizes,
                          *[v.item() for v in values])
        if status:
            raise StepFailed(0, status)

    def prepare(self, *arrays: Any, **params: Any) -> Callable[[], Any]:
        """Check the arguments once and return a function of no arguments that runs the kernel on them
        (for calls in a loop: it skips the per-call checks). Omitted outputs are allocated here and
        returned by each call; runtime parameters keep the values given here."""
        given = arrays
        arrays, scalars = self._scalars.split(arrays, params)
        torch = torch_module(arrays)
        args, outputs, values, write_back = self._args.checked(
            tuple(as_array(a, f"argument {s.name}") for s, a in zip(self._specs, arrays)) + arrays[len(self._specs):])
        result = None if not outputs else [like(o, torch) for o in outputs]
        value_map = self._args.value_map(values)
        if write_back:       # outputs read through aligned copies: the plain call copies them back each time
            return lambda: self(*given, **params)
        if not self._through_helper or not self._address:
            return _direct_run(self, args, values, scalars, None if result is None else
                               (result[0] if len(result) == 1 else tuple(result)))
        sizes, size_addresses = value_slots(values)
        words = [address(a) for a in args] + size_addresses + [address(v) for v in scalars]
        program = Program([], words, [(self.address, range(len(words)))], keep=(args, sizes, scalars))

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
        """The address of the compiled function's argv form ``int f(void *const *args)`` (see
        :mod:`tesched.codegen.argv`), or 0 for a library exported without one."""
        return self._address

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
                  warmup: int = 1, **params: Any) -> BenchmarkResult:
        """Median and minimum seconds per call over ``repeat`` timings of ``number`` calls each
        (``params``: the values of runtime parameters)."""
        return time_calls(lambda: self(*arrays, **params), repeat, number, warmup)

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

    def profile(self, *arrays: np.ndarray, repeat: int = 20, **params: Any) -> Profile:
        """Time every stage over ``repeat`` calls on ``arrays`` (and runtime parameters ``params``), in
        turns with the same kernel built without timers, so the result reports what the timers cost
        (``Profile.overhead``). The result is also kept in ``last_profile`` (``to_html`` draws it)."""
        read = self._reader()
        assert self.uninstrumented is not None
        plain = self.uninstrumented()
        self.last_profile = measure_profile(self.prepare(*arrays, **params), plain.prepare(*arrays, **params),
                                            read, repeat)
        return self.last_profile

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """Write a self-contained HTML page of this kernel (loop IR beside its C, tiles and halos, stage
        times when profiled; see :func:`tesched.viz.write_kernel_page`) and return its path."""
        return write_page("kernel", self, path, **options)


def _copy_back(write_back: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Outputs given unaligned were computed in aligned copies: copy them into the arrays given."""
    for given, computed in write_back:
        given[...] = computed


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


def _direct_run(kernel: Kernel, args: list, values: list[int], scalars: tuple[np.ndarray, ...],
                result: Any) -> Callable[[], Any]:
    """A closure calling a loaded kernel's entry point through cffi on checked arrays (no call helper)."""
    pointers = [kernel._ffi.from_buffer(spec.ctype, a) for spec, a in zip(kernel._specs, args)] + list(values) \
        + [v.item() for v in scalars]
    value_map = kernel._args.value_map(values)

    def run():
        sync_thread()
        status = kernel._fn(*pointers)
        if status:
            kernel._allocations.raise_for(status, value_map)
        return result

    run.__dict__["arrays"] = args
    return run
