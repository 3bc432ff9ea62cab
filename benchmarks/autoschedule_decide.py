"""How long ``auto_schedule`` takes to decide, against the size of the pipeline.

For interpolation pyramids (``tesched.recipes.pyramid``) of 2, 5 and 10 levels (6, 21 and 46 stages with the input)
over a 1024x1024 image, local Laplacian filters (``tesched.recipes.local_laplacian``, 8 intensity levels) of 4 and
8 pyramid levels (37 and 81 stages) and stencil chains of 20 and 100 stages (``autoschedule_pipelines.stencil_chain``),
prints the median, minimum and maximum CPU time of ``auto_schedule`` (the decision, applying the plan and
the dependence check; one thread, so CPU time is wall time on an idle machine) over ``--runs`` runs, and
the decision alone (``decide``, no legality check). Nothing is built or run.

    python benchmarks/autoschedule_decide.py [--runs 5] [--size 1024]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from autoschedule_pipelines import stencil_chain  # noqa: E402

import tesched as ts  # noqa: E402
from tesched.autoschedule.decide import decide  # noqa: E402
from tesched.autoschedule.machine import resolve  # noqa: E402
from tesched.autoschedule.pipeline import Pipeline  # noqa: E402
from tesched.recipes.local_laplacian import local_laplacian  # noqa: E402
from tesched.recipes.pyramid import interpolate  # noqa: E402


def cpu_seconds(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.process_time()
        call()
        out.append(time.process_time() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=1024)
    args = ap.parse_args()
    ts.auto_schedule(stencil_chain(2))          # imports and first-use costs out of the timings
    cases = {}
    for levels in (2, 5, 10):
        A = ts.placeholder((args.size, args.size), name="A")
        cases[f"pyramid, {levels} levels"] = interpolate(A, levels)
    for levels in (4, 8):
        A = ts.placeholder((args.size, args.size), name="A")
        cases[f"local Laplacian, {levels} levels"] = local_laplacian(A, levels)
    for stages in (20, 100):
        cases[f"stencil chain, {stages} stages"] = stencil_chain(stages)
    print("| pipeline | stages | auto_schedule ms (median [min, max]) | decide only ms (median) |")
    print("|---|---|---|---|")
    machine = resolve(None)
    for name, out in cases.items():
        full = cpu_seconds(lambda: ts.auto_schedule(out), args.runs)
        alone = cpu_seconds(lambda: decide(Pipeline(ts.create_schedule(out.op)), machine), args.runs)
        stages = len(ts.create_schedule(out.op).stages)
        print(f"| {name} | {stages} | {statistics.median(full) * 1e3:.0f} [{min(full) * 1e3:.0f}, "
              f"{max(full) * 1e3:.0f}] | {statistics.median(alone) * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
