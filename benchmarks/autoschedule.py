"""Automatic scheduling against schedules written by hand and against Halide 21's autoschedulers.

For each pipeline of ``autoschedule_pipelines.py`` and ``autoschedule_images.py`` (pyramid, gathers,
scatter; no Halide definitions): tesched naive (every stage at the root, no loop
transformation), ``auto_schedule``, ``tune`` (``--trials`` measurements, ``--budget`` seconds, a fresh
tuning database), the hand or library-default schedule where one exists, and Halide 21's Mullapudi2016,
Li2018 and Adams2019 (``pip install halide==21.0.0``; skipped when absent) on the same definition. Every
variant is checked against tesched's naive kernel, then all are timed in one process, interleaved round
robin (``tesched.driver.timing``), with ``--threads`` threads for tesched and Halide alike. Prints
medians (and minimums) in microseconds, the ratios the goals of the automatic scheduler are stated in,
their geometric means, and the time ``auto_schedule`` took to decide (CPU time of the process, which is
the wall time on an idle machine: it runs on one thread), also for a 20-stage chain.

    OMP_WAIT_POLICY=passive python benchmarks/autoschedule.py [--threads 2] [--rounds 15] [--trials 64]
        [--budget 60] [--only blur,matmul] [--no-halide] [--no-tune]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from autoschedule_images import IMAGE_PIPELINES  # noqa: E402
from autoschedule_pipelines import PIPELINES, Pipeline, stencil_chain  # noqa: E402

import tesched as ts  # noqa: E402
from tesched.driver.timing import time_interleaved  # noqa: E402

HALIDE_SCHEDULERS = ("Mullapudi2016", "Li2018", "Adams2019")


def load_halide(threads: int):
    os.environ.setdefault("HL_NUM_THREADS", str(threads))
    try:
        import halide as hl
    except ImportError:
        return None
    lib = Path(hl.__file__).parent / "lib64"
    for name in HALIDE_SCHEDULERS:
        hl.load_plugin(str(lib / f"libautoschedule_{name.lower()}.so"))
    return hl


def halide_variant(hl, pipe: Pipeline, scheduler: str, threads: int, outputs: list[np.ndarray]):
    funcs, params = pipe.halide(hl)
    pipeline = hl.Pipeline(funcs)
    t0 = time.perf_counter()
    pipeline.apply_autoscheduler(hl.get_host_target(),
                                 hl.AutoschedulerParams(scheduler, {"parallelism": str(threads)}))
    callable_ = pipeline.compile_to_callable([p for p, _ in params])
    seconds = time.perf_counter() - t0
    in_buffers = [hl.Buffer(a) for _, a in params]
    out_buffers = [hl.Buffer(o) for o in outputs]

    def run():
        callable_(*in_buffers, *out_buffers)
        return outputs
    return run, seconds


def tesched_variant(sch: ts.Schedule, pipe: Pipeline):
    kernel = ts.build(sch, pipe.inputs + pipe.outputs)
    outs = [np.empty([int(d) for d in t.shape], np.float32) for t in pipe.outputs]
    run = kernel.prepare(*pipe.arrays, *outs)
    return lambda: (run(), outs)[1]


def measure_pipeline(key: str, args, hl) -> dict:
    pipe = {**PIPELINES, **IMAGE_PIPELINES}[key]()
    variants, info = {}, {}
    variants["naive"] = tesched_variant(ts.create_schedule([o.op for o in pipe.outputs]), pipe)
    reference = [o.copy() for o in variants["naive"]()]
    t0 = time.process_time()
    auto = ts.auto_schedule(pipe.outputs)
    info["decide_ms"] = (time.process_time() - t0) * 1e3
    variants["auto"] = tesched_variant(auto, pipe)
    if not args.no_tune:
        db = Path(tempfile.mkdtemp()) / "tuning.json"
        t0 = time.perf_counter()
        result = ts.tune(pipe.outputs, pipe.inputs + pipe.outputs, trials=args.trials, timeout=args.budget,
                         db=db, progress=False)
        info["tune_s"] = time.perf_counter() - t0
        info["tune_trials"] = len(result.history)
        variants["tuned"] = tesched_variant(result.schedule, pipe)
    if pipe.hand is not None:
        variants[pipe.hand_label] = tesched_variant(pipe.hand(), pipe)
    if hl is not None and not args.no_halide and pipe.halide is not None:
        for name in HALIDE_SCHEDULERS:
            try:
                outs = [np.empty([int(d) for d in t.shape], np.float32) for t in pipe.outputs]
                variants[name], info[f"{name}_s"] = halide_variant(hl, pipe, name, args.threads, outs)
            except Exception as err:  # an autoscheduler that fails on a pipeline is reported, not fatal
                info[f"{name}_error"] = str(err).splitlines()[0][:120]
    for label, run in list(variants.items()):
        problem = check(run, reference, pipe.tolerance)
        if problem:
            info[f"{label}_error"] = problem
            del variants[label]
    info["timing"] = time_interleaved(variants, args.rounds)
    info["name"] = pipe.name
    info["hand_label"] = pipe.hand_label if pipe.hand is not None else None
    return info


def check(run, reference: list[np.ndarray], tolerance: float) -> str:
    """Why ``run``'s outputs are not ``reference`` (empty if they are)."""
    try:
        outputs = run()
    except Exception as err:  # a variant that fails at run time is reported, not fatal
        return f"failed: {str(err).splitlines()[0][:120]}"
    for got, want in zip(outputs, reference):
        scale = max(1.0, float(np.abs(want).max()))
        if not np.allclose(got, want, rtol=tolerance, atol=tolerance * scale):
            return f"wrong result (max error {np.abs(got - want).max():.3g})"
    return ""


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(results: list[dict]) -> None:
    labels = ["naive", "auto", "tuned", "hand/default"] + list(HALIDE_SCHEDULERS)
    print("| pipeline | " + " | ".join(f"{x} µs" for x in labels) + " | auto decides, CPU ms | tune s (trials) |")
    print("|---" * (len(labels) + 3) + "|")
    ratios: dict[str, list[float]] = {k: [] for k in ("auto/hand", "tuned/hand", "auto/best Halide",
                                                      "tuned/best Halide")}
    tuned_beats_every_halide = []
    for info in results:
        t = info["timing"]
        hand = t.get(info["hand_label"]) if info["hand_label"] else None
        cells = []
        for label in labels:
            timing = hand if label == "hand/default" else t.get(label)
            err = info.get(f"{label}_error")
            cells.append(f"{timing.median * 1e6:.1f} ({timing.min * 1e6:.1f})" if timing else
                         ("failed" if err else "-"))
        tune = f"{info['tune_s']:.0f} ({info['tune_trials']})" if "tune_s" in info else "-"
        print(f"| {info['name']} | " + " | ".join(cells) + f" | {info['decide_ms']:.0f} | {tune} |")
        halide = [t[h].median for h in HALIDE_SCHEDULERS if h in t]
        if hand is not None:
            ratios["auto/hand"].append(hand.median / t["auto"].median)
            if "tuned" in t:
                ratios["tuned/hand"].append(hand.median / t["tuned"].median)
        if halide:
            ratios["auto/best Halide"].append(min(halide) / t["auto"].median)
            if "tuned" in t:
                ratios["tuned/best Halide"].append(min(halide) / t["tuned"].median)
                tuned_beats_every_halide.append(all(t["tuned"].median < h for h in halide))
    print()
    for key, values in ratios.items():
        print(f"speed-up {key}: geometric mean {geomean(values):.2f}x over {len(values)} pipelines "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    if tuned_beats_every_halide:
        print(f"tuned ahead of every Halide autoscheduler on {sum(tuned_beats_every_halide)} of "
              f"{len(tuned_beats_every_halide)} pipelines")
    errors = [f"{info['name']}: {k[:-6]}: {v}" for info in results for k, v in info.items() if k.endswith("_error")]
    for line in errors:
        print("not timed:", line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of tuning per pipeline")
    ap.add_argument("--only", default="", help="comma-separated pipeline keys: " + ",".join({**PIPELINES, **IMAGE_PIPELINES}))
    ap.add_argument("--no-halide", action="store_true")
    ap.add_argument("--no-tune", action="store_true")
    args = ap.parse_args()
    ts.set_num_threads(args.threads)
    hl = None if args.no_halide else load_halide(args.threads)
    keys = [k for k in args.only.split(",") if k] or list({**PIPELINES, **IMAGE_PIPELINES})
    results = []
    for key in keys:
        print(f"... {key}", file=sys.stderr, flush=True)
        results.append(measure_pipeline(key, args, hl))
        print({k: (f"{v.median * 1e6:.1f}" if hasattr(v, "median") else v)
               for k, v in {**results[-1], **results[-1]["timing"]}.items() if k != "timing"},
              file=sys.stderr, flush=True)
    report(results)
    chain = stencil_chain(20)
    times = []
    for _ in range(3):
        t0 = time.process_time()
        ts.auto_schedule(chain)
        times.append(time.process_time() - t0)
    print(f"auto_schedule of a 20-stage chain (stencils, exponentials, reductions; dependence check "
          f"included): {min(times) * 1e3:.0f} ms CPU (best of 3)")


if __name__ == "__main__":
    main()
