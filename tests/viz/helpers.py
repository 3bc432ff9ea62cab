"""Small schedules shared by the tests of tesched.viz: a two-row stencil fused by rows, with a halo."""
from __future__ import annotations

import numpy as np

import tesched as ts

N = 16
ROWS = 4


def stencil(producer_name: str = "B", rows: int = ROWS, n: int = N):
    """``C[i, j] = B[i, j] + B[i + 1, j]`` with ``B = 2 A``; B computed per band of ``rows`` rows of C
    (so neighbouring bands both compute one row of B: the halo). Returns (schedule, args, reference)."""
    A = ts.placeholder((n, n), name="A")
    B = ts.compute((n, n), lambda i, j: A[i, j] * 2.0, name=producer_name)
    C = ts.compute((n - 1, n), lambda i, j: B[i, j] + B[i + 1, j], name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, _ = s[C].split(i, factor=rows)
    s[B].compute_at(s[C], io)
    s[C].vectorize(j)
    s[C].parallel(io)

    def reference(a: np.ndarray) -> np.ndarray:
        b = a * 2
        return b[:-1] + b[1:]

    return s, [A, C], reference
