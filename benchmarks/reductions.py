"""Reductions of the expression vocabulary against NumPy: a tuple reduction, a triangular one, a product.

Three workloads, each a group of variants timed interleaved round-robin in one process
(:func:`tesched.driver.timing.time_interleaved`); every variant's result is checked before it is timed.
Printed per variant: the median and minimum microseconds per call over the rounds, the spread
(interquartile range over the median) and the ratio of NumPy's median to the variant's median.

1. argmax of each row of a float32 2048x4096 matrix: ``ts.argmax``, a tuple reduction (index and value,
   rows in parallel; the reduce loop scalar, vectorized, or rfactor-ed into 32 vectorized lanes) vs
   ``np.argmax`` (index only) and ``np.argmax`` + ``np.max``.
2. lower-triangular matrix-vector product, n = 4096: tesched's ``reduce_axis((0, i + 1))`` (rows in
   parallel, the triangle only) vs ``np.tril(L) @ x`` and the full ``L @ x`` (BLAS gemv, twice the work).
3. product of each row of a float32 1024x4096 matrix: ``ts.prod`` (a vectorized reduction, one partial
   product per lane, rows in parallel) vs ``np.prod``.

Run:  OMP_WAIT_POLICY=passive python benchmarks/reductions.py [--rounds 20] [--threads 2] [--quick]
"""
from __future__ import annotations

import argparse
from typing import Callable

import numpy as np

import tesched as ts
from tesched.tools.bench.threads import describe_thread_pools, set_all_threads, thread_pools
from tesched.driver.timing import Timing, time_interleaved

RNG = np.random.default_rng(0)


def report(title: str, timings: dict[str, Timing], reference: str) -> None:
    print(f"\n{title}  (ratio = {reference} median / variant median)")
    base = timings[reference].median
    for label, t in timings.items():
        print(f"  {label:34s} {t.median * 1e6:10.1f} us  (min {t.min * 1e6:9.1f}, spread "
              f"{t.spread / t.median * 100:5.1f}%)  ratio {base / t.median:6.2f}x")


def checked(variants: dict[str, Callable[[], object]], check: Callable[[str, object], None]) -> dict:
    for label, call in variants.items():
        check(label, call())
    return variants


def argmax_kernels(m: int, n: int) -> dict[str, Callable]:
    """``ts.argmax`` of each row (rows in parallel) under three schedules: the reduce loop scalar, the
    reduce loop vectorized (vectors of partial (index, value) pairs combined after the loop), and
    TVM's spelling of the same idea (split the reduce loop, ``rfactor`` its 32-wide inner part into
    partial results computed at each row, the lanes vectorized)."""
    kernels = {}
    for variant in ("scalar", "vectorized k", "rfactor 32 lanes"):
        val = ts.placeholder((m, n), name="val")
        k = ts.reduce_axis((0, n), name="k")
        index, best = ts.compute((m,), lambda i: ts.argmax(val[i, k], axis=k), name="argmax")
        s = ts.create_schedule(index.op)
        row = s[index].op.axis[0]
        s[index].parallel(row)
        if variant == "vectorized k":
            s[index].vectorize(k)
        elif variant == "rfactor 32 lanes":
            _, ki = s[index].split(k, factor=32)
            partials = s.rfactor(index, ki, factor_axis=1)
            rf = s[partials[0]]
            i, lane = rf.op.axis
            rf.reorder(i, *rf.op.reduce_axis, lane)
            rf.vectorize(lane)
            rf.compute_at(s[index], row)
        kernels[variant] = ts.build(s, [val, index, best], name="argmax_rows")
    return kernels


def argmax_rows(m: int, n: int, rounds: int) -> None:
    kernels = argmax_kernels(m, n)
    v = RNG.standard_normal((m, n)).astype(np.float32)
    want = np.argmax(v, axis=1)

    def check(label: str, got: object) -> None:
        got_index = got[0] if isinstance(got, tuple) else got
        np.testing.assert_array_equal(got_index, want, err_msg=label)

    variants: dict[str, Callable[[], object]] = {"numpy argmax": lambda: np.argmax(v, axis=1),
                                                 "numpy argmax + max": lambda: (np.argmax(v, axis=1), np.max(v, axis=1))}
    variants.update({f"tesched argmax ({label})": (lambda f=f: f(v)) for label, f in kernels.items()})
    report(f"argmax of each row, float32 {m}x{n}", time_interleaved(checked(variants, check), rounds), "numpy argmax")


def lower_triangular_matvec(n: int, rounds: int) -> None:
    L = ts.placeholder((n, n), name="L")
    x = ts.placeholder((n,), name="x")

    def row(i):
        j = ts.reduce_axis((0, i + 1), name="j")
        return ts.sum(L[i, j] * x[j], axis=j)

    y = ts.compute((n,), row, name="y")
    s = ts.create_schedule(y.op)
    s[y].parallel(y.op.axis[0])
    f = ts.build(s, [L, x, y], name="trmv")
    lv = RNG.standard_normal((n, n)).astype(np.float32)
    xv = RNG.standard_normal(n).astype(np.float32)
    want = np.tril(lv).astype(np.float64) @ xv.astype(np.float64)

    def check(label: str, got: object) -> None:
        if label != "numpy L @ x (full, 2x work)":
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3, err_msg=label)

    variants = checked({"numpy tril(L) @ x": lambda: np.tril(lv) @ xv,
                        "numpy L @ x (full, 2x work)": lambda: lv @ xv,
                        "tesched triangle": lambda: f(lv, xv)}, check)
    report(f"lower-triangular matrix-vector product, n = {n}", time_interleaved(variants, rounds),
           "numpy tril(L) @ x")


def row_products(m: int, n: int, rounds: int) -> None:
    A = ts.placeholder((m, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    P = ts.compute((m,), lambda i: ts.prod(A[i, k], axis=k), name="P")
    s = ts.create_schedule(P.op)
    s[P].parallel(P.op.axis[0])
    s[P].vectorize(k)
    f = ts.build(s, [A, P], name="row_products")
    a = RNG.uniform(0.999, 1.001, (m, n)).astype(np.float32)
    want = np.prod(a.astype(np.float64), axis=1)

    def check(label: str, got: object) -> None:
        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=label)

    variants = checked({"numpy prod": lambda: np.prod(a, axis=1), "tesched prod (vectorized)": lambda: f(a)}, check)
    report(f"product of each row, float32 {m}x{n}", time_interleaved(variants, rounds), "numpy prod")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds per workload (default 20)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tesched and NumPy's BLAS (default 2)")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = parser.parse_args()
    set_all_threads(args.threads, None)
    print(describe_thread_pools(thread_pools()))
    scale = 8 if args.quick else 1
    argmax_rows(2048 // scale, 4096 // scale, args.rounds)
    lower_triangular_matvec(4096 // scale, args.rounds)
    row_products(1024 // scale, 4096 // scale, args.rounds)


if __name__ == "__main__":
    main()
