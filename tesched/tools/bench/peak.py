"""The machine's peak FP32 FMA throughput, measured by ``peak_flops.c`` (beside this module).

The C program (independent FMA chains in SIMD registers, one per OpenMP thread) is compiled with
``gcc -O3 -march=native -fopenmp`` (or the ``-march`` of the suite's target) into a temporary directory
and run in a few bursts per thread count; its JSON lines give the fastest and the median of its repeats
in GFLOP/s. Without the source (an installed package
has no ``benchmarks/``) or a compiler, :func:`measure_peak` returns None. ``python -m
tesched.tools.bench.peak`` prints the figures.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tesched.config import settings

SOURCE = Path(__file__).resolve().parent / "peak_flops.c"
FLAGS = ("-O3", "-fopenmp")
NATIVE = ("-march=native",)
FULL_ITERATIONS, QUICK_ITERATIONS = 500_000, 100_000
"""FMA steps per chain and repeat: about a millisecond per repeat, short enough that on a shared machine
some repeats run undisturbed (the best repeat is the peak; the median shows the load)."""
FULL_REPEATS, QUICK_REPEATS = 40, 20
BURSTS, BURST_GAP_SECONDS = 5, 0.2
"""The repeats run in BURSTS separate runs of the program, BURST_GAP_SECONDS apart, so that a burst of
load from other processes does not spoil every repeat."""


@dataclass(frozen=True)
class Peak:
    """GFLOP/s of one thread count: the fastest repeat and the median repeat."""

    threads: int
    best_gflops: float
    median_gflops: float
    vector_bytes: int


def compile_peak(directory: Path, source: Path = SOURCE, march: tuple[str, ...] = NATIVE) -> Path | None:
    """The compiled benchmark in ``directory`` (for the instruction set ``march`` names), or None without
    source or compiler."""
    cc = settings().compiler
    if not source.is_file() or shutil.which(cc[0]) is None:
        return None
    exe = directory / "peak_flops"
    done = subprocess.run([*cc, *FLAGS, *march, str(source), "-o", str(exe)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling {source} failed:\n{done.stderr}")
    return exe


def run_peak(exe: Path, threads: int, iterations: int, repeats: int) -> Peak:
    done = subprocess.run([str(exe), str(threads), str(iterations), str(repeats)], capture_output=True,
                          text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return Peak(out["threads"], out["best_gflops"], out["median_gflops"], out["vector_bytes"])


def measure_peak(thread_counts: tuple[int, ...], quick: bool = False,
                 march: tuple[str, ...] = NATIVE) -> dict[int, Peak] | None:
    """Peak GFLOP/s per thread count with the SIMD width of ``march`` (``-march`` flags; this CPU's by
    default), or None when the benchmark cannot be built here."""
    with tempfile.TemporaryDirectory(prefix="tesched-peak-") as tmp:
        exe = compile_peak(Path(tmp), march=march)
        if exe is None:
            return None
        iterations = QUICK_ITERATIONS if quick else FULL_ITERATIONS
        repeats, bursts = (QUICK_REPEATS, 1) if quick else (FULL_REPEATS, BURSTS)
        return {n: _bursts(exe, n, iterations, repeats, bursts) for n in sorted(set(thread_counts))}


def _bursts(exe: Path, threads: int, iterations: int, repeats: int, bursts: int) -> Peak:
    """The best repeat of all bursts, and the median of the bursts' medians."""
    runs = []
    for k in range(bursts):
        if k:
            time.sleep(BURST_GAP_SECONDS)
        runs.append(run_peak(exe, threads, iterations, repeats))
    return Peak(threads, max(r.best_gflops for r in runs), statistics.median(r.median_gflops for r in runs),
                runs[0].vector_bytes)


def main() -> None:
    threads = tuple(int(a) for a in sys.argv[1:]) or (1, os.cpu_count() or 1)
    peaks = measure_peak(threads)
    if peaks is None:
        sys.exit(f"cannot build {SOURCE} (source or C compiler missing)")
    for peak in peaks.values():
        print(json.dumps(asdict(peak)))


if __name__ == "__main__":
    main()
