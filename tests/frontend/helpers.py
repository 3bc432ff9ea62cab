"""Shared by the frontend tests: import a PyTorch model, run the graph (NumPy interpreter, and compiled when
asked) and compare every output with PyTorch's, within 1e-4 of the output's scale.

``Case`` describes one small model exercising some ATen ops; ``exported(case)`` exports it once per
session (raw, or decomposed to core ATen); ``ops_of(program)`` lists the op names a program calls.
Modules skip without torch.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install tesched[torch])")

from tesched import graph as G
from tesched.frontend import from_exported_program
from tesched.frontend.exported_program import op_name

TOLERANCE = 1e-4
"""Largest error allowed, relative to the output's scale (its largest magnitude, at least 1)."""


class Lambda(torch.nn.Module):
    """A module whose forward is ``fn``."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@dataclass(frozen=True)
class Case:
    """A model (``make()`` builds it) on ``inputs()``; ``raw`` imports ``torch.export``'s program without
    core-ATen decomposition, as a program with only supported ops is converted directly."""

    name: str
    make: Callable[[], Any]
    inputs: Callable[[], Sequence[Any]]
    raw: bool = False

    def __str__(self) -> str:
        return self.name


def leaves(value: Any) -> list:
    """The tensors (arrays) of a possibly nested tuple, in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def numpy_inputs(inputs: Sequence[Any]) -> list[np.ndarray]:
    return [t.detach().numpy() for t in leaves(list(inputs))]


def max_relative_error(got: Any, want: Any) -> float:
    """The largest error over all outputs, each relative to its output's scale (at least 1)."""
    worst = 0.0
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves), f"{len(got_leaves)} outputs, PyTorch gives {len(want_leaves)}"
    for g, w in zip(got_leaves, want_leaves):
        w = w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{g.shape} {g.dtype} vs PyTorch's {w.shape} {w.dtype}"
        scale = max(float(np.abs(w).max()) if w.size else 0.0, 1.0)
        worst = max(worst, float(np.abs(g.astype(np.float64) - w).max()) / scale)
    return worst


@functools.cache
def exported(case: Case) -> tuple[Any, Any, tuple]:
    """``(model, program, inputs)`` of ``case``, exported once per session."""
    torch.manual_seed(0)
    model, inputs = case.make(), tuple(case.inputs())
    if hasattr(model, "eval"):
        model.eval()
    program = torch.export.export(model, inputs)
    return model, (program if case.raw else program.run_decompositions()), inputs


def ops_of(program: Any) -> set[str]:
    return {op_name(n.target) for n in program.graph.nodes if n.op == "call_function"} - {"getitem"}


def check_case(case: Case, build: bool = False) -> G.Function:
    """Import ``case``, check the interpreted (and, with ``build``, the compiled) graph against PyTorch."""
    model, program, inputs = exported(case)
    fn = from_exported_program(program)
    with torch.no_grad():
        want = model(*inputs)
    arrays = numpy_inputs(inputs)
    assert max_relative_error(G.interpret(fn, *arrays), want) <= TOLERANCE
    if build:
        assert max_relative_error(G.build(fn)(*arrays), want) <= TOLERANCE
    return fn


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> Any:
    return torch.rand(*shape) * (high - low) + low
