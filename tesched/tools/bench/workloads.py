"""What a workload of the suite is, and the list of them.

A :class:`Workload` makes a :class:`Case` at full or quick size: named variants (zero-argument callables
returning the output or a tuple of outputs), the float64 NumPy reference they must match, the flops of
one call, and how many kernels each tesched variant launches. The standard variant labels are
:data:`VARIANTS`; any other label is an extra variant reported beside them. The workloads themselves live
in :mod:`.conv_cases`, :mod:`.cell_cases` and :mod:`.gemm_cases`; :func:`.catalog.workloads` lists them
in report order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

VARIANTS = ("fused", "fused prepared", "unfused", "numpy", "torch")
"""tesched fused called plainly (``f(*inputs)``, arguments checked at every call), the same through its
prepared call (``f.prepare(*inputs)``: checked once, as in a loop of calls), tesched unfused (one kernel per
op, called plainly), NumPy, PyTorch eager."""


@dataclass
class Case:
    """A workload ready to check and time."""

    name: str
    flops: float
    reference: Sequence[np.ndarray]
    variants: dict[str, Callable[[], Any]]
    kernels: dict[str, int] = field(default_factory=dict)
    rtol: float = 1e-3
    atol: float = 1e-3
    note: str = ""

    def check(self) -> None:
        """Every variant's outputs against the reference; raises AssertionError naming the variant."""
        for label, call in self.variants.items():
            outputs = as_arrays(call())
            if len(outputs) != len(self.reference):
                raise AssertionError(f"{self.name}, {label}: {len(outputs)} outputs, expected {len(self.reference)}")
            for k, (got, want) in enumerate(zip(outputs, self.reference)):
                np.testing.assert_allclose(got, want, rtol=self.rtol, atol=self.atol,
                                           err_msg=f"{self.name}, {label}, output {k}")


@dataclass(frozen=True)
class Workload:
    """``make(quick, torch)`` builds the case; ``torch`` is the torch module or None."""

    key: str
    make: Callable[[bool, ModuleType | None], Case]


def as_arrays(result: Any) -> list[np.ndarray]:
    """A variant's result as a list of float64 NumPy arrays (torch tensors are converted)."""
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(item.numpy() if hasattr(item, "numpy") else item, dtype=np.float64) for item in items]


def random_arrays(seed: int, *shapes: tuple[int, ...], scale: float = 1.0) -> list[np.ndarray]:
    """float32 arrays of standard normal values times ``scale``."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * scale).astype(np.float32) for shape in shapes]
