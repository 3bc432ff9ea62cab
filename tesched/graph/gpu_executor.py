"""Run a fused graph on a GPU: a :class:`GpuExecutable` compiles one GPU kernel per primitive function
(fused group, default GPU schedules: :func:`tesched.nn.gpu_default_schedule`) and launches them in order.

On OpenCL the graph's tensors stay on the device between kernels: the inputs are copied in once per call
(pyopencl arrays are used in place), the constants once, when first needed, each intermediate is a
device array of its own, and the results are copied back (or returned on the device when an input was a
pyopencl array). On CUDA each kernel takes host arrays and copies them (its kernels are compiled by NVRTC
and run where a CUDA GPU is). A group that only reshapes its input is a view, as on the CPU. It refuses
an external C function's group (a :class:`~tesched.errors.BuildError`). It does not export libraries
(GPU kernels are not C); passes and fusion happen before, in :mod:`.build`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tesched.driver.arrays import like, torch_module
from tesched.driver.gpu import GpuKernel, gpu_module
from tesched.driver.timing import BenchmarkResult, time_calls
from tesched.errors import BuildError
from tesched.graph.dataflow import fold_values, is_view
from tesched.graph.external_op import compile_external_group
from tesched.graph.ir import Call, Function
from tesched.graph.lower import compile_gpu_primitive
from tesched.graph.params import bind_arguments
from tesched.graph.passes import FusionReport
from tesched.graph.types import TensorType, TupleType
from tesched.target import Target


@dataclass(frozen=True)
class GpuGroup:
    """One fused group: its name, its primitive function and its GPU kernel."""

    name: str
    function: Function
    kernel: GpuKernel


@dataclass
class _Value:
    """A tensor of the run: an input (``index``: its position), a constant (``data``), a step's output
    (``index``: the step), or a view (``shape`` of ``target``'s memory)."""

    type: TensorType
    kind: str
    index: int = 0
    data: np.ndarray | None = None
    target: "_Value | None" = None


@dataclass(frozen=True)
class _Step:
    kernel: GpuKernel
    inputs: tuple[_Value, ...]
    outputs: tuple[_Value, ...]


class GpuExecutable:
    """Runs a fused graph on a GPU target: ``exe(x)`` or ``exe(data=x)``; a tuple when the graph has
    several results. ``kernels`` lists the compiled groups, ``fusion_report`` what fused."""

    pass_history: tuple[tuple[str, Function], ...] = ()

    def __init__(self, function: Function, fusion_report: FusionReport | None, target: Target,
                 schedule: str = "default"):
        self.function, self.fusion_report, self.target, self.schedule = function, fusion_report, target, schedule
        self.kernels: list[GpuGroup] = []
        self._steps: list[_Step] = []
        self._inputs = [_Value(p.tensor_type, "input", k) for k, p in enumerate(function.params)]
        self._result = fold_values(function, lambda k, p: self._inputs[k],
                                   lambda node: _Value(node.tensor_type, "constant", data=np.asarray(node.data)),
                                   self._plan)
        self._on_device: dict[int, Any] = {}      # id(constant value) -> its device array (OpenCL)

    def _plan(self, node: Call, args: list[Any]) -> Any:
        fn = node.op
        assert isinstance(fn, Function), "a call of a fused group"
        if is_view(fn):
            root = args[0].target if args[0].kind == "view" else args[0]
            return _Value(node.tensor_type, "view", target=root)
        if compile_external_group(fn) is not None:
            raise BuildError(f"group {fn.name} calls an external C function, which {self.target.name} kernels "
                             "cannot: build the graph for a CPU target")
        group = GpuGroup(fn.name, fn, compile_gpu_primitive(fn, self.target, self.schedule))
        self.kernels.append(group)
        outputs = tuple(_Value(t, "step", len(self._steps)) for t in node.tensor_types())
        self._steps.append(_Step(group.kernel, tuple(args), outputs))
        return outputs if isinstance(node.checked_type, TupleType) else outputs[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        torch = torch_module(list(args) + list(kwargs.values()))
        memory = _Memory(self.target, self.kernels[0].kernel.queue if self.kernels else None)
        on_device = any(memory.is_device(a) for a in list(args) + list(kwargs.values()))
        inputs: list[Any]
        if on_device:
            inputs = list(args)
            if kwargs or len(args) != len(self._inputs) or not all(memory.is_device(a) for a in args):
                raise TypeError(f"{self!r}: pass every input as a pyopencl array, by position, or none")
        else:
            inputs = bind_arguments(self.function.params, args, kwargs)
        values: dict[int, Any] = {}

        def value(v: _Value) -> Any:
            if v.kind == "view":
                assert v.target is not None
                return value(v.target).reshape(v.type.shape)
            if v.kind == "input" and id(v) not in values:
                values[id(v)] = memory.to_device(inputs[v.index])
            if v.kind == "constant":
                assert v.data is not None
                if id(v) not in self._on_device:
                    self._on_device[id(v)] = memory.to_device(v.data)
                return self._on_device[id(v)]
            return values[id(v)]

        for step in self._steps:
            outs = [memory.empty(v.type) for v in step.outputs]
            step.kernel(*[value(v) for v in step.inputs], *outs)
            values.update({id(v): out for v, out in zip(step.outputs, outs)})

        def collect(structure: Any) -> Any:
            if isinstance(structure, tuple):
                return tuple(collect(s) for s in structure)
            result = value(structure)
            return result if on_device else like(memory.to_host(result).reshape(structure.type.shape), torch)
        return collect(self._result)

    def benchmark(self, *args: Any, repeat: int = 20, warmup: int = 2, **kwargs: Any) -> BenchmarkResult:
        """Median and minimum seconds per call of the whole graph over ``repeat`` calls."""
        return time_calls(lambda: self(*args, **kwargs), repeat, warmup=warmup)

    def __repr__(self) -> str:
        return f"GpuExecutable({self.target.name}, {len(self.kernels)} kernels: " \
               f"{', '.join(k.name for k in self.kernels)})"


class _Memory:
    """Where the tensors of a call live: pyopencl arrays on the OpenCL device (``queue``), else host
    arrays (CUDA kernels copy their arguments in and out)."""

    def __init__(self, target: Target, queue: Any):
        self.queue = queue
        self.cla = gpu_module("pyopencl.array", "opencl") if target.backend == "opencl" and queue is not None \
            else None

    def is_device(self, array: Any) -> bool:
        return self.cla is not None and isinstance(array, self.cla.Array)

    def to_device(self, array: Any) -> Any:
        if self.cla is None or self.is_device(array):
            return array
        host = np.asarray(array)
        return self.cla.to_device(self.queue, np.ascontiguousarray(host).reshape(host.shape))

    def empty(self, ty: TensorType) -> Any:
        dtype = np.dtype(ty.dtype)
        return np.empty(ty.shape, dtype) if self.cla is None else self.cla.empty(self.queue, ty.shape, dtype)

    def to_host(self, array: Any) -> np.ndarray:
        return array.get() if self.is_device(array) else np.array(array)
