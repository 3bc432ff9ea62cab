"""Build a graph into an :class:`Executable`: run the passes, compile one kernel per fused group, and
call the kernels in order on NumPy inputs.

Every value gets a slot: inputs, constants, and one buffer per group output. Intermediate buffers are
allocated once per executable and reused by every call (so an executable is not meant to be called from
several threads at once); the function's results are fresh arrays on every call. With ``fuse_ops``
disabled each op still becomes a primitive function of its own, so fused and unfused executables run the
same way and compare like for like.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from tesched.kernel import BenchmarkResult, Kernel
from tesched.lower import LoweredFunc

from .fusion_rules import FusionRules
from .ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .types import TensorType
from .lower import compile_primitive
from .params import bind_arguments, bind_params
from .passes import FusionReport, default_sequence, fuse_ops_with_report, print_trace
from .passes.fuse_ops import source
from .visit import post_order

Trace = Callable[[str, Function], None]


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

    def __init__(self, function: Function, fusion_report: FusionReport | None = None):
        self.function = function
        self.fusion_report = fusion_report
        self.kernels: list[CompiledGroup] = []
        self._slots: list[np.ndarray | None] = [None] * len(function.params)
        self._slot_of: dict[int, int] = {id(p): k for k, p in enumerate(function.params)}
        self._steps: list[tuple[Kernel, list[int], int, TensorType | None]] = []
        result_nodes = self._result_leaves(function.body)
        for node in post_order(function.body):
            self._plan(node, id(node) in result_nodes)
        self._result = self._structure(function.body)
        self._fresh = {out for _, _, out, fresh in self._steps if fresh is not None}

    # planning -------------------------------------------------------------------------------------
    @staticmethod
    def _result_leaves(body: Expr) -> set[int]:
        if isinstance(body, Tuple):
            return set().union(*(Executable._result_leaves(f) for f in body.fields)) if body.fields else set()
        return {id(source(body))}

    def _new_slot(self, value: np.ndarray | None) -> int:
        self._slots.append(value)
        return len(self._slots) - 1

    def _plan(self, node: Expr, is_result: bool) -> None:
        if isinstance(node, Var):
            return
        if isinstance(node, Constant):
            self._slot_of[id(node)] = self._new_slot(node.data)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            group = CompiledGroup(node.op.name, node.op, compile_primitive(node.op))
            self.kernels.append(group)
            ty = node.tensor_type
            out = self._new_slot(None if is_result else np.empty(ty.shape, ty.dtype))
            self._steps.append((group.kernel, [self._slot_of[id(a)] for a in node.args], out,
                                ty if is_result else None))
            self._slot_of[id(node)] = out
        elif isinstance(node, Call) and source(node) is not node:
            self._slot_of[id(node)] = self._slot_of[id(source(node))]
        elif isinstance(node, TupleGetItem) and isinstance(node.tuple_value, Tuple):
            field = node.tuple_value.fields[node.index]
            if id(field) in self._slot_of:
                self._slot_of[id(node)] = self._slot_of[id(field)]
        elif not isinstance(node, Tuple):
            raise TypeError(f"cannot execute {node!r}: run fuse_ops first (every op must be in a primitive "
                            "function)")

    def _structure(self, node: Expr) -> Any:
        """The result as slots: an int, or a tuple of structures."""
        if isinstance(node, Tuple):
            return tuple(self._structure(f) for f in node.fields)
        return self._slot_of[id(node)]

    # running --------------------------------------------------------------------------------------
    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray) -> Any:
        values = list(self._slots)
        values[:len(self.function.params)] = bind_arguments(self.function.params, args, kwargs)
        for kernel, inputs, out, fresh in self._steps:
            if fresh is not None:
                values[out] = np.empty(fresh.shape, fresh.dtype)
            kernel(*[values[i] for i in inputs], values[out])
        return self._collect(self._result, values)

    def _collect(self, structure: Any, values: list) -> Any:
        if isinstance(structure, tuple):
            return tuple(self._collect(s, values) for s in structure)
        value = values[structure]
        return value.copy() if structure not in self._fresh else value

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

    def __repr__(self) -> str:
        return f"Executable({len(self.kernels)} kernels: {', '.join(k.name for k in self.kernels)})"


def _trace_callback(trace: bool | Trace | None) -> Trace | None:
    return print_trace if trace is True else (trace or None)


def optimize(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
             disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None) -> Function:
    """``f`` (with ``params`` bound) after the default passes; ``trace=True`` prints the graph after each."""
    if not isinstance(f, Function):
        raise TypeError(f"expected a graph Function, got {type(f).__name__}")
    if params:
        f = bind_params(f, params)
    return default_sequence(rules, disabled_passes)(f, _trace_callback(trace))


def build(f: Function, params: Mapping[str, np.ndarray] | None = None, rules: FusionRules | None = None,
          disabled_passes: Iterable[str] = (), trace: bool | Trace | None = None) -> Executable:
    """Optimise ``f`` and compile one kernel per fused group. ``params`` binds named parameters to
    constants; ``rules`` are the fusion rules; ``disabled_passes`` names passes to skip (with
    ``"fuse_ops"`` every op is its own kernel); ``trace=True`` prints the graph after each pass."""
    disabled = set(disabled_passes)
    optimized = optimize(f, params, rules, disabled | {"fuse_ops"}, trace)
    if "fuse_ops" in disabled:
        fused, report = fuse_ops_with_report(optimized, FusionRules.no_fusion())[0], None
    else:
        fused, report = fuse_ops_with_report(optimized, rules)
        callback = _trace_callback(trace)
        if callback is not None:
            callback("fuse_ops", fused)
    return Executable(fused, report)
