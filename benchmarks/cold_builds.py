"""Cold build time of every kernel the tutorials and the benchmark suite build.

Each script runs in its own process with an empty kernel cache and ``TESCHED_BUILD_LOG`` set, so
every ``build`` (direct, or one kernel of a graph) appends its lowering and compile seconds; quick mode
(``TESCHED_QUICK=1``, ``--quick``) keeps the runs short: the shapes are smaller, but the kernels'
structure, and so gcc's work, is the same. It prints, per script, the kernels built, the median and
slowest cold build in wall seconds and in CPU seconds (the process's and the compiler's: what a loaded
machine does not stretch), and every kernel over the budget (2 s of wall time by default), with its CPU
seconds and C line count.

    python benchmarks/cold_builds.py                 # every tutorial and python -m tesched.bench --quick
    python benchmarks/cold_builds.py --budget 1.5 tutorials/07_optimize_gemm.py

Build times scale with the load of the machine: the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCRIPTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py")) + ["-m tesched.bench"]


def run_script(script: str, log: Path, cache: Path) -> tuple[float, str]:
    """Run ``script`` (a path, or ``-m module``) in quick mode; returns its seconds and its error output
    when it failed."""
    command = [sys.executable, *script.split()] if script.startswith("-m ") else [sys.executable, str(ROOT / script)]
    if script.startswith("-m "):
        command.append("--quick")
    env = dict(os.environ, TESCHED_QUICK="1", TESCHED_BUILD_LOG=str(log), TESCHED_CACHE_DIR=str(cache),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, "" if done.returncode == 0 else done.stderr.strip().splitlines()[-1:][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="*", default=DEFAULT_SCRIPTS, help="scripts (paths, or '-m module')")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds a cold build may take")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(f"{'script':<34} {'kernels':>7} {'median s':>9} {'max s':>7} {'median cpu':>10} {'max cpu':>7}"
          f"  over {args.budget:g} s")
    over_all: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="cold-builds-") as scratch:
        for k, script in enumerate(args.scripts):
            log, cache = Path(scratch) / f"log{k}.jsonl", Path(scratch) / f"cache{k}"
            seconds, error = run_script(script, log, cache)
            records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            cold = [r for r in records if r["compiled"]]
            times = [r["lower_seconds"] + r["finish_compile_seconds"] for r in cold]
            over = [r for r, t in zip(cold, times) if t > args.budget]
            over_all += over
            cpu = [r["cpu_seconds"] for r in cold]
            figures = " ".join(f"{f(v):{w}.2f}" if v else f"{'-':>{w}}" for v, f, w in
                               ((times, statistics.median, 9), (times, max, 7), (cpu, statistics.median, 10), (cpu, max, 7)))
            note = f"  FAILED: {error}" if error else ""
            print(f"{script:<34} {len(cold):>7} {figures}  {len(over)}{note}   ({seconds:.0f} s in all)")
            for r in over:
                print(f"    {r['kernel']}: lowering {r['lower_seconds']:.2f} s, the rest {r['finish_compile_seconds']:.2f} s,"
                      f" {r['cpu_seconds']:.2f} CPU s, {r['c_lines']} lines of C")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"kernels over {args.budget:g} s: {len(over_all)}")


if __name__ == "__main__":
    main()
