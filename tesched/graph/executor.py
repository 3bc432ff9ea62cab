"""Run a fused graph: an :class:`Executable` compiles one kernel per primitive function (fused group) and
runs the kernels in order, in one C call (:class:`tesched.driver.call.Program`). Each group is lowered in
turn while the kernels before it compile in the background (:func:`tesched.graph.lower.start_primitive`),
with a progress bar of the kernels ready (:mod:`.progress`).

Every value has a pointer slot: the inputs, the constants, the group outputs. Intermediate group outputs
live in one arena allocated at build time and shared by liveness (:mod:`.memory`; ``exe.memory_plan``
reports the peak bytes), so a call allocates nothing: a plain call returns fresh result arrays, taken
from a set allocated by an earlier call when the caller no longer holds any of it (by reference count),
else allocated once more. A group may have several outputs (a tuple-valued primitive function). A group
that only reshapes its input is a view: no kernel runs, its readers read the same memory. The inputs and
results are checked in the same C pass that runs the kernels; inputs may be NumPy arrays, torch tensors
or anything :func:`tesched.driver.arrays.as_array` reads, and results are torch tensors when an input
was one. Because the arena is reused, one executable runs in one thread at a time (another thread gets a
``RuntimeError``). A group that is one call of an external C function (see :mod:`.partition`) is listed
in ``external_calls`` instead of ``kernels``, as is a group that is one ``nn.attention`` (its online-softmax
kernel, :mod:`.attention_kernel`). Passes and fusion happen before, in :mod:`.build`.

Inputs with dynamic dimensions (:class:`~.types.Dim`) make the kernels take those sizes as arguments: each
call binds and range-checks them (:mod:`.size_binding`), passes them to every kernel, and allocates the
results at the bound sizes; the arena is planned at each dim's largest size, so it fits every call.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from tesched.driver.arrays import as_array, like, torch_module
from tesched.driver.call import ArgSpec, Program, StepFailed, address, value_slots
from tesched.driver.kernel import Kernel
from tesched.driver.timing import BenchmarkResult, time_calls
from tesched.errors import BuildError
from tesched.driver.threads import sync_thread
from tesched.graph.dataflow import fold_values, is_view
from tesched.graph.export import export_graph, export_graph_c
from tesched.graph.attention_kernel import compile_attention_group
from tesched.graph.external_op import ExternalCall, compile_external_group
from tesched.graph.ir import Call, Function
from tesched.graph.lower import start_primitive
from tesched.graph.memory import ALIGNMENT, Buffer, MemoryPlan, plan_memory
from tesched.graph.params import bind_arguments
from tesched.graph.passes import FusionReport
from tesched.graph.progress import BuildProgress, kernel_groups
from tesched.graph.size_binding import SizeBinding, Sizes
from tesched.graph.types import TensorType, TupleType, has_dynamic, static_shape
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import write_page
from tesched.target import Target

SPARE_RESULT_SETS = 2
"""Sets of result arrays an executable keeps for plain calls: with two, ``y = exe(x)`` in a loop reuses
the set of the call before the last one, which the caller has let go."""



def aligned_constant(data: np.ndarray) -> np.ndarray:
    """``data`` C-contiguous at an address that is a multiple of :data:`~tesched.graph.memory.ALIGNMENT`
    (itself when it already is): a kernel's SIMD loads of a constant weight then never straddle two cache
    lines, which NumPy's own allocations (16-byte aligned) do not ensure."""
    if data.flags.c_contiguous and address(data) % ALIGNMENT == 0:
        return data
    storage = np.empty(data.nbytes + ALIGNMENT, np.uint8)
    start = -address(storage) % ALIGNMENT
    copy = storage[start:start + data.nbytes].view(data.dtype).reshape(data.shape)
    copy[...] = data
    return copy


def _largest_refcount(arrays: tuple[np.ndarray, ...]) -> int:
    largest = 0
    for a in arrays:
        largest = max(largest, sys.getrefcount(a))
    return largest


_UNHELD_REFCOUNT = _largest_refcount((np.empty(1),))
"""What a loop over a tuple of arrays that only the tuple references sees as their reference count."""


@dataclass(frozen=True)
class CompiledGroup:
    """One fused group: its name, its primitive function and its compiled kernel."""

    name: str
    function: Function
    kernel: Kernel

    @property
    def lowered(self) -> LoweredFunc:
        """The group's loop IR (a group is always built here, never loaded, so it has one)."""
        assert self.kernel.lowered is not None
        return self.kernel.lowered

    @property
    def c_source(self) -> str:
        """The C source of the group's kernel."""
        return self.kernel.c_source


@dataclass
class _Value:
    """A tensor of the run: an input, a constant, or an output of a step (an intermediate or a result)."""

    type: TensorType
    kind: str                      # "input", "constant", "step", or "view" (of ``target``)
    index: int = 0                 # input position, or step number
    data: np.ndarray | None = None  # a constant's array
    last_use: int = -1
    slot: int = -1
    target: "_Value | None" = None  # what a view reads (never itself a view)

    @property
    def root(self) -> "_Value":
        return self.target if self.target is not None else self


@dataclass(frozen=True)
class _Step:
    address: int
    inputs: tuple[_Value, ...]
    outputs: tuple[_Value, ...]
    literals: tuple[int, ...]      # words passed after the pointers (an external function's sizes)
    order: tuple[int, ...] | None  # which inputs the C function takes, in its order (None: all)
    kernel: Kernel | None          # the tesched kernel (which returns a status); None for an external function
    callee: int = 0                # an external function's address, passed to its argv shim first (0: none)
    sizes: tuple[int, ...] = ()    # the dynamic sizes the kernel takes last, as ``-(p + 1)`` for dim ``p``


class Executable:
    """Runs a fused graph: ``exe(x)`` or ``exe(data=x)``; a tuple when the graph has several results.

    ``kernels`` and ``external_calls`` list the compiled groups, ``fusion_report`` says what fused and
    why the rest did not, ``memory_plan`` where the intermediate buffers live.
    """

    pass_history: tuple[tuple[str, Function], ...] = ()   # (pass, graph after it), from the input on

    def __init__(self, function: Function, fusion_report: FusionReport | None = None, schedule: str = "default",
                 tuning_db: str | os.PathLike | None = None, progress: bool | None = None):
        self.function = function
        self.schedule, self.tuning_db = schedule, tuning_db
        self.fusion_report = fusion_report
        self.kernels: list[CompiledGroup] = []
        self.external_calls: list[ExternalCall] = []
        self._inputs = [_Value(p.tensor_type, "input", k) for k, p in enumerate(function.params)]
        self.sizes = SizeBinding([p.tensor_type for p in function.params])
        self._planned: list[Callable[[], _Step]] = []     # each group's step, once its kernel is compiled
        self._progress = BuildProgress(kernel_groups(function), progress)
        try:
            self._result = fold_values(
                function, lambda k, p: self._inputs[k],
                lambda node: _Value(node.tensor_type, "constant", data=aligned_constant(node.data)), self._plan)
            self._steps = [finish() for finish in self._planned]
        finally:
            self._progress.close()
        for v in _leaves_of(self._result):
            v.root.last_use = len(self._steps)
        self._results = list({id(v.root): v.root for v in _leaves_of(self._result) if v.root.kind == "step"}.values())
        self._assign_slots()

    # planning -------------------------------------------------------------------------------------
    def _plan(self, node: Call, args: list[Any]) -> Any:
        """The value of a call of a primitive function: a view of its argument, or a new step's outputs."""
        fn = node.op
        assert isinstance(fn, Function), "a call of a fused group"
        if is_view(fn):
            return _Value(node.tensor_type, "view", target=args[0].root)
        inputs = tuple(a.root for a in args)
        for v in inputs:
            v.last_use = len(self._planned)
        outputs = tuple(_Value(t, "step", len(self._planned)) for t in node.tensor_types())
        self._planned.append(self._compile_group(fn, inputs, outputs))
        return outputs if isinstance(node.checked_type, TupleType) else outputs[0]

    def _compile_group(self, fn: Function, inputs: tuple[_Value, ...],
                       outputs: tuple[_Value, ...]) -> Callable[[], _Step]:
        """The group's step, to take once every group is lowered: its kernel compiles in the background
        meanwhile (an external or attention group's is ready now)."""
        external = compile_external_group(fn) or compile_attention_group(fn)
        if external is not None and has_dynamic(fn.checked_type):
            raise BuildError(f"{external.name}: an external call takes static shapes, but its group {fn.name} "
                             f"has dynamic dimensions ({fn.checked_type})")
        if external is not None:
            self.external_calls.append(external)
            self._progress.step()
            kernel = external.kernel
            step = _Step(kernel.address, inputs, outputs, tuple(kernel.sizes), external.arg_positions, None,
                         kernel.function_address)
            return lambda: step
        pending = start_primitive(fn, self.schedule, self.tuning_db)
        pending.add_done_callback(self._progress.step)

        def finish() -> _Step:
            group = CompiledGroup(fn.name, fn, pending.result())
            self.kernels.append(group)
            sizes = self.sizes.size_args([p.name for p in group.kernel.signature.params], fn.name)
            return _Step(group.kernel.address, inputs, outputs, (), None, group.kernel, sizes=tuple(sizes))
        return finish

    def _assign_slots(self) -> None:
        """Slots in order: inputs, results (both filled by each call), constants, intermediates, literals."""
        ordered: list[_Value] = self._inputs + self._results
        constants: dict[int, _Value] = {}
        intermediates: dict[int, _Value] = {}
        for step in self._steps:
            for v in step.inputs:
                if v.kind == "constant":
                    constants[id(v)] = v
            for v in step.outputs:
                if id(v) not in {id(r) for r in self._results}:
                    intermediates[id(v)] = v
        for v in _leaves_of(self._result):
            if v.root.kind == "constant":
                constants[id(v.root)] = v.root
        ordered += list(constants.values()) + list(intermediates.values())
        for k, v in enumerate(ordered):
            v.slot = k
        self._n_filled = len(self._inputs) + len(self._results)
        buffers = [Buffer(_nbytes(v.type), v.index, max(v.last_use, v.index)) for v in intermediates.values()]
        self.memory_plan: MemoryPlan = plan_memory(buffers)
        self._arena = np.empty(self.memory_plan.peak_bytes + ALIGNMENT, np.uint8)
        base = -address(self._arena) % ALIGNMENT + address(self._arena)
        fixed = [0] * len(ordered)
        for v in constants.values():
            assert v.data is not None, "a constant has its array"
            fixed[v.slot] = address(v.data)
        for v, offset in zip(intermediates.values(), self.memory_plan.offsets):
            fixed[v.slot] = base + offset
        self._fixed = fixed
        literals, literal_addresses = value_slots([word for step in self._steps for word in step.literals])
        self._c_steps: list[tuple[int, list[int]]] = []
        for step in self._steps:
            callee_slots = [len(self._fixed)] if step.callee else []
            self._fixed += [step.callee] if step.callee else []
            literal_slots = list(range(len(self._fixed), len(self._fixed) + len(step.literals)))
            self._fixed += literal_addresses[:len(step.literals)]
            del literal_addresses[:len(step.literals)]
            ins = [step.inputs[k] for k in step.order] if step.order is not None else list(step.inputs)
            self._c_steps.append((step.address, callee_slots + [v.slot for v in ins] + [v.slot for v in step.outputs]
                                  + literal_slots + list(step.sizes)))
        self._keep: list[Any] = [self._arena, *(v.data for v in constants.values()), literals]
        specs = [ArgSpec(np.dtype(v.type.dtype), self.sizes.spec_dims(v.type.extents), writable, v.slot)
                 for v, writable in [(v, False) for v in self._inputs] + [(v, True) for v in self._results]]
        self._program = Program(specs, self._fixed, self._c_steps, n_params=len(self.sizes.dims), exclusive=True,
                                keep=self._keep)
        self._result_types = [(v.type.extents, np.dtype(v.type.dtype)) for v in self._results]
        self._spares: list[tuple[np.ndarray, ...]] = []
        self._flat_results = _flat_result_indices(self._result, len(self._inputs))

    # running --------------------------------------------------------------------------------------
    def _fresh_results(self, sizes: Sizes | None = None) -> list[np.ndarray]:
        return [np.empty(static_shape(shape, sizes), dtype) for shape, dtype in self._result_types]

    def _results_for_call(self) -> tuple[np.ndarray, ...]:
        """Result arrays for a plain call: a set from an earlier call that nobody else holds any more
        (its arrays referenced only by this executable), else new ones, kept for a later call."""
        for spare in self._spares:
            for a in spare:     # _largest_refcount's loop, inline: this runs in every plain call
                if sys.getrefcount(a) > _UNHELD_REFCOUNT:
                    break
            else:
                return spare
        results = tuple(self._fresh_results())      # (static: no dims to bind)
        self._spares = [results] + self._spares[:SPARE_RESULT_SETS - 1]
        return results

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        sync_thread()
        try:
            return self._call(args, kwargs)
        except StepFailed as failure:
            raise self._step_error(failure) from None

    def _step_error(self, failure: StepFailed) -> Exception:
        """The error a failed step's status means (a heap buffer of its kernel could not be allocated)."""
        kernel = self._steps[failure.step].kernel
        if kernel is None:
            return RuntimeError(f"{self!r}: external step {failure.step} failed with code {failure.status}")
        return kernel.allocation_error(failure.status)

    def _call(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        sizes = self.sizes.bind(args) if self.sizes and not kwargs else None
        results = self._results_for_call() if not self.sizes else tuple(self._fresh_results(sizes))
        if not kwargs and self._program.run(args + results):
            if self._flat_results is not None:
                return results[0] if self._flat_results == () else tuple([results[k] for k in self._flat_results])
            return self._collect(self._result, args, results, None, sizes)
        torch = torch_module(list(args) + list(kwargs.values()))
        inputs = tuple(bind_arguments(self.function.params, args, kwargs))
        if self.sizes:
            sizes = self.sizes.bind(inputs)
            results = tuple(self._fresh_results(sizes))
        if not self._program.run(inputs + results):
            raise TypeError(f"{self!r}: the inputs passed the checks but their buffers could not be read "
                            "(or their dynamic dimensions disagree)")
        return self._collect(self._result, inputs, results, torch, sizes)

    def prepare(self, *args: Any, **kwargs: Any) -> Callable[[], Any]:
        """Check the inputs once and return a function of no arguments that runs the graph on them. Each
        call writes the same result arrays (allocated here) and returns them: copy a result to keep it.
        The inputs are read on every call, so changing them in place changes the next result."""
        torch = torch_module(list(args) + list(kwargs.values()))
        inputs = bind_arguments(self.function.params, args, kwargs)
        sizes = self.sizes.bind(inputs) if self.sizes else None
        results = self._fresh_results(sizes)
        fixed = list(self._fixed)
        for v, array in zip(self._inputs + self._results, inputs + results):
            fixed[v.slot] = address(array)
        specs = [ArgSpec(np.dtype(v.type.dtype), self.sizes.spec_dims(v.type.extents), False, v.slot)
                 for v in self._inputs] if self.sizes else []
        program = Program(specs, fixed, self._c_steps, n_params=len(self.sizes.dims), exclusive=True,
                          keep=(self._keep, inputs, results))
        runner = program.runner(tuple(inputs) if self.sizes else ())
        result = self._collect(self._result, tuple(inputs), results, torch, sizes)

        def run() -> Any:
            sync_thread()
            try:
                runner()
            except StepFailed as failure:
                raise self._step_error(failure) from None
            return result
        run.__dict__["program"] = program
        return run

    def _collect(self, structure: Any, inputs: Sequence[Any], results: Sequence[np.ndarray], torch: Any,
                 sizes: Sizes | None = None) -> Any:
        if isinstance(structure, tuple):
            return tuple(self._collect(s, inputs, results, torch, sizes) for s in structure)
        root = structure.root
        if root.kind == "step":
            array = results[root.slot - len(self._inputs)]
        else:
            source = root.data if root.kind == "constant" else as_array(inputs[root.index], "input")
            array = np.array(source, copy=True)
        return like(array.reshape(static_shape(structure.type.extents, sizes)), torch)

    def benchmark(self, *args: Any, repeat: int = 20, warmup: int = 2, **kwargs: Any) -> BenchmarkResult:
        """Median and minimum seconds per call of the whole graph over ``repeat`` calls."""
        return time_calls(lambda: self(*args, **kwargs), repeat, warmup=warmup)

    def export_library(self, path: str | Path, static: bool | None = None, target: Target | str | None = None,
                       name: str | None = None, constants: str = "auto") -> Path:
        """Compile the whole graph into one C library that needs neither Python nor tesched to run.

        Writes ``path`` (a shared object, or with ``static`` an archive) and, beside it, the header
        ``<name>.h`` declaring ``int <name>(const float *input..., float *output...)``: one entry point
        running every fused kernel in order, returning 0 or an error code with a message (see the
        header). :func:`tesched.graph.load_executable` loads a shared object back.

        Parameters
        ----------
        path, static, target : see :meth:`tesched.driver.kernel.Kernel.export_library`
            The library to write (``.so`` or ``.a``), whether it is an archive, the instruction set.
        name : str, optional
            The C entry point's name; default: the file's name without ``lib`` and suffixes.
        constants : str
            ``"embed"`` (in the library), ``"file"`` (``<name>.constants`` beside it, read by
            ``<name>_load_constants``) or ``"auto"`` (embedded up to 64 MiB).

        Returns
        -------
        Path
            The library written.

        Example
        -------
        >>> exe = G.build(f, params)                  # doctest: +SKIP
        >>> exe.export_library("model.so")            # doctest: +SKIP
        PosixPath('model.so')
        """
        return export_graph(self, path, static, target, name, constants)

    def export_c(self, directory: str | Path, target: Target | str | None = None, name: str = "model",
                 constants: str = "auto") -> list[Path]:
        """Write the graph as C sources into ``directory``: one file per kernel, the entry point, the
        header, the runtime headers, the constants and a Makefile (``make`` builds ``<name>.so`` and
        ``lib<name>.a``). Parameters as :meth:`export_library`; returns the files written."""
        return export_graph_c(self, directory, target, name, constants)

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """Write a self-contained HTML page of this graph (the graph after each pass, fused groups, why
        each edge was not fused, every group's kernel; see :func:`tesched.viz.write_graph_page`)."""
        return write_page("graph", self, path, **options)

    def __repr__(self) -> str:
        external = f"; {len(self.external_calls)} external calls: {', '.join(c.name for c in self.external_calls)}" \
            if self.external_calls else ""
        return f"Executable({len(self.kernels)} kernels: {', '.join(k.name for k in self.kernels)}{external})"


def _flat_result_indices(structure: Any, n_inputs: int) -> tuple[int, ...] | None:
    """``()`` when the result is one computed tensor, the result positions when it is a flat tuple of
    computed tensors, else ``None`` (nested tuples, or inputs and constants returned as they are)."""
    if isinstance(structure, _Value):
        return () if structure.kind == "step" else None
    if all(isinstance(v, _Value) and v.kind == "step" for v in structure) and structure:
        return tuple(v.slot - n_inputs for v in structure)
    return None


def _leaves_of(structure: Any) -> list[_Value]:
    return [leaf for s in structure for leaf in _leaves_of(s)] if isinstance(structure, tuple) else [structure]


def _nbytes(ty: TensorType) -> int:
    """The bytes of a value of type ``ty`` (its dynamic dimensions at their largest)."""
    count = 1
    for d in static_shape(ty.extents):
        count *= d
    return count * np.dtype(ty.dtype).itemsize
