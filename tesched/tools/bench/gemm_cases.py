"""GEMM (``nn.matmul`` with its default schedule, 1024^3) and the cost of calling a tiny kernel.

GEMM has nothing to fuse, so it has no unfused variant. The call-overhead row runs ``C = A + B`` on four
float32 elements: the ordinary call ``kernel(a, b, c)`` that checks its arguments every time (``fused``
column, as a user writes it) and the pre-checked call of ``Kernel.prepare`` beside it (``fused prepared``),
next to ``np.add`` and ``torch.add`` with ``out=``.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched.tools.bench.workloads import Case, Workload, random_arrays


def gemm(quick: bool, torch: ModuleType | None) -> Case:
    n = 64 if quick else 1024
    a_t, b_t = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    c_t = nn.matmul(a_t, b_t)
    kernel = ts.build(nn.default_schedule(c_t), [a_t, b_t, c_t], name="gemm")
    a, b = random_arrays(6, (n, n), (n, n), scale=1.0)
    c_np = np.empty((n, n), np.float32)
    variants = {"fused": lambda: kernel(a, b), "fused prepared": kernel.prepare(a, b),
                "numpy": lambda: np.matmul(a, b, out=c_np)}
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.empty(n, n)
        variants["torch"] = lambda: torch.mm(ta, tb, out=tc)
    return Case(f"GEMM {n}x{n}x{n}", 2.0 * n ** 3, [a.astype(np.float64) @ b.astype(np.float64)], variants,
                kernels={"fused": 1}, rtol=1e-4, atol=1e-3 * np.sqrt(n))


def call_overhead(quick: bool, torch: ModuleType | None) -> Case:
    size = 4
    a_t, b_t = ts.placeholder((size,), name="A"), ts.placeholder((size,), name="B")
    c_t = ts.compute((size,), lambda i: a_t[i] + b_t[i], name="C")
    kernel = ts.build(ts.create_schedule(c_t.op), [a_t, b_t, c_t], name="add4")
    a, b = random_arrays(7, (size,), (size,))
    c = np.empty(size, np.float32)

    def plain() -> np.ndarray:
        kernel(a, b, c)
        return c

    variants = {"fused": plain, "fused prepared": kernel.prepare(a, b), "numpy": lambda: np.add(a, b, out=c)}
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        variants["torch"] = lambda: torch.add(ta, tb, out=tc)
    return Case("call overhead: 4-element add", 0.0, [a.astype(np.float64) + b], variants, kernels={"fused": 1},
                rtol=1e-6, atol=0.0, note="fused: kernel(a, b, c), the output given; fused prepared: kernel.prepare(a, b)")


GEMM_WORKLOADS = [Workload("gemm", gemm), Workload("overhead", call_overhead)]
