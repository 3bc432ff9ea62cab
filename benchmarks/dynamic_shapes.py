"""Dynamic against static kernels: a model exported with a ``torch.export.Dim`` is built once for its range,
and, at a few sizes, timed against the same model exported and built at that one size.

Workloads: ``mlp`` (linear 256->1024, ReLU, linear 1024->256, softmax; dynamic batch in [1, 256]) and
``encoder`` (``model_zoo_modern.EncoderLayer`` with d 256, 4 heads; dynamic sequence in [1, 256], batch 1).
Per size it prints the medians (ms) of both executables' ordinary calls, timed interleaved in one process
(:func:`tesched.driver.timing.time_interleaved`), their spread (interquartile range, % of the
median), and the ratio ``dynamic / static`` (above 1: the dynamic kernels are slower); then each build's
seconds (the dynamic build once, the static ones per size) and the load average. The machine is shared
and noisy: compare ratios within one run.

Run:  python benchmarks/dynamic_shapes.py [--models mlp,encoder] [--sizes 1,37,256] [--rounds 15] [--threads 2]
(also ``python benchmarks/torch_models.py --dynamic``, with the same defaults).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np

from tesched import graph as G
from tesched.frontend import from_exported_program
from tesched.tools.bench.threads import set_all_threads
from tesched.driver.timing import time_interleaved

RANGE = 256
"""The largest size of each workload's dynamic dimension."""


def workloads(torch: Any) -> dict[str, tuple[Callable[[], Any], Callable[[int], Any], int]]:
    """Name -> (make the model, make an input at size ``n``, the input's dynamic axis)."""
    from tesched.frontend.model_zoo_modern import EncoderLayer
    nn = torch.nn

    def mlp() -> Any:
        return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.Softmax(-1))
    return {"mlp": (mlp, lambda n: torch.rand(n, 256), 0),
            "encoder": (lambda: EncoderLayer(dim=256, heads=4, hidden=1024), lambda n: torch.rand(1, n, 256), 1)}


def _build(torch: Any, model: Any, example: Any, axis: int | None) -> tuple[Any, float]:
    """The executable of ``model`` exported on ``example`` (dynamic along ``axis`` unless ``None``) and
    the seconds that import and build took."""
    started = time.perf_counter()
    shapes = None if axis is None else ({axis: torch.export.Dim("size", min=1, max=RANGE)},)
    exe = G.build(from_exported_program(torch.export.export(model, (example,), dynamic_shapes=shapes)))
    return exe, time.perf_counter() - started


def run(names: list[str], sizes: list[int], rounds: int, torch: Any) -> None:
    """Print the comparison of the module doc for the workloads ``names`` at ``sizes``."""
    available = workloads(torch)
    for name in names:
        make, example, axis = available[name]
        torch.manual_seed(0)
        model = make().eval()
        dynamic, dynamic_build = _build(torch, model, example(min(sizes[0] + 1, RANGE)), axis)
        print(f"\n{name}: dynamic build {dynamic_build:.1f} s ({len(dynamic.kernels)} kernels)")
        print(f"  {'size':>6} {'static ms':>10} {'spread':>7} {'dynamic ms':>11} {'spread':>7} {'dyn/static':>10} "
              f"{'static build s':>15}")
        for n in sizes:
            x = example(n)
            static, static_build = _build(torch, model, x, None)
            array = x.numpy()
            with torch.inference_mode():
                want = model(x).numpy()
            error = float(np.max(np.abs(dynamic(array) - want)))
            if error > 1e-3 * max(1.0, float(np.max(np.abs(want)))):
                raise SystemExit(f"{name} at size {n}: the dynamic executable is off by {error:g}")
            times = time_interleaved({"static": lambda: static(array), "dynamic": lambda: dynamic(array)}, rounds)
            s, d = times["static"], times["dynamic"]
            print(f"  {n:>6} {s.median * 1e3:>10.3f} {100 * s.spread / s.median:>6.0f}% {d.median * 1e3:>11.3f} "
                  f"{100 * d.spread / d.median:>6.0f}% {d.median / s.median:>10.2f} {static_build:>15.1f}")
    print(f"\nload average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of this benchmark (shared with ``torch_models.py --dynamic``)."""
    parser.add_argument("--sizes", default="1,37,256", help="sizes of the dynamic dimension (default 1,37,256)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,encoder", help="comma-separated: mlp, encoder")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per size (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="threads (default 2)")
    add_arguments(parser)
    args = parser.parse_args()
    import torch
    threads = set_all_threads(args.threads, torch)
    print(f"threads: {threads}; torch {torch.__version__}; {args.rounds} rounds")
    run(args.models.split(","), [int(s) for s in args.sizes.split(",")], args.rounds, torch)


if __name__ == "__main__":
    main()
