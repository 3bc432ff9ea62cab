"""Halide's applications in tesched beside Halide 21: local Laplacian (8 levels), bilateral grid, camera
pipeline, multi-scale interpolation (10 levels), Harris, unsharp mask, non-local means.

tesched runs each app as declared in ``tesched.recipes`` (``none``: every stage at the root, no loop
transformation), ``auto_schedule`` (``auto``), ``tune`` (``--tune``: ``--trials`` measurements, a fresh
database) and the hand schedule of ``tesched.recipes.app_schedules`` (``hand``). Halide runs the same
algorithms (``halide_apps_halide.py``): every Func at the root (``root``), Mullapudi2016, Li2018, Adams2019,
and its published CPU schedule (``hand``); without ``halide==21.0.0`` those columns are skipped, with the
reason printed. Every variant is checked against the NumPy reference (``tests/recipes/references.py``)
before it is timed; then all run in one process, interleaved round robin, on ``--threads`` threads.

Prints medians in ms (interquartile spread), speed ratios (the slower time over the faster, > 1: the
first named is faster), how long ``auto_schedule`` took to decide (process CPU time), the cold
lower+build time of each tesched variant (a fresh kernel cache), the load average and the ISA.

    OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 HL_NUM_THREADS=2 python benchmarks/halide_apps.py
        [--size 1536x2560] [--scale 1] [--rounds 9] [--only harris,unsharp] [--tune --trials 64] [--no-halide]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
os.environ.setdefault("TESCHED_CACHE_DIR", tempfile.mkdtemp(prefix="halide-apps-cache-"))   # cold builds

import tesched as ts  # noqa: E402
from tesched.driver.timing import time_interleaved  # noqa: E402
from tests.recipes.apps import APPS, case  # noqa: E402

HALIDE_SCHEDULERS = ("Mullapudi2016", "Li2018", "Adams2019")
NL_MEANS_SCALE = 0.5
"""nl_means runs at half the size in each dimension: its 49-plane stages at the root take ~3 GB at full size."""


def load_halide(threads: int):
    """Halide with its autoscheduler plugins, or the reason it is absent."""
    os.environ["HL_NUM_THREADS"] = str(threads)
    try:
        import halide as hl
    except ImportError as err:
        return None, f"halide is not installed ({err}; pip install halide==21.0.0)"
    lib = Path(hl.__file__).parent / "lib64"
    for name in HALIDE_SCHEDULERS:
        hl.load_plugin(str(lib / f"libautoschedule_{name.lower()}.so"))
    return hl, ""


def tesched_variants(c, args) -> tuple[dict, dict]:
    """The tesched kernels of one app (label -> call), and what deciding and building took."""
    runs, info = {}, {}
    out = np.empty([int(d) for d in c.output.shape], c.expected.dtype if c.expected.dtype == np.uint8 else np.float32)

    def add(label, schedule):
        t0 = time.perf_counter()
        kernel = ts.build(schedule, c.args, name=f"app_{label}")
        info[f"build_{label}_s"] = time.perf_counter() - t0
        result = np.empty_like(out)
        run = kernel.prepare(*c.arrays, result)
        runs[label] = lambda: (run(), result)[1]
    add("none", ts.create_schedule(c.output.op))
    t0 = time.process_time()
    auto = ts.auto_schedule(c.output)
    info["decide_s"] = time.process_time() - t0
    add("auto", auto)
    if args.tune:
        t0 = time.perf_counter()
        result = ts.tune(c.output, c.args, trials=args.trials, db=Path(tempfile.mkdtemp()) / "tuning.json",
                         progress=False)
        info["tune_s"] = time.perf_counter() - t0
        add("tuned", result.schedule)
    add("hand", c.hand())
    return runs, info


def halide_variants(hl, name: str, c, threads: int) -> tuple[dict, dict]:
    """Halide's root, autoscheduled and hand variants of one app (label -> call), and compile times."""
    import halide_apps_halide as H
    runs, info = {}, {}
    shape = c.expected.shape
    for label in ("root", *HALIDE_SCHEDULERS, "hand"):
        try:
            out, funcs, params, hand = H.APPS[name](hl, c.arrays[0].shape)
            pipeline = hl.Pipeline(out)
            t0 = time.perf_counter()
            if label == "root":
                for f in funcs.values():
                    if f.name() != out.name():
                        f.compute_root()
            elif label == "hand":
                hand()
            else:
                pipeline.apply_autoscheduler(hl.get_host_target(),
                                             hl.AutoschedulerParams(label, {"parallelism": str(threads)}))
            call = pipeline.compile_to_callable(params)
            info[f"compile_{label}_s"] = time.perf_counter() - t0
            result = np.empty(shape, c.expected.dtype if c.expected.dtype == np.uint8 else np.float32)
            ins, outb = [hl.Buffer(a) for a in c.arrays], hl.Buffer(result)
            runs[f"Halide {label}"] = lambda call=call, ins=ins, outb=outb, result=result: (call(*ins, outb), result)[1]
        except Exception as err:     # an autoscheduler that fails on an app is reported, not fatal
            info[f"Halide {label}_error"] = str(err).strip().splitlines()[-1][:160]
    return runs, info


def check(run, c) -> str:
    """Why ``run``'s output is not the NumPy reference (empty if it is)."""
    try:
        got = run()
    except Exception as err:
        return f"failed: {str(err).splitlines()[0][:120]}"
    if c.expected.dtype == np.uint8:     # Halide's pow may round a tone-curve entry the other way
        diff = np.abs(got.astype(int) - c.expected)
        return "" if diff.max() <= 1 and (diff > 0).mean() < 1e-3 else \
            f"wrong result (max error {diff.max()}, {(diff > 0).mean():.2%} of pixels differ)"
    tol = max(c.rtol, 1e-4)
    if not np.allclose(got, c.expected, rtol=tol, atol=max(c.atol, tol * float(np.abs(c.expected).max()))):
        return f"wrong result (max error {np.abs(got - c.expected).max():.3g})"
    return ""


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def measure(name: str, args, hl) -> dict:
    scale = args.scale * (NL_MEANS_SCALE if name == "nl_means" else 1.0)
    h, w = (max(8, int(round(d * scale / 8)) * 8) for d in args.size)
    c = case(name, h, w)
    runs, info = tesched_variants(c, args)
    if hl is not None:
        more, hinfo = halide_variants(hl, name, c, args.threads)
        runs.update(more)
        info.update(hinfo)
    for label, run in list(runs.items()):
        problem = check(run, c)
        if problem:
            info[f"{label}_error"] = problem
            del runs[label]
    info["timing"] = time_interleaved(runs, args.rounds)
    info["size"] = f"{h}x{w}"
    return info


LABELS = ("none", "auto", "tuned", "hand", "Halide root", *(f"Halide {s}" for s in HALIDE_SCHEDULERS), "Halide hand")


def header() -> None:
    print("| app (h x w) | " + " | ".join(LABELS) + " | auto decides s | cold build s (none/auto/hand) |")
    print("|---" * (len(LABELS) + 3) + "|", flush=True)


def row(name: str, info: dict) -> None:
    """One app's medians in ms (interquartile spread), as soon as it is measured."""
    t = info["timing"]
    cells = [f"{t[k].median * 1e3:.2f} ({t[k].spread * 1e3:.2f})" if k in t else
             ("failed" if f"{k}_error" in info else "-") for k in LABELS]
    builds = "/".join(f"{info[f'build_{k}_s']:.1f}" for k in ("none", "auto", "hand"))
    print(f"| {name} ({info['size']}) | " + " | ".join(cells) + f" | {info['decide_s']:.2f} | {builds} |", flush=True)


def report(results: dict[str, dict]) -> None:
    """Speed ratios over the apps, and every variant that was not timed and why."""
    ratios: dict[str, list[float]] = {"auto vs best Halide auto": [], "auto vs Halide hand": [],
                                      "tuned vs Halide hand": [], "auto vs none": [], "hand vs Halide hand": []}
    for info in results.values():
        t = info["timing"]
        best = min((t[f"Halide {s}"].median for s in HALIDE_SCHEDULERS if f"Halide {s}" in t), default=None)
        hand = t["Halide hand"].median if "Halide hand" in t else None
        pairs = (("auto vs best Halide auto", "auto", best), ("auto vs none", "auto", t["none"].median),
                 ("auto vs Halide hand", "auto", hand), ("tuned vs Halide hand", "tuned", hand),
                 ("hand vs Halide hand", "hand", hand))
        for key, mine, theirs in pairs:
            if mine in t and theirs is not None:
                ratios[key].append(theirs / t[mine].median)
    print("\nspeed ratios (the other's time over tesched's: > 1 means tesched is faster), in the order of the table")
    for key, values in ratios.items():
        if values:
            print(f"  {key}: geometric mean {geomean(values):.2f}x ({', '.join(f'{v:.2f}' for v in values)})")
    for name, info in results.items():
        for k, v in info.items():
            if k.endswith("_error"):
                print(f"not timed: {name}: {k[:-6]}: {v}")


def isa() -> str:
    flags = set(open("/proc/cpuinfo").read().split()) if os.path.exists("/proc/cpuinfo") else set()
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1536x2560", help="h x w of the images (camera_pipe: of its output)")
    ap.add_argument("--scale", type=float, default=1.0, help="scale both dimensions (rounded to multiples of 8)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--tune", action="store_true", help="also run tune (slow)")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--only", default="", help="comma-separated apps: " + ",".join(APPS))
    ap.add_argument("--no-halide", action="store_true")
    args = ap.parse_args()
    args.size = tuple(int(v) for v in args.size.lower().split("x"))
    ts.set_num_threads(args.threads)
    hl, why = (None, "--no-halide") if args.no_halide else load_halide(args.threads)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; ISA: {isa()}; "
          f"threads: {args.threads}; "
          f"Halide: {'21 (' + hl.get_host_target().to_string() + ')' if hl else 'skipped: ' + why}",
          flush=True)
    results = {}
    header()
    for name in [a for a in args.only.split(",") if a] or APPS:
        print(f"... {name}", file=sys.stderr, flush=True)
        results[name] = measure(name, args, hl)
        row(name, results[name])
    report(results)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
