"""Command line of the suite: ``python -m tesched.bench [--graph] [--target NAME] [--threads N] [--repeat R]
[--quick] [--only KEY ...] [--json PATH] [--plot PATH] [--no-peak] [--no-build] [--no-torch]``.

With ``--target``, every tesched kernel is built for that target; when this CPU has a wider instruction
set, the command re-runs itself in a child process whose NumPy and PyTorch are held to the target's
(:mod:`.peers`), and the table says which."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from tesched.config import prefer_passive_openmp
from tesched.errors import ConfigError
from tesched.target import Target
from tesched.tools.bench.catalog import workloads
from tesched.tools.bench.graph_cases import GRAPH_CASES
from tesched.tools.bench.graph_suite import format_graph_table, graph_json, run_graph_suite
from tesched.tools.bench.peers import child_environment
from tesched.tools.bench.report import format_table, plot, write_json
from tesched.tools.bench.suite import run_suite
from tesched.tools.bench.threads import BENCH_EXTRA, optional_module


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tesched.bench",
                                     description="tesched fused and unfused against NumPy and PyTorch eager, in "
                                                 "one process, every result checked against NumPy before timing")
    parser.add_argument("--graph", action="store_true",
                        help="the model path: each workload built through tesched.graph and called plainly, against "
                             "the suite's hand kernels, NumPy and PyTorch, with the issue's targets")
    parser.add_argument("--target", default=None,
                        help="build every tesched kernel for this target (x86-64-avx2, x86-64-avx512, x86-64, c; "
                             "default: the host); on a CPU with a wider instruction set, NumPy and PyTorch are held "
                             "to the target's (the suite re-runs itself with their variables set)")
    parser.add_argument("--threads", type=int, default=None, help="threads for every library (default: all cores)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved timing rounds (default 50, quick 3)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few rounds (a smoke test)")
    keys = sorted({w.key for w in workloads()} | {key for key, _ in GRAPH_CASES} | {"overhead"})
    parser.add_argument("--only", nargs="+", choices=keys, help="run these workloads only")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", metavar="PATH", help="also draw a bar chart PNG (needs matplotlib)")
    parser.add_argument("--no-peak", action="store_true", help="skip the peak FMA measurement")
    parser.add_argument("--no-build", action="store_true", help="skip the build-time measurement")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when installed")
    args = parser.parse_args(argv)
    if args.plot and optional_module("matplotlib") is None:
        parser.error(f"--plot needs matplotlib, which is not installed ({BENCH_EXTRA}); nothing was run")
    if args.plot and args.graph:
        parser.error("--plot draws the suite's chart; the --graph suite has none")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.target is not None:
        try:
            Target(args.target)
        except ConfigError as err:
            parser.error(f"--target: {err}")
    return args


def missing_dependencies(args: argparse.Namespace) -> list[str]:
    """What the run will leave out for want of an optional package, said before it starts (not after)."""
    notes = []
    if not args.no_torch and optional_module("torch") is None:
        notes.append(f"PyTorch is not installed: its columns are left out ({BENCH_EXTRA}, or --no-torch)")
    if optional_module("threadpoolctl") is None:
        notes.append(f"threadpoolctl is not installed: NumPy's BLAS keeps its own thread count, so NumPy may use "
                     f"more threads than the others ({BENCH_EXTRA})")
    return notes


def main(argv: Sequence[str] | None = None) -> None:
    """Run the suite the command line ``argv`` asks for and print its table."""
    args = parse_args(argv)
    target = Target(args.target) if args.target else None
    child_env = child_environment(target) if target is not None else None
    if target is not None and child_env is not None:
        extra = sorted(set(child_env.items()) - set(os.environ.items()))
        print(f"note: re-running for {target.name} with NumPy and PyTorch held to its instruction set: "
              + ", ".join(f"{k}={v}" for k, v in extra), file=sys.stderr, flush=True)
        arguments = list(sys.argv[1:] if argv is None else argv)
        raise SystemExit(subprocess.call([sys.executable, "-m", "tesched.bench", *arguments], env=child_env))
    record = {"command": shlex.join(["python", "-m", "tesched.bench", *(sys.argv[1:] if argv is None else argv)]),
              "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    with target if target is not None else contextlib.nullcontext():
        _run(args, record)


def _run(args: argparse.Namespace, record: dict[str, str]) -> None:
    """Run the suite and print it; with ``--json``, write it with ``record`` (the command line and the date)."""
    wait_policy = prefer_passive_openmp()    # before torch or a kernel loads an OpenMP runtime
    print(f"note: OMP_WAIT_POLICY={wait_policy}", file=sys.stderr, flush=True)
    progress = lambda message: print(f"... {message}", file=sys.stderr, flush=True)  # noqa: E731
    for note in missing_dependencies(args):
        print(f"note: {note}", file=sys.stderr, flush=True)
    if args.graph:
        graph_result = run_graph_suite(threads=args.threads, repeat=args.repeat or (3 if args.quick else 30),
                                       quick=args.quick, only=args.only, use_torch=not args.no_torch, progress=progress)
        print(format_graph_table(graph_result))
        if args.json:
            Path(args.json).write_text(json.dumps(dict(graph_json(graph_result), **record), indent=2) + "\n")
            print(f"\nJSON written to {args.json}")
        return
    repeat = args.repeat or (3 if args.quick else 50)
    result = run_suite(threads=args.threads, repeat=repeat, quick=args.quick, only=args.only, peak=not args.no_peak,
                       build=not args.no_build, use_torch=not args.no_torch, progress=progress)
    print(format_table(result))
    if args.json:
        write_json(result, args.json, record)
        print(f"\nJSON written to {args.json}")
    if args.plot and plot(result, args.plot):
        print(f"\nbar chart written to {args.plot}")
