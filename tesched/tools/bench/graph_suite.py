"""``python -m tesched.bench --graph``: the model path at kernel speed. Each case of :mod:`.graph_cases`
is built, checked, and timed interleaved (:mod:`tesched.driver.timing`); the report gives medians (minima), the graph's
speed-up over each other variant, its kernel count, and whether each target of the issue is met; the call
overhead rows give plain against prepared calls. Nothing is asserted: targets are reported, met or not.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from tesched.tools.bench.graph_cases import GRAPH_CASES, GraphCase, call_overheads
from tesched.target import current_target
from tesched.tools.bench.peers import describe_peers, describe_target
from tesched.tools.bench.suite import cpu_model, _load
from tesched.tools.bench.threads import describe_thread_pools, optional_module, recorded_pools, set_all_threads
from tesched.driver.timing import SETTLE_SECONDS, Timing, busy_warning, time_interleaved

LABELS = ("graph", "graph prepared", "hand", "numpy", "torch")


@dataclass
class GraphRow:
    key: str
    name: str
    flops: float
    timings: dict[str, Timing]
    kernels: int
    targets: list[tuple[str, bool, bool]]
    note: str = ""


@dataclass
class OverheadRow:
    name: str
    plain: Timing
    prepared: Timing
    allowed_us: float
    above_prepared: bool

    @property
    def measured_us(self) -> float:
        return (self.plain.median - (self.prepared.median if self.above_prepared else 0.0)) * 1e6

    @property
    def met(self) -> bool:
        return self.measured_us <= self.allowed_us


@dataclass
class GraphSuiteResult:
    threads: int
    repeat: int
    environment: dict[str, object]
    rows: list[GraphRow] = field(default_factory=list)
    overheads: list[OverheadRow] = field(default_factory=list)


def speedup(row: GraphRow, versus: str, cpu: bool = False) -> float | None:
    """``versus``'s median over the graph's median (> 1: the graph is faster); ``cpu``: of processor time."""
    if versus not in row.timings:
        return None
    if cpu:
        return row.timings[versus].cpu_median / max(row.timings["graph"].cpu_median, 1e-12)
    return row.timings[versus].median / row.timings["graph"].median


def _targets(built: GraphCase, row: GraphRow) -> list[tuple[str, bool, bool]]:
    """Per target: its text, whether it is met by wall-clock medians, and by processor-time medians."""
    out = []
    for target in built.targets:
        kernels_ok = target.kernels is None or row.kernels <= target.kernels
        met = [ratio is not None and ratio >= target.ratio and kernels_ok
               for ratio in (speedup(row, target.versus), speedup(row, target.versus, cpu=True))]
        out.append((target.describe(), met[0], met[1]))
    return out


def run_graph_suite(threads: int | None = None, repeat: int = 30, quick: bool = False, only: list[str] | None = None,
                    use_torch: bool = True, progress: Callable[[str], None] = lambda _: None) -> GraphSuiteResult:
    """Build, check and time the graph cases (those whose key is in ``only``) and the call overheads."""
    threads = threads or os.cpu_count() or 1
    torch = optional_module("torch") if use_torch else None
    environment: dict[str, object] = {"cpu": cpu_model(), "cores": os.cpu_count(),
                                      "threads_set": set_all_threads(threads, torch),
                                      "torch": getattr(torch, "__version__", None), "target": current_target().name,
                                      "peers": describe_peers(torch), "load_average_start": _load()}
    result = GraphSuiteResult(threads, repeat, environment)
    settle = 0.0 if quick else SETTLE_SECONDS
    for key, make in GRAPH_CASES:
        if only and key not in only:
            continue
        started = time.perf_counter()
        built = make(quick, torch)
        built.case.check()
        progress(f"{built.case.name}: built and checked in {time.perf_counter() - started:.1f} s, timing")
        timings = time_interleaved(built.case.variants, repeat, settle=settle)
        row = GraphRow(key, built.case.name, built.case.flops, timings, built.case.kernels["graph"], [],
                       built.case.note)
        row.targets = _targets(built, row)
        result.rows.append(row)
    if not only or "overhead" in only:
        for case in call_overheads(quick):
            progress(f"call overhead: {case.name}")
            timings = time_interleaved({"plain": case.plain, "prepared": case.prepared}, repeat * 4, settle=0.0)
            result.overheads.append(OverheadRow(case.name, timings["plain"], timings["prepared"], case.allowed_us,
                                                case.above_prepared))
    environment["load_average_end"] = _load()
    return result


def _cell(t: Timing | None) -> str:
    return "-" if t is None else f"{t.median * 1e6:.1f} ({t.min * 1e6:.1f})"


def format_graph_table(result: GraphSuiteResult) -> str:
    env = result.environment
    lines = [f"tesched.graph against the hand kernels | threads {result.threads} | {result.repeat} interleaved "
             f"rounds | PyTorch {env['torch'] or 'not installed'}",
             f"load average at start {env.get('load_average_start')}, at end {env.get('load_average_end')}",
             describe_target(env), describe_thread_pools(recorded_pools(env)),
             "times: microseconds per call, median (min); graph: plain exe(*inputs); vs X: X median / graph median", ""]
    width = max([len(r.name) for r in result.rows] + [8])
    header = f"{'workload':<{width}}  {'kernels':>7}  " + "  ".join(f"{v + ' us':>21}" for v in LABELS) + \
        "  " + "  ".join(f"{'vs ' + v.split()[-1]:>9}" for v in LABELS[1:])
    lines += [header, "-" * len(header)]
    for row in result.rows:
        ratios = "  ".join(f"{'-' if speedup(row, v) is None else f'{speedup(row, v):.2f}x':>9}" for v in LABELS[1:])
        lines.append(f"{row.name:<{width}}  {row.kernels:>7}  " +
                     "  ".join(f"{_cell(row.timings.get(v)):>21}" for v in LABELS) + "  " + ratios)
    lines += ["", "processor time per call, microseconds (median; all threads; the work without the waits):"]
    for row in result.rows:
        lines.append(f"  {row.name}: " + ", ".join(f"{v} {row.timings[v].cpu_median * 1e6:.1f}"
                                                   for v in LABELS if v in row.timings))
    lines += ["", "targets (by wall-clock medians; by processor-time medians):"]
    for row in result.rows:
        for text, met, met_cpu in row.targets:
            wall, cpu = ("met    " if m else "NOT met" for m in (met, met_cpu))
            lines.append(f"  {wall}; {cpu}  {row.name}: {text}")
    if result.overheads:
        lines += ["", "call overhead, microseconds, median (min):"]
        for o in result.overheads:
            what = "plain - prepared" if o.above_prepared else "plain"
            lines.append(f"  {'met    ' if o.met else 'NOT met'}  {o.name}: plain {_cell(o.plain)}, prepared "
                         f"{_cell(o.prepared)}; {what} {o.measured_us:.2f} us (allowed {o.allowed_us:.1f})")
    notes = [f"  {row.name}: {row.note}" for row in result.rows if row.note]
    if notes:
        lines += ["", "notes:"] + notes
    warning = graph_warning(result)
    return "\n".join(lines + ([""] + warning if warning else []))


def graph_warning(result: GraphSuiteResult) -> list[str]:
    """The busy-machine warning of the run (empty when every measurement was steady)."""
    env = result.environment
    groups = {row.name: row.timings for row in result.rows}
    groups.update({f"call overhead {o.name}": {"plain": o.plain, "prepared": o.prepared} for o in result.overheads})
    return busy_warning(groups, (env.get("load_average_start"), env.get("load_average_end")))


def graph_json(result: GraphSuiteResult) -> dict:
    return {"threads": result.threads, "repeat": result.repeat, "environment": result.environment,
            "workloads": [{"key": r.key, "name": r.name, "flops": r.flops, "kernels": r.kernels,
                           "variants": {k: {"median_us": t.median * 1e6, "min_us": t.min * 1e6,
                                            "cpu_median_us": t.cpu_median * 1e6}
                                        for k, t in r.timings.items()},
                           "graph_speedup": {v: speedup(r, v) for v in LABELS[1:] if v in r.timings},
                           "targets": [{"target": text, "met": met, "met_by_processor_time": met_cpu}
                                       for text, met, met_cpu in r.targets]}
                          for r in result.rows],
            "call_overhead": [{"name": o.name, "plain_us": o.plain.median * 1e6, "prepared_us": o.prepared.median * 1e6,
                               "measured_us": o.measured_us, "allowed_us": o.allowed_us, "met": o.met}
                              for o in result.overheads],
            "busy_warning": graph_warning(result)}
