"""What calling an exported library costs next to calling what tesched built, from Python and from C.

Prints microseconds per call (median over rounds, with the spread between the 25th and 75th percentile)
for, interleaved round-robin in one process:

- a tiny kernel (``C = A + B`` on 4 float32 elements): the built kernel (its checks and the call in one
  pass of tesched's C call helper) and the same kernel exported and loaded back with ``ts.load_module``
  (checks in Python, the call through cffi's ABI mode, the entry point's own checks in C);
- the WeeNet of the graph tests (two conv + batch-norm + ReLU blocks, pooling, dense): the executable
  and the exported model loaded back with ``G.load_executable`` (one C call for the whole model);

and, from a C program linked against the exported model, the same median for ``model()`` itself.

Run:  OMP_WAIT_POLICY=passive python benchmarks/export_call_overhead.py [--rounds N] [--calls N]
(from a checkout: PYTHONPATH=. python benchmarks/export_call_overhead.py)
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tesched as ts
from tesched import graph as G
from tesched.driver import timing
from tesched.driver.kernel import Kernel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "graph"))
from helpers import wee_net, wee_net_reference  # noqa: E402

C_TIMER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "model.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const int rounds = atoi(argv[1]), calls = atoi(argv[2]);
  float data[3 * 8 * 8], out[5];
  for (int i = 0; i < 3 * 8 * 8; i++) data[i] = (float)(i % 7) / 7.0f;
  double *us = malloc(rounds * sizeof(double));
  for (int r = 0; r < rounds; r++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0; k < calls; k++)
      if (model(data, out) != TESCHED_OK) { fprintf(stderr, "%s\n", model_last_error()); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    us[r] = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3) / calls;
  }
  qsort(us, rounds, sizeof(double), cmp);
  printf("%.3f %.3f %.3f\n", us[rounds / 4], us[rounds / 2], us[(3 * rounds) / 4]);
  return 0;
}
"""


def tiny_kernel() -> Kernel:
    A = ts.placeholder((4,), name="A")
    B = ts.placeholder((4,), name="B")
    C = ts.compute((4,), lambda i: A[i] + B[i], name="C")
    return ts.build(ts.create_schedule(C.op), [A, B, C], name="add4")


def round_robin(variants: dict, rounds: int, calls: int) -> dict[str, list[float]]:
    """Microseconds per call of each variant, one batch of ``calls`` calls per variant per round."""
    samples = timing.round_robin(variants, rounds, calls, warmup=1)
    return {name: [t * 1e6 for t in s.wall] for name, s in samples.items()}


def row(name: str, quartiles: tuple[float, float, float]) -> str:
    low, median, high = quartiles
    return f"{name:<46} {median:9.2f} us   (quartiles {low:.2f} .. {high:.2f})"


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], q[1], q[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed batches per variant (default 30)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch (default 2000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tesched-export-bench-") as tmp:
        work = Path(tmp)
        kernel = tiny_kernel()
        loaded = ts.load_module(kernel.export_library(work / "add4.so"))
        a, b, c = np.arange(4, dtype=np.float32), np.ones(4, np.float32), np.empty(4, np.float32)
        loaded(a, b, c)
        np.testing.assert_array_equal(c, a + b)

        f, params = wee_net()
        exe = G.build(f, params)
        model = G.load_executable(exe.export_library(work / "model.so"))
        x = np.random.default_rng(0).standard_normal((1, 3, 8, 8), dtype=np.float32)
        np.testing.assert_allclose(model(x), wee_net_reference(x, params), rtol=1e-4, atol=1e-4)

        times = round_robin({"add4: built kernel": lambda: kernel(a, b, c),
                             "add4: ts.load_module": lambda: loaded(a, b, c),
                             "WeeNet: executable": lambda: exe(x),
                             "WeeNet: G.load_executable": lambda: model(x)}, args.rounds, args.calls)
        (work / "main.c").write_text(C_TIMER)
        subprocess.run(["cc", "-O2", "-I", str(work), str(work / "main.c"), str(work / "model.so"),
                        f"-Wl,-rpath,{work}", "-o", str(work / "main")], check=True)
        out = subprocess.run([str(work / "main"), str(args.rounds), str(args.calls)], capture_output=True,
                             text=True, check=True).stdout.split()
    print(f"{args.rounds} rounds of {args.calls} calls, variants interleaved; microseconds per call")
    for name, values in times.items():
        print(row(name, quartiles(values)))
    low, median, high = map(float, out)
    print(row("WeeNet: model() from a C program", (low, median, high)))


if __name__ == "__main__":
    main()
