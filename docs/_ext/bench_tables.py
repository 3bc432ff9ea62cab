"""Tables of the benchmark suite's JSON output (``python -m tesched.bench [--graph] --json PATH``), for the
documentation's figures page.

:func:`tables` turns one such document into a caption (the command that wrote it, when, on what machine
and under what load) and table rows, the same columns the suite prints: microseconds per call, median
(minimum), per variant; GFLOP/s; and each variant's median over the reference's median (above 1: tesched
faster). It reads only the document (no timing, no tesched import), so a committed JSON file renders the
same numbers on every build; re-running the command in the caption regenerates the file. It does not decide
what is fast or slow, and it does not check targets: the graph suite's own verdicts are shown as written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Table:
    """One table: its title, header and rows (cells are reST)."""

    title: str
    header: list[str]
    rows: list[list[str]]


def _time(variant: dict[str, Any] | None) -> str:
    if variant is None:
        return "-"
    return f"{variant['median_us']:.1f} ({variant['min_us']:.1f})"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _variants(workloads: list[dict[str, Any]]) -> list[str]:
    """Every variant label, in the order the workloads first name them."""
    labels: list[str] = []
    for workload in workloads:
        labels += [label for label in workload["variants"] if label not in labels]
    return labels


def caption(document: dict[str, Any]) -> str:
    """Who measured what, where: the command, date, CPU, threads, rounds, library versions and load."""
    env = document["environment"]
    command = document.get("command") or "(the command was not recorded)"
    parts = [", ".join(str(p) for p in (env.get("cpu"), f"{env['cores']} cores" if env.get("cores") else None,
                                         f"target {env['target']}" if env.get("target") else None) if p),
             f"{document['threads']} threads, {document['repeat']} interleaved rounds",
             ", ".join(f"{name} {env[key]}" for name, key in (("tesched", "tesched"), ("NumPy", "numpy"),
                                                              ("PyTorch", "torch")) if env.get(key)),
             f"load average {env.get('load_average_start')} at the start, {env.get('load_average_end')} at the end"]
    return f"``{command}``, {document.get('date', 'undated')}: " + "; ".join(p for p in parts if p) + "."


def escape(text: str) -> str:
    """Plain text (a workload's name, a target, a warning) as reST that shows it as written."""
    for special in ("\\", "*", "`", "|", "_"):
        text = text.replace(special, "\\" + special)
    return text


def warning(document: dict[str, Any]) -> str:
    """The run's busy-machine warning as reST text (empty when every measurement was steady)."""
    return escape(" ".join(document.get("busy_warning") or []))


def _time_table(title: str, workloads: list[dict[str, Any]], ratios_key: str, gflops: bool) -> Table:
    labels = _variants(workloads)
    reference = labels[0]
    compared = [label for label in labels[1:] if any(label in w[ratios_key] for w in workloads)]
    header = (["workload", "kernels"] + [f"{label} µs" for label in labels] + (["GFLOP/s"] if gflops else [])
              + [f"vs {label}" for label in compared])
    rows = []
    for w in workloads:
        kernels = w["kernels"]
        count = ("/".join(str(kernels[k]) for k in ("fused", "unfused") if k in kernels)
                 if isinstance(kernels, dict) else str(kernels))
        cells = [escape(w["name"]), count] + [_time(w["variants"].get(label)) for label in labels]
        if gflops:
            value = (w["variants"].get(reference) or {}).get("gflops")
            cells.append("-" if value is None else f"{value:.1f}")
        rows.append(cells + [_ratio(w[ratios_key].get(label)) for label in compared])
    return Table(title, header, rows)


def tables(document: dict[str, Any]) -> list[Table]:
    """The tables of a suite document (``python -m tesched.bench``) or a graph suite document (``--graph``)."""
    workloads = document["workloads"]
    if "graph_speedup" in (workloads[0] if workloads else {}) or "call_overhead" in document:
        out = [_time_table("Graph executables against the hand kernels, NumPy and PyTorch (``vs X``: X's median "
                           "over the graph's)", workloads, "graph_speedup", gflops=False)]
        labels = _variants(workloads)
        cpu = [[escape(w["name"])] + [f"{w['variants'][label]['cpu_median_us']:.1f}" if label in w["variants"] else "-"
                              for label in labels] for w in workloads]
        out.append(Table("Processor time per call, µs (median, all threads: the work without the waits)",
                         ["workload"] + labels, cpu))
        targets = [[escape(w["name"]), escape(t["target"]), "met" if t["met"] else "not met",
                    "met" if t["met_by_processor_time"] else "not met"] for w in workloads for t in w["targets"]]
        if targets:
            out.append(Table("Targets", ["workload", "target", "by wall-clock medians", "by processor time"], targets))
        overheads = [[escape(o["name"]), f"{o['plain_us']:.2f}", f"{o['prepared_us']:.2f}", f"{o['allowed_us']:.1f}",
                      "met" if o["met"] else "not met"] for o in document.get("call_overhead", [])]
        if overheads:
            out.append(Table("Call overhead, µs (median)", ["call", "plain", "prepared", "allowed", "target"],
                             overheads))
        return out
    out = [_time_table("Fused and unfused tesched kernels against NumPy and PyTorch (``vs X``: X's median over "
                       "tesched fused's)", workloads, "fused_speedup", gflops=True)]
    if document.get("peak"):
        out.append(Table("Peak FP32 FMA throughput (``tesched/tools/bench/peak_flops.c``), GFLOP/s",
                         ["threads", "best", "median", "vector bytes"],
                         [[str(p["threads"]), f"{p['best_gflops']:.1f}", f"{p['median_gflops']:.1f}",
                           str(p["vector_bytes"])] for p in document["peak"]]))
    if document.get("build_times"):
        out.append(Table("Build time, ms (empty kernel cache)",
                         ["kernel", "cold", "cached, same process", "cached, new process"],
                         [[escape(b["kernel"]), f"{b['cold'] * 1e3:.1f}", f"{b['cached_same_process'] * 1e3:.1f}",
                           f"{b['cached_new_process'] * 1e3:.1f}"] for b in document["build_times"]]))
    return out
