"""Schedules written the way users write them, timed step by step against NumPy and tesched's best kernel.

Section "gemm": every step of TVM's tutorial "How to optimize GEMM on CPU", written line by line with
tesched's names (default, blocking, vectorization, loop permutation, array packing with
``packedB[n // bn, k, n % bn]``, write cache, parallel), M = N = K = 1024 float32 by default. References:
NumPy's ``matmul`` and tesched's best GEMM kernels (``tesched.intrin.dense_schedule`` with the
micro-kernel intrinsic and with generated register tiles; the best of them is "best").

Further sections come from other files of this folder when they exist: ``user_schedules_blur.py``
defining ``blur_rows()`` (Halide's blur schedules). A section is a :class:`Section`: its steps (each a
function returning ``(schedule, tensors)``), the inputs, the expected output, the work per call, and
reference calls.

Method: every kernel is built cold (a fresh ``TESCHED_CACHE_DIR`` unless ``--warm``), after one tiny
kernel that pays the process's one-time compiler probe; the time to lower each step (``ts.lower``) and
to build it (lowering, C, gcc) is printed. Then all kernels of a section and its references run in interleaved rounds
(each round calls each once), so a busy machine slows them alike; printed per kernel: the median rate,
the spread (25th to 75th percentile of the rates), the ratio to NumPy and to tesched's best, each computed
from the medians of the same run. Slow steps (the default schedule) run in the first rounds only.

Run:  OMP_WAIT_POLICY=passive python benchmarks/user_schedules.py [--size 1024] [--repeat 15]
      [--threads 2] [--only gemm|blur] [--warm] [--show-c STEP]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = N = K of the GEMM (default 1024)")
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tesched and NumPy (default 2)")
    parser.add_argument("--only", default=None, help="run one section (gemm, blur)")
    parser.add_argument("--warm", action="store_true", help="keep the kernel cache (build times then are cached)")
    parser.add_argument("--show-c", default=None, metavar="STEP",
                        help="print the generated C of the steps whose label starts with STEP")
    return parser.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # before NumPy's BLAS and the OpenMP runtime start their threads
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TESCHED_NUM_THREADS"):
        os.environ[variable] = str(ARGS.threads)
    os.environ.pop("OPENBLAS_CORETYPE", None)     # it slows OpenBLAS down; NumPy's baseline must be fair
    if not ARGS.warm:
        os.environ["TESCHED_CACHE_DIR"] = tempfile.mkdtemp(prefix="tesched_user_schedules_")

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
from tesched.driver.timing import round_robin  # noqa: E402

Built = tuple[ts.Schedule, list[ts.Tensor]]


@dataclass
class Step:
    """One schedule as a user writes it: ``make()`` declares the computation and schedules it."""

    label: str
    make: Callable[[], Built]
    slow: bool = False          # timed in the first rounds only


@dataclass
class Section:
    """Steps of one computation, what they are checked against and what they are timed against."""

    title: str
    steps: list[Step]
    inputs: list[np.ndarray]
    expected: np.ndarray
    work: float                                  # operations per call (2 M N K for a GEMM)
    unit: str = "GFLOP/s"
    rtol: float = 1e-4
    atol: float = 1e-3
    numpy: Callable[[], object] | None = None     # NumPy's call (timed, and the reference ratio)
    best: dict[str, Built] = field(default_factory=dict)   # tesched's best kernels for the same computation


# GEMM: TVM's "How to optimize GEMM on CPU", step by step ------------------------------------------------
def gemm_rows(size: int = 1024) -> Section:
    """The seven steps of TVM's GEMM tutorial (bn = 32, kfactor = 4) with tesched's names."""
    M = K = N = size
    bn, kfactor = 32, 4

    def declare():
        k = ts.reduce_axis((0, K), "k")
        A = ts.placeholder((M, K), name="A")
        B = ts.placeholder((K, N), name="B")
        C = ts.compute((M, N), lambda m, n: ts.sum(A[m, k] * B[k, n], axis=k), name="C")
        return A, B, C

    def default() -> Built:
        A, B, C = declare()
        s = ts.create_schedule(C.op)
        return s, [A, B, C]

    def blocking(vectorize: bool = False, permute: bool = False) -> Built:
        A, B, C = declare()
        s = ts.create_schedule(C.op)
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        (kaxis,) = s[C].op.reduce_axis
        ko, ki = s[C].split(kaxis, factor=kfactor)
        if permute:
            s[C].reorder(mo, no, ko, mi, ki, ni)
        else:
            s[C].reorder(mo, no, ko, ki, mi, ni)
        if vectorize:
            s[C].vectorize(ni)
        return s, [A, B, C]

    def declare_packed():
        k = ts.reduce_axis((0, K), "k")
        A = ts.placeholder((M, K), name="A")
        B = ts.placeholder((K, N), name="B")
        packedB = ts.compute((N // bn, K, bn), lambda bigN, k, littleN: B[k, bigN * bn + littleN],
                             name="packedB")
        C = ts.compute((M, N), lambda m, n: ts.sum(A[m, k] * packedB[n // bn, k, n % bn], axis=k), name="C")
        return A, B, packedB, C

    def array_packing() -> Built:
        A, B, packedB, C = declare_packed()
        s = ts.create_schedule(C.op)
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        (kaxis,) = s[C].op.reduce_axis
        ko, ki = s[C].split(kaxis, factor=kfactor)
        s[C].reorder(mo, no, ko, mi, ki, ni)
        s[C].vectorize(ni)
        bigN, _, littleN = s[packedB].op.axis
        s[packedB].vectorize(littleN)
        s[packedB].parallel(bigN)
        return s, [A, B, C]

    def write_cache(parallel: bool = False) -> Built:
        A, B, packedB, C = declare_packed()
        s = ts.create_schedule(C.op)
        CC = s.cache_write(C, "global")
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        s[CC].compute_at(s[C], no)
        mc, nc = s[CC].op.axis
        (kaxis,) = s[CC].op.reduce_axis
        ko, ki = s[CC].split(kaxis, factor=kfactor)
        s[CC].reorder(ko, mc, ki, nc)
        s[CC].vectorize(nc)
        s[CC].unroll(ki)
        x, y, z = s[packedB].op.axis
        s[packedB].vectorize(z)
        s[packedB].parallel(x)
        if parallel:
            s[C].parallel(mo)
        return s, [A, B, C]

    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    steps = [
        Step("1. default", default, slow=True),
        Step("2. blocking", blocking),
        Step("3. vectorization", lambda: blocking(vectorize=True)),
        Step("4. loop permutation", lambda: blocking(vectorize=True, permute=True)),
        Step("5. array packing", array_packing),
        Step("6. write cache", write_cache),
        Step("7. parallel", lambda: write_cache(parallel=True)),
    ]
    return Section(f"GEMM {M}x{N}x{K} float32 (TVM's tutorial steps)", steps, [a, b],
                   (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32), 2.0 * M * N * K,
                   atol=1e-3 * np.sqrt(K), numpy=lambda: np.matmul(a, b, out=out),
                   best={"intrinsic": _dense(size, "intrinsic"), "codegen tile": _dense(size, "codegen")})


def _dense(size: int, inner: str) -> Built:
    from tesched.intrin import dense_schedule
    A = ts.placeholder((size, size), name="A")
    B = ts.placeholder((size, size), name="B")
    C = ts.nn.matmul(A, B)
    return dense_schedule(C, inner=inner), [A, B, C]


# running a section ---------------------------------------------------------------------------------
def first_build() -> float:
    """Seconds of the first build in this process (it also probes the compiler once): a tiny kernel, so
    that the steps' build times are each kernel's own."""
    start = time.perf_counter()
    x = ts.placeholder((4,), name="x")
    y = ts.compute((4,), lambda i: x[i] + 1.0, name="y")
    ts.build(ts.create_schedule(y.op), [x, y], name="first")
    return time.perf_counter() - start


def lowering_seconds(make: Callable[[], Built]) -> float:
    """Seconds ``ts.lower`` takes for a fresh declaration and schedule from ``make``."""
    s, tensors = make()
    start = time.perf_counter()
    ts.lower(s, tensors)
    return time.perf_counter() - start


def build_cold(label: str, built: Built, section: Section, show_c: bool) -> tuple[Callable[[], object], float]:
    """Lower and build (timed), check against the expected output, and return a call without checks."""
    start = time.perf_counter()
    s, tensors = built
    kernel = ts.build(s, tensors, name="kernel")
    seconds = time.perf_counter() - start
    if show_c:
        print(f"--- C of {label} ---\n{kernel.c_source}")
    out = np.empty_like(section.expected)
    kernel(*section.inputs, out)
    np.testing.assert_allclose(out, section.expected, rtol=section.rtol, atol=section.atol)
    return kernel.prepare(*section.inputs, out), seconds


def run_section(section: Section, repeat: int, show_c: str | None
                ) -> tuple[dict[str, float], dict[str, float], float | None]:
    """Build and time every kernel of ``section``, print the table and the targets, and return the
    median rates, the build times and NumPy's median rate."""
    print(f"\n=== {section.title}: {ts.get_num_threads()} threads, {repeat} interleaved rounds ===")
    calls: dict[str, Callable[[], object]] = {}
    slow: set[str] = set()
    builds: dict[str, float] = {}
    lowering: dict[str, float] = {}
    for step in section.steps:
        lowering[step.label] = lowering_seconds(step.make)
        start = time.perf_counter()
        built = step.make()
        declared = time.perf_counter() - start
        calls[step.label], seconds = build_cold(step.label, built, section,
                                                show_c is not None and step.label.startswith(show_c))
        builds[step.label] = declared + seconds
        if step.slow:
            slow.add(step.label)
    for label, built in section.best.items():
        calls[f"best: {label}"], builds[f"best: {label}"] = build_cold(label, built, section, False)
    if section.numpy is not None:
        calls["NumPy"] = section.numpy
    first = round_robin(calls, min(repeat, 3), warmup=1)    # slow steps only take the first three rounds
    rest = round_robin({label: call for label, call in calls.items() if label not in slow}, max(repeat - 3, 0))
    rates = {label: [section.work / t / 1e9 for t in first[label].wall + (rest[label].wall if label in rest else [])]
             for label in calls}
    median = {label: statistics.median(v) for label, v in rates.items()}
    best_label = max((label for label in calls if label.startswith("best: ")), key=median.get, default=None)
    numpy_rate = median.get("NumPy")
    best_rate = median[best_label] if best_label else None
    print(f"{'kernel':28s} {section.unit:>9s} {'spread (p25-p75)':>18s} {'x NumPy':>8s} {'x best':>7s} "
          f"{'lower s':>8s} {'build s':>8s}")
    for label, values in rates.items():
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        vs_numpy = f"{median[label] / numpy_rate:8.2f}" if numpy_rate else f"{'':8s}"
        vs_best = f"{median[label] / best_rate:7.2f}" if best_rate else f"{'':7s}"
        build = f"{builds[label]:8.2f}" if label in builds else f"{'':8s}"
        lower = f"{lowering[label]:8.2f}" if label in lowering else f"{'':8s}"
        print(f"{label:28s} {median[label]:9.2f} {q[0]:8.2f} - {q[2]:7.2f} {vs_numpy} {vs_best} {lower} {build}")
    report_targets(section, median, builds, numpy_rate, best_rate)
    return median, builds, numpy_rate


def report_targets(section: Section, median: dict, builds: dict, numpy_rate: float | None,
                   best_rate: float | None) -> None:
    """Each step at least as fast as the previous; the last >= 1.5x NumPy and >= 80% of the best;
    every build under a second cold."""
    labels = [s.label for s in section.steps]
    slower = [f"{b} < {a}" for a, b in zip(labels, labels[1:]) if median[b] < median[a]]
    last = median[labels[-1]]
    print("targets:")
    print(f"  each step >= the previous: {'yes' if not slower else 'no (' + '; '.join(slower) + ')'}")
    if numpy_rate:
        print(f"  last step >= 1.5x NumPy: {'yes' if last >= 1.5 * numpy_rate else 'no'} "
              f"({last / numpy_rate:.2f}x)")
        if section.unit == "GFLOP/s":
            report_peak(numpy_rate)
    if best_rate:
        print(f"  last step >= 80% of tesched's best: {'yes' if last >= 0.8 * best_rate else 'no'} "
              f"({100 * last / best_rate:.0f}%)")
    slow_builds = [f"{label} {builds[label]:.2f} s" for label in labels if builds[label] >= 1.0]
    print(f"  lowering + build < 1 s cold: {'yes' if not slow_builds else 'no (' + ', '.join(slow_builds) + ')'}")


def report_peak(numpy_rate: float) -> None:
    """The machine's measured FMA peak at the benchmark's thread count, and how much of it NumPy and the
    1.5x-NumPy target take: a target above the peak cannot be met by any schedule."""
    from tesched.tools.bench.peak import measure_peak
    threads = ts.get_num_threads()
    peaks = measure_peak((threads,))
    if peaks is None:
        print("  machine peak: unknown (no compiler for the peak benchmark)")
        return
    peak = peaks[threads].best_gflops
    print(f"  machine peak (float32 FMA, {threads} threads, best burst): {peak:.1f} GFLOP/s; NumPy runs at "
          f"{100 * numpy_rate / peak:.0f}% of it, 1.5x NumPy would be {150 * numpy_rate / peak:.0f}%")


def sections(size: int) -> dict[str, Callable[[], Section]]:
    """The sections to run: the GEMM steps, and Halide's blur when ``user_schedules_blur.py`` exists."""
    found: dict[str, Callable[[], Section]] = {"gemm": lambda: gemm_rows(size)}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        from user_schedules_blur import blur_rows  # type: ignore[import-not-found]  # optional section
    except ImportError:
        return found
    found["blur"] = blur_rows
    return found


def main(args: argparse.Namespace) -> None:
    try:
        from threadpoolctl import threadpool_info
        blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, {i.get('num_threads')} threads)"
                for i in threadpool_info() if i.get("user_api") == "blas"]
        print("NumPy's BLAS:", "; ".join(blas) or "unknown")
    except ImportError:
        print("NumPy's BLAS: unknown (pip install threadpoolctl to show it)")
    print(f"kernel cache: {os.environ.get('TESCHED_CACHE_DIR', 'default')} ({'warm' if args.warm else 'cold'})")
    print(f"first build in this process (probes the compiler once): {first_build():.2f} s; build s below is "
          f"lowering + C + gcc of each kernel, lower s lowering alone")
    for name, make in sections(args.size).items():
        if args.only is None or args.only == name:
            run_section(make(), args.repeat, args.show_c)


if __name__ == "__main__":
    assert ARGS is not None
    main(ARGS)
