"""Present a :class:`~.suite.SuiteResult`: the text table, a JSON document, and a bar chart (matplotlib,
optional).

Times are microseconds per call, median (and minimum) over the interleaved rounds. A speed-up is
``median time of the other variant / median time of tesched fused``: above 1, tesched fused is faster.
GFLOP/s are at the median. GEMM's GFLOP/s are also given as a fraction of the measured peak FMA
throughput at the same thread count (median over median, and best over best).
"""
from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from pathlib import Path

from tesched.tools.bench.peers import describe_target
from tesched.tools.bench.suite import Row, SuiteResult
from tesched.tools.bench.threads import describe_thread_pools, optional_module, recorded_pools
from tesched.driver.timing import busy_warning
from tesched.tools.bench.workloads import VARIANTS

COMPARED = ("unfused", "numpy", "torch")


def speedup(row: Row, other: str) -> float | None:
    """``other``'s median over fused's median, or None when either is missing."""
    if "fused" not in row.timings or other not in row.timings:
        return None
    return row.timings[other].median / row.timings["fused"].median


def gflops(row: Row, label: str = "fused") -> float | None:
    timing = row.timings.get(label)
    return row.flops / timing.median / 1e9 if timing and row.flops else None


def gemm_fraction_of_peak(result: SuiteResult) -> dict[str, float] | None:
    """GEMM GFLOP/s over peak GFLOP/s at the suite's thread count: ``median`` and ``best``."""
    row = next((r for r in result.rows if r.key == "gemm"), None)
    if row is None or result.peak is None or result.threads not in result.peak or "fused" not in row.timings:
        return None
    peak, timing = result.peak[result.threads], row.timings["fused"]
    return {"gemm_gflops_median": row.flops / timing.median / 1e9, "gemm_gflops_best": row.flops / timing.min / 1e9,
            "peak_gflops_median": peak.median_gflops, "peak_gflops_best": peak.best_gflops,
            "median": row.flops / timing.median / 1e9 / peak.median_gflops,
            "best": row.flops / timing.min / 1e9 / peak.best_gflops}


def _time_cell(row: Row, label: str) -> str:
    t = row.timings.get(label)
    return "-" if t is None else f"{t.median * 1e6:.1f} ({t.min * 1e6:.1f})"


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def format_table(result: SuiteResult) -> str:
    env = result.environment
    lines = [f"tesched {env['tesched']} | {env['cpu']}, {env['cores']} cores | threads {result.threads} | "
             f"{result.repeat} interleaved rounds | NumPy {env['numpy']} | PyTorch {env['torch'] or 'not installed'}",
             f"load average at start {env.get('load_average_start')}, at end {env.get('load_average_end')}",
             describe_target(env), describe_thread_pools(recorded_pools(env)),
             "times: microseconds per call, median (min); speed-up: other median / fused median (>1: tesched faster)",
             ""]
    width = max([len(r.name) for r in result.rows] + [8])
    header = (f"{'workload':<{width}}  {'kernels':>7}  " + "  ".join(f"{v + ' us':>19}" for v in VARIANTS) +
              f"  {'GFLOP/s':>7}  " + "  ".join(f"{'vs ' + v:>10}" for v in COMPARED))
    lines += [header, "-" * len(header)]
    for row in result.rows:
        kernels = "/".join(str(row.kernels[k]) for k in ("fused", "unfused") if k in row.kernels)
        flops = gflops(row)
        lines.append(f"{row.name:<{width}}  {kernels:>7}  " + "  ".join(f"{_time_cell(row, v):>19}" for v in VARIANTS) +
                     f"  {('-' if flops is None else f'{flops:.1f}'):>7}  " +
                     "  ".join(f"{_ratio_cell(speedup(row, v)):>10}" for v in COMPARED))
    notes = []
    for row in result.rows:
        for label, t in row.timings.items():
            if label not in VARIANTS:
                kernels = f" ({row.kernels[label]} kernels)" if label in row.kernels else ""
                notes.append(f"  {row.name}, {label}{kernels}: {t.median * 1e6:.1f} us ({t.min * 1e6:.1f}); "
                             f"fused speed-up {_ratio_cell(speedup(row, label))}")
        if row.note:
            notes.append(f"  {row.name}: {row.note}")
    if notes:
        lines += ["", "other variants and notes:"] + notes
    if result.peak:
        lines += ["", "peak FP32 FMA throughput (tesched/tools/bench/peak_flops.c), GFLOP/s best / median:"]
        lines += [f"  {p.threads} thread{'s' if p.threads > 1 else ''}: {p.best_gflops:.1f} / {p.median_gflops:.1f} "
                  f"({p.vector_bytes}-byte vectors)" for p in result.peak.values()]
        fraction = gemm_fraction_of_peak(result)
        if fraction:
            lines.append(f"  GEMM at {result.threads} threads: {fraction['gemm_gflops_median']:.1f} GFLOP/s median = "
                         f"{fraction['median']:.0%} of the median peak; {fraction['gemm_gflops_best']:.1f} best = "
                         f"{fraction['best']:.0%} of the best peak")
    if result.build_times:
        lines += ["", "build time, ms (empty kernel cache): cold / cached same process / cached new process"]
        lines += [f"  {b.kernel:<10} {b.cold * 1e3:8.1f} / {b.cached_same_process * 1e3:6.1f} / "
                  f"{b.cached_new_process * 1e3:6.1f}" for b in result.build_times]
    warning = suite_warning(result)
    if warning:
        lines += [""] + warning
    return "\n".join(lines)


def suite_warning(result: SuiteResult) -> list[str]:
    """The busy-machine warning of the run (empty when every measurement was steady)."""
    env = result.environment
    return busy_warning({row.name: row.timings for row in result.rows},
                        (env.get("load_average_start"), env.get("load_average_end")))


def to_json(result: SuiteResult) -> dict:
    rows = []
    for row in result.rows:
        rows.append({"key": row.key, "name": row.name, "flops": row.flops, "kernels": row.kernels, "note": row.note,
                     "variants": {label: {"median_us": t.median * 1e6, "min_us": t.min * 1e6, "rounds": t.rounds,
                                          "calls_per_round": t.calls, "gflops": gflops(row, label)}
                                  for label, t in row.timings.items()},
                     "fused_speedup": {label: speedup(row, label) for label in row.timings if label != "fused"}})
    return {"threads": result.threads, "repeat": result.repeat, "quick": result.quick,
            "environment": result.environment,
            "peak": None if result.peak is None else [asdict(p) for p in result.peak.values()],
            "gemm_fraction_of_peak": gemm_fraction_of_peak(result),
            "build_times": [asdict(b) for b in result.build_times], "workloads": rows,
            "busy_warning": suite_warning(result)}


def write_json(result: SuiteResult, path: str | Path, record: dict[str, str] | None = None) -> None:
    """The JSON document of ``result``, with ``record`` (the command line that produced it and the date; the
    documentation's figures page renders such a file)."""
    Path(path).write_text(json.dumps(dict(to_json(result), **(record or {})), indent=2) + "\n")


def plot(result: SuiteResult, path: str | Path) -> bool:
    """A bar chart of each variant's speed relative to NumPy (NumPy median / variant median, log scale);
    False when matplotlib is not installed."""
    if optional_module("matplotlib") is None:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in result.rows if "numpy" in r.timings]
    labels = [v for v in VARIANTS if any(v in r.timings for r in rows)]
    fig, ax = plt.subplots(figsize=(max(8.0, 1.8 * len(rows)), 5.0))
    width = 0.8 / max(1, len(labels))
    for k, label in enumerate(labels):
        xs = [i + (k - (len(labels) - 1) / 2) * width for i in range(len(rows))]
        ys = [r.timings["numpy"].median / r.timings[label].median if label in r.timings else 0.0 for r in rows]
        ax.bar(xs, ys, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([textwrap.fill(r.name, 18) for r in rows], fontsize=7)
    ax.set_ylabel("speed relative to NumPy (median)")
    ax.set_title(f"tesched vs NumPy and PyTorch, {result.threads} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
