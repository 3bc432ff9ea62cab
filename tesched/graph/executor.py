"""Run a fused graph: an :class:`Executable` compiles one kernel per primitive function (fused group) and
calls the kernels in order on NumPy inputs.

Every value gets a slot: inputs, constants, and one buffer per group output. Intermediate buffers are
allocated once per executable and reused by every call (so an executable is not meant to be called from
several threads at once); the function's results are fresh arrays on every call. A group that is one call
of an external C function (see :mod:`.partition`) is run by that function and listed in
``external_calls`` instead of ``kernels``. Passes and fusion happen before, in :mod:`.build`.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tesched.driver.kernel import BenchmarkResult, Kernel
from tesched.graph.annotation import STOP_FUSION
from tesched.graph.external_op import ExternalCall, compile_external_group
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem
from tesched.graph.lower import compile_primitive
from tesched.graph.params import bind_arguments
from tesched.graph.passes import FusionReport
from tesched.graph.types import TensorType
from tesched.graph.visit import post_order
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import write_page


@dataclass(frozen=True)
class CompiledGroup:
    """One fused group: its name, its primitive function and its compiled kernel."""

    name: str
    function: Function
    kernel: Kernel

    @property
    def lowered(self) -> LoweredFunc:
        return self.kernel.lowered

    @property
    def c_source(self) -> str:
        return self.kernel.c_source


class Executable:
    """Runs a fused graph: ``exe(x)`` or ``exe(data=x)``; a tuple when the graph has several results."""

    pass_history: tuple[tuple[str, Function], ...] = ()   # (pass, graph after it), from the input on

    def __init__(self, function: Function, fusion_report: FusionReport | None = None, schedule: str = "default",
                 tuning_db: str | os.PathLike | None = None):
        self.function = function
        self.schedule, self.tuning_db = schedule, tuning_db
        self.fusion_report = fusion_report
        self.kernels: list[CompiledGroup] = []
        self.external_calls: list[ExternalCall] = []
        self._slots: list[np.ndarray | None] = [None] * len(function.params)
        self._slot_of: dict[int, int] = {id(p): k for k, p in enumerate(function.params)}
        self._steps: list[tuple[Callable[..., Any], list[int], int, TensorType | None]] = []
        results = {id(_resolved(leaf)) for leaf in _leaves(function.body)}
        for node in post_order(function.body):
            self._plan(node, id(node) in results)
        self._result = self._structure(function.body)
        self._fresh = {out for _, _, out, fresh in self._steps if fresh is not None}

    # planning -------------------------------------------------------------------------------------
    def _new_slot(self, value: np.ndarray | None) -> int:
        self._slots.append(value)
        return len(self._slots) - 1

    def _slot(self, node: Expr) -> int:
        return self._slot_of[id(_resolved(node))]

    def _plan(self, node: Expr, is_result: bool) -> None:
        if isinstance(node, Constant):
            self._slot_of[id(node)] = self._new_slot(node.data)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            run = self._compile_group(node.op)
            ty = node.tensor_type
            out = self._new_slot(None if is_result else np.empty(ty.shape, ty.dtype))
            self._steps.append((run, [self._slot(a) for a in node.args], out, ty if is_result else None))
            self._slot_of[id(node)] = out
        elif isinstance(node, Call) and node.op is not STOP_FUSION:
            raise TypeError(f"cannot execute {node!r}: run fuse_ops first (every op must be in a primitive "
                            "function)")

    def _compile_group(self, fn: Function) -> Callable[..., Any]:
        external = compile_external_group(fn)
        if external is not None:
            self.external_calls.append(external)
            return external
        group = CompiledGroup(fn.name, fn, compile_primitive(fn, self.schedule, self.tuning_db))
        self.kernels.append(group)
        return group.kernel

    def _structure(self, node: Expr) -> Any:
        """The result as slots: an int, or a tuple of structures."""
        node = _resolved(node)
        if isinstance(node, Tuple):
            return tuple(self._structure(f) for f in node.fields)
        return self._slot(node)

    # running --------------------------------------------------------------------------------------
    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray) -> Any:
        values = list(self._slots)
        values[:len(self.function.params)] = bind_arguments(self.function.params, args, kwargs)
        for kernel, inputs, out, fresh in self._steps:
            if fresh is not None:
                values[out] = np.empty(fresh.shape, fresh.dtype)
            kernel(*[values[i] for i in inputs], values[out])
        return self._collect(self._result, values)

    def prepare(self, *args: np.ndarray, **kwargs: np.ndarray) -> Callable[[], Any]:
        """Check the inputs once and return a function of no arguments that runs the graph on them. Each
        call writes the same result arrays (allocated here) and returns them: copy a result to keep it.
        The inputs are read on every call, so changing them in place changes the next result."""
        values = list(self._slots)
        values[:len(self.function.params)] = bind_arguments(self.function.params, args, kwargs)
        for _, _, out, fresh in self._steps:
            if fresh is not None:
                values[out] = np.empty(fresh.shape, fresh.dtype)
        runs = [kernel.prepare(*[values[i] for i in inputs], values[out]) for kernel, inputs, out, _ in self._steps]
        result = self._collect(self._result, values, copy=False)

        def run() -> Any:
            for kernel_run in runs:
                kernel_run()
            return result
        return run

    def _collect(self, structure: Any, values: list, copy: bool = True) -> Any:
        if isinstance(structure, tuple):
            return tuple(self._collect(s, values, copy) for s in structure)
        value = values[structure]
        return value.copy() if copy and structure not in self._fresh else value

    def benchmark(self, *args: np.ndarray, repeat: int = 20, warmup: int = 2, **kwargs: np.ndarray) -> BenchmarkResult:
        """Median and minimum seconds per call of the whole graph over ``repeat`` calls."""
        for _ in range(warmup):
            self(*args, **kwargs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self(*args, **kwargs)
            times.append(time.perf_counter() - t0)
        return BenchmarkResult(statistics.median(times), min(times), repeat)

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """Write a self-contained HTML page of this graph (the graph after each pass, fused groups, why
        each edge was not fused, every group's kernel; see :func:`tesched.viz.write_graph_page`)."""
        return write_page("graph", self, path, **options)

    def __repr__(self) -> str:
        external = f"; {len(self.external_calls)} external calls: {', '.join(c.name for c in self.external_calls)}" \
            if self.external_calls else ""
        return f"Executable({len(self.kernels)} kernels: {', '.join(k.name for k in self.kernels)}{external})"


def _resolved(node: Expr) -> Expr:
    """``node`` with stop_fusion annotations and fields of literal tuples looked through."""
    while True:
        if isinstance(node, TupleGetItem) and isinstance(_resolved(node.tuple_value), Tuple):
            node = _resolved(node.tuple_value).fields[node.index]  # type: ignore[attr-defined]
        elif isinstance(node, Call) and node.op is STOP_FUSION:
            node = node.args[0]
        else:
            return node


def _leaves(node: Expr) -> list[Expr]:
    """The tensors a (possibly nested) tuple of results is made of."""
    node = _resolved(node)
    return [leaf for f in node.fields for leaf in _leaves(f)] if isinstance(node, Tuple) else [node]
