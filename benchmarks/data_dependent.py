"""Data-dependent indexing against NumPy: a gather, a histogram (a scatter) and a cumulative sum (a scan).

Prints, per workload, the median (and minimum) microseconds per call of each variant, measured
interleaved in one process, and the ratios to NumPy:

- gather ``G[i] = A[I[i]]`` of 1M float32 from a 64K table: run-time checked index, clamped index (no
  check: interval arithmetic proves it), ``np.take``;
- histogram of a 2048x2048 uint16 image into 4096 bins: serial scatter, atomic scatter on the threads,
  ``np.bincount``;
- cumulative sum of 4096x1024 float32 along axis 0: ``ts.scan`` with the inner loop vectorized, and
  parallel and vectorized, ``np.cumsum``.

Run:  OMP_WAIT_POLICY=passive python benchmarks/data_dependent.py [--rounds 15] [--quick]
"""
from __future__ import annotations

import argparse
import statistics
from typing import Callable

import numpy as np

import tesched as ts
from tesched.driver.timing import round_robin


def interleaved(variants: dict[str, Callable[[], object]], rounds: int, number: int) -> dict[str, list[float]]:
    """Seconds per call of every variant, one timing of each per round (so load hits all alike)."""
    return {name: s.wall for name, s in round_robin(variants, rounds, number, warmup=1).items()}


def report(title: str, times: dict[str, list[float]], reference: str) -> None:
    print(title)
    base = statistics.median(times[reference])
    for name, t in times.items():
        med = statistics.median(t)
        print(f"  {name:<34} {med * 1e6:10.1f} us (min {min(t) * 1e6:9.1f})   {med / base:5.2f}x {reference}")


def gather(n: int, table: int) -> dict[str, Callable[[], object]]:
    A = ts.placeholder((table,), name="A")
    I = ts.placeholder((n,), "int32", name="I")
    checked = ts.compute((n,), lambda i: A[I[i]], name="G")
    clamped = ts.compute((n,), lambda i: A[ts.minimum(ts.maximum(I[i], 0), table - 1)], name="G")
    kernels = {}
    for label, G in (("checked index", checked), ("clamped index (no check)", clamped)):
        s = ts.create_schedule(G.op)
        outer, _ = s[G].split(G.op.axis[0], factor=4096)
        s[G].parallel(outer)
        kernels[label] = ts.build(s, [A, I, G], name="gather")
    rng = np.random.default_rng(0)
    a = rng.uniform(size=table).astype("float32")
    idx = rng.integers(0, table, n).astype("int32")
    out = np.empty(n, "float32")
    variants: dict[str, Callable[[], object]] = {label: (lambda k=k: k(a, idx, out)) for label, k in kernels.items()}
    variants["np.take"] = lambda: np.take(a, idx, out=out)
    return variants


def histogram(h: int, w: int, bins: int) -> dict[str, Callable[[], object]]:
    img = ts.placeholder((h, w), "uint16", name="img")
    kernels = {}
    for label in ("serial scatter", "atomic scatter, parallel"):
        ry, rx = ts.reduce_axis((0, h), name="ry"), ts.reduce_axis((0, w), name="rx")
        hist = ts.scatter_add((bins,), ts.minimum(img[ry, rx], bins - 1), 1, [ry, rx], dtype="int64", name="hist")
        s = ts.create_schedule(hist.op)
        if label.startswith("atomic"):
            s[hist].atomic().parallel(ry)
        kernels[label] = ts.build(s, [img, hist], name="histogram")
    image = np.random.default_rng(1).integers(0, bins, (h, w)).astype("uint16")
    out = np.empty(bins, "int64")
    want = np.bincount(image.ravel(), minlength=bins)
    for k in kernels.values():
        k(image, out)
        assert np.array_equal(out, want)
    variants: dict[str, Callable[[], object]] = {label: (lambda k=k: k(image, out)) for label, k in kernels.items()}
    variants["np.bincount"] = lambda: np.bincount(image.ravel(), minlength=bins)
    return variants


def cumsum(m: int, n: int) -> dict[str, Callable[[], object]]:
    kernels = {}
    for label in ("scan, vectorized", "scan, parallel + vectorized"):
        X = ts.placeholder((m, n), name="X")
        state = ts.placeholder((m, n), name="state")
        init = ts.compute((1, n), lambda t, i: X[t, i], name="init")
        update = ts.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
        res = ts.scan(init, update, state, name="cumsum")
        s = ts.create_schedule(res.op)
        s[update].compute_inline()
        outer, inner = s[res].split(res.op.axis[1], factor=16)
        s[res].vectorize(inner)
        if "parallel" in label:
            s[res].parallel(outer)
        kernels[label] = ts.build(s, [X, res], name="cumsum")
    x = np.random.default_rng(2).uniform(size=(m, n)).astype("float32")
    out = np.empty((m, n), "float32")
    for k in kernels.values():
        k(x, out)
        np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-3)
    variants: dict[str, Callable[[], object]] = {label: (lambda k=k: k(x, out)) for label, k in kernels.items()}
    variants["np.cumsum"] = lambda: np.cumsum(x, axis=0, out=out)
    return variants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args()
    q = 8 if args.quick else 1
    print(f"threads: {ts.get_num_threads()}, rounds: {args.rounds} (median, min; interleaved)")
    report(f"gather of {(1 << 20) // q} float32 from a table of 65536", interleaved(gather((1 << 20) // q, 65536),
                                                                                args.rounds, 5), "np.take")
    report(f"histogram of {2048 // q}x2048 uint16 into 4096 bins", interleaved(histogram(2048 // q, 2048, 4096),
                                                                               args.rounds, 3), "np.bincount")
    report(f"cumsum of {4096 // q}x1024 float32 along axis 0", interleaved(cumsum(4096 // q, 1024), args.rounds, 3),
           "np.cumsum")


if __name__ == "__main__":
    main()
