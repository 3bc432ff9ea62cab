"""Selects inside a vectorized loop that read a local buffer under a condition the loop cannot be split at:
explicit SIMD with masked loads against the scalar loop (gcc's own vectorization of it) and NumPy.

- cache_read: ``P[i, j] = 2 * A[i, j - 1] + 1 where j >= 1 and C[i, j] > 0.5, else 0`` (256x1021 float32,
  a data-dependent condition), ``A`` read through a per-row ``cache_read`` copy;
- band: ``P[i, j] = B[i, j - i] for i <= j < 2i + 3, else -1`` (512x1031), ``B = 2 * A`` computed per row
  with ``compute_at`` (the band's two ends are not a constant distance apart).

Each is built for every target given (``host``, ``x86-64-avx2``, ``x86-64`` SSE4.2 without masked loads,
``c`` without SIMD), with the column loop vectorized and not. Method: every kernel of a workload runs in
interleaved rounds (one call of each per round, through ``Kernel.prepare``); printed per kernel: the
median, the spread (25th to 75th percentile) and the ratio of medians to the scalar loop on the host.

Run:  OMP_WAIT_POLICY=passive python benchmarks/masked_loads.py [--rounds 31] [--targets host x86-64]
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np

import tesched as ts


def cache_read(vectorize: bool, target: str) -> tuple[ts.Kernel, list[np.ndarray], Callable[[], object]]:
    h, w = 256, 1021
    A, C = ts.placeholder((h, w), name="A"), ts.placeholder((h, w), name="C")
    P = ts.compute((h, w), lambda i, j: ts.if_then_else((j >= 1) & (C[i, j] > 0.5), A[i, j - 1] * 2.0 + 1.0, 0.0),
                   name="P")
    s = ts.create_schedule(P.op)
    s[s.cache_read(A, "local", [P])].compute_at(s[P], P.op.axis[0])
    if vectorize:
        s[P].vectorize(P.op.axis[1])
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((h, w)).astype(np.float32), rng.random((h, w)).astype(np.float32)
    keep = (np.arange(w) >= 1) & (c > 0.5)
    shifted = np.zeros_like(a)

    def numpy() -> object:
        shifted[:, 1:] = a[:, :-1]
        return np.where(keep, shifted * 2 + 1, 0)
    return ts.build(s, [A, C, P], target=target, name=f"masked_cache_read_{vectorize}"), \
        [a, c, np.empty((h, w), np.float32)], numpy


def band(vectorize: bool, target: str) -> tuple[ts.Kernel, list[np.ndarray], Callable[[], object]]:
    h, width = 512, 1031
    A = ts.placeholder((h, h + 3), name="A")
    B = ts.compute((h, h + 3), lambda i, j: A[i, j] * 2.0, name="B")
    P = ts.compute((h, width), lambda i, j: ts.if_then_else((j >= i) & (j < 2 * i + 3), B[i, j - i], -1.0), name="P")
    s = ts.create_schedule(P.op)
    s[B].compute_at(s[P], P.op.axis[0])
    if vectorize:
        s[P].vectorize(P.op.axis[1])
    a = np.random.default_rng(1).standard_normal((h, h + 3)).astype(np.float32)
    rows, cols = np.arange(h)[:, None], np.arange(width)[None, :]
    inside = (cols >= rows) & (cols < 2 * rows + 3)
    source = np.clip(cols - rows, 0, h + 2)

    def numpy() -> object:
        return np.where(inside, 2 * np.take_along_axis(a, np.broadcast_to(source, (h, width)), 1), -1)
    return ts.build(s, [A, P], target=target, name=f"masked_band_{vectorize}"), \
        [a, np.empty((h, width), np.float32)], numpy


def _seconds(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="timed rounds (default 31)")
    parser.add_argument("--targets", nargs="+", default=["host", "x86-64-avx2", "x86-64", "c"])
    args = parser.parse_args()
    for title, workload in (("cache_read copy, data-dependent condition", cache_read),
                            ("compute_at producer, band", band)):
        calls: dict[str, Callable[[], object]] = {}
        expected = None
        for target in args.targets:
            for vectorize in (True, False):
                if target == "c" and vectorize:
                    continue            # no SIMD: the same code as the scalar loop
                kernel, arrays, numpy = workload(vectorize, target)
                kernel(*arrays)
                expected = numpy() if expected is None else expected
                np.testing.assert_allclose(arrays[-1], expected, rtol=1e-6)
                label = f"{target}, {'masked SIMD' if vectorize else 'scalar loop'}"
                if vectorize and "ts_vloadm_" not in kernel.c_source:
                    label += " (no masked loads!)"
                calls[label] = kernel.prepare(*arrays)
        calls["NumPy"] = numpy
        for call in calls.values():
            call()
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                times[name].append(_seconds(call))
        reference = next((n for n in times if n.endswith("scalar loop")), "NumPy")
        base = statistics.median(times[reference])
        print(title)
        for name, t in times.items():
            q = statistics.quantiles(t, n=4)
            med = statistics.median(t)
            print(f"  {name:<34} {med * 1e6:9.1f} us  spread {(q[2] - q[0]) * 1e6:7.1f}   {base / med:5.2f}x vs {reference}")


if __name__ == "__main__":
    main()
