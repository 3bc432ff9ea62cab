"""What ``specialize``, ``storage_align`` and ``prefetch`` change in speed, each against the same schedule
without it, on kernels where they are meant to matter.

- specialize: a 3-point 2-D stencil over symbolic sizes (n, m), tiled 8x16 and vectorized; the fast path
  knows ``n % 8 == 0 and m % 16 == 0`` (no tails, constant trip counts).
- storage_align: a 1024x1024 intermediate read transposed in 16x16 tiles; its rows are 4 KiB apart, so a
  column of a tile maps to one L1 set; ``storage_align(rows, 32, 1)`` pads the row stride to 1025 floats.
- prefetch: a 512x512 matmul in (i, k, j) order, each k prefetching row k + 4 of B.

Method: all kernels of a case run in interleaved rounds (each round calls each once, through
``Kernel.prepare``); printed per kernel: the median time, the spread (25th to 75th percentile) and the
ratio of medians to the kernel without the hint, from one process.

Run:  OMP_WAIT_POLICY=passive python benchmarks/schedule_hints.py [--repeat 31]
"""
from __future__ import annotations

import argparse
import statistics
from typing import Callable

import numpy as np

import tesched as ts
from tesched.driver.timing import round_robin


def stencil(special: bool) -> tuple[ts.Kernel, list[np.ndarray]]:
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n + 1, m + 1), name="A")
    B = ts.compute((n, m), lambda i, j: A[i, j] + A[i + 1, j] + A[i, j + 1], name="B")
    s = ts.create_schedule(B.op)
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 16)
    s[B].vectorize(ji)
    if special:
        s[B].specialize((n % 8 == 0) & (m % 16 == 0))
    a = np.random.default_rng(0).random((1025, 1025), dtype=np.float32)
    return ts.build(s, [A, B], name=f"stencil_{special}"), [a, np.empty((1024, 1024), np.float32)]


def transpose(aligned: bool) -> tuple[ts.Kernel, list[np.ndarray]]:
    A = ts.placeholder((1024, 1024), name="A")
    T = ts.compute((1024, 1024), lambda i, j: A[i, j] * 2.0, name="T")
    U = ts.compute((1024, 1024), lambda i, j: T[j, i] + 1.0, name="U")
    s = ts.create_schedule(U.op)
    s[U].tile(U.op.axis[0], U.op.axis[1], 16, 16)
    if aligned:
        s[T].storage_align(T.op.axis[0], 32, 1)
    a = np.random.default_rng(1).random((1024, 1024), dtype=np.float32)
    return ts.build(s, [A, U], name=f"transpose_{aligned}"), [a, np.empty((1024, 1024), np.float32)]


def matmul(ahead: bool) -> tuple[ts.Kernel, list[np.ndarray]]:
    n = 512
    A, B = (ts.placeholder((n, n), name=name) for name in "AB")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(i, k, j)
    s[C].vectorize(j)
    if ahead:
        s[C].prefetch(B, k, 4)
    rng = np.random.default_rng(2)
    arrays = [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
              np.empty((n, n), np.float32)]
    return ts.build(s, [A, B, C], name=f"matmul_{ahead}"), arrays


CASES: dict[str, tuple[Callable, str]] = {
    "stencil 1024^2, symbolic sizes": (stencil, "specialize"),
    "transposed read of a 1024^2 intermediate": (transpose, "storage_align"),
    "matmul 512, (i, k, j)": (matmul, "prefetch"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=31, help="timed rounds (default 31)")
    args = parser.parse_args()
    for label, (make, hint) in CASES.items():
        kernels = {flag: make(flag) for flag in (False, True)}
        np.testing.assert_allclose(kernels[True][0](*kernels[True][1][:-1]),
                                   kernels[False][0](*kernels[False][1][:-1]), rtol=1e-5)
        calls = {flag: kernel.prepare(*arrays) for flag, (kernel, arrays) in kernels.items()}
        times = {flag: s.wall for flag, s in round_robin(calls, args.repeat).items()}
        base = statistics.median(times[False])
        print(label)
        for flag in (False, True):
            q1, q2, q3 = statistics.quantiles(times[flag], n=4)
            name = f"with {hint}" if flag else "without"
            print(f"  {name:22s} median {q2 * 1e6:9.1f} us  (25-75%: {q1 * 1e6:.1f}-{q3 * 1e6:.1f})  "
                  f"ratio to without {base / q2:.2f}x")


if __name__ == "__main__":
    main()
