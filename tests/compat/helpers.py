"""Helpers of the compatibility suite: build a schedule, run it on arrays and compare with NumPy.

Outputs are passed to the kernel pre-filled with a poison value (NaN for floats, a repeated byte pattern for
integers), so an element the kernel forgets to write shows up as a mismatch instead of a lucky zero.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

import tesched as ts

RNG_SEED = 20261127


def rng() -> np.random.Generator:
    """A fresh generator with the suite's seed (each test draws the same data on every run)."""
    return np.random.default_rng(RNG_SEED)


def rand(shape, dtype: str = "float32", low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """Seeded random data: uniform floats in ``[low, high)`` or integers in ``[low, high]``."""
    g = rng()
    if np.dtype(dtype).kind in "iu":
        return g.integers(int(low), int(high), size=shape, endpoint=True).astype(dtype)
    return g.uniform(low, high, size=shape).astype(dtype)


def poison(shape, dtype) -> np.ndarray:
    """An output buffer no correct kernel leaves as it is."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype)
    return np.full(shape, 0x5A5A5A5A5A5A5A5A & np.iinfo(dtype).max, dtype)


def tolerance(dtype) -> dict:
    """``assert_allclose`` tolerances fit for ``dtype`` (exact for integers and booleans)."""
    kind = np.dtype(dtype).kind
    if kind in "iub":
        return {"rtol": 0, "atol": 0}
    if np.dtype(dtype).itemsize <= 4:
        return {"rtol": 2e-5, "atol": 2e-5}
    return {"rtol": 1e-12, "atol": 1e-12}


def check(s: ts.Schedule, args: Sequence, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
          rtol: float | None = None, atol: float | None = None, name: str | None = None):
    """Build ``s`` with ``args`` (inputs first, then outputs), call it on ``inputs`` and poisoned outputs
    shaped like ``expected``, and compare each output with its NumPy reference. Returns the kernel."""
    kernel = ts.build(s, list(args), name=name) if name else ts.build(s, list(args))
    outs = [poison(e.shape, e.dtype) for e in expected]
    kernel(*inputs, *outs)
    for k, (got, want) in enumerate(zip(outs, expected)):
        tol = tolerance(want.dtype)
        if rtol is not None:
            tol["rtol"] = rtol
        if atol is not None:
            tol["atol"] = atol
        np.testing.assert_allclose(got, want, err_msg=f"output {k}", **tol)
    return kernel


def redundancy(s: ts.Schedule, args: Sequence, stage: str) -> float:
    """The ``computes N.NNx its points`` figure ``lower()`` prints for ``stage`` (1.00: nothing recomputed)."""
    text = str(ts.lower(s, list(args)))
    found = re.search(rf"# {re.escape(stage)}: computes ([0-9.]+)x its points", text)
    assert found, f"no redundancy line for {stage} in:\n{text}"
    return float(found.group(1))
