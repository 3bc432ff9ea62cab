"""PyTorch models imported with ``tesched.frontend`` against PyTorch eager and ``torch.compile``.

Each model is imported (``frontend.from_torch``), built with ``tesched.graph.build`` and checked against
PyTorch eager (max error relative to the output's scale); then, at batch 1 and the same thread count for
every library, these variants are timed in one process, interleaved round-robin
(:func:`tesched.driver.timing.time_interleaved`):

- ``tesched``: ``exe(*arrays)``, the executable's ordinary call (NumPy in, fresh NumPy out);
- ``tesched.prepared``: ``exe.prepare(*arrays)()``, the same kernels without argument checks or output
  allocation;
- ``tesched.unfused`` (WeeNet only): ``build(fn, disabled_passes=["fuse_ops", "fold_constant"])``;
- ``torch.eager``: ``model(*inputs)`` under ``torch.inference_mode()``;
- ``torch.compile``: ``torch.compile(model)`` (inductor), called the same way;
- ``onnxruntime``: ``torch.onnx.export`` then an ONNX Runtime CPU session with ``--threads`` intra-op
  threads, which sleep when idle as the OpenMP threads do under ``OMP_WAIT_POLICY=passive`` (``--no-ort``
  leaves it out; skipped with a note when onnxruntime is not installed).

The three peers are made by :mod:`tesched.tools.bench.torch_peers`, as in ``tutorials/12_import_transformer.py``.

The present-day models of ``tesched.frontend.model_zoo_modern`` (``encoder_layer``, ``encoder_stack4``,
``gpt_block``, ``vit_tiny``, ``mlp_mixer``, ``unet``, ``gru2``, ``lstm2``, ``dense_block``,
``resnext_block``) run at their own sizes; one whose op tesched lacks prints ``does not import: <op>``.
Build times are printed per runtime, and the geometric mean of every ratio over the imported models.

Models (``--models``, default all): ``weenet`` (depthwise conv + batch norm + ReLU, 1x64x128x128),
``resnet18``, ``mobilenet_v2``, ``squeezenet1_1`` (torchvision's architectures from
``tesched.frontend.model_zoo``, random init, batch norm statistics randomised, 1x3x224x224), ``lstm``
(``nn.LSTM(128, 128)`` over 16 steps), ``lstm_cell`` (``nn.LSTMCell(128, 128)`` with its state as
inputs) and ``mlp_block`` (linear 256->1024 + GELU + linear + residual + layer norm over 1x64x256).

Prints per model the medians (ms), the spread (interquartile range over rounds, % of the median), the
processor time per call (all threads; on a loaded machine it shows the work done where the wall clock
also counts the waits), the ratios ``other / tesched`` (above 1: tesched is faster) by wall-clock medians
and by processor time, and the issue's speed targets, met or not, by both; writes
everything as JSON with ``--json``. ``--profile`` adds, per model, the kernels that take the most time
(each timed alone on random inputs) with the GFLOP/s of the convolutions and dense layers in them. The
machine is shared and noisy: compare ratios within one run.

``--dynamic`` times instead models built once for a dynamic dimension against the same models built per
size (``benchmarks/dynamic_shapes.py``, at ``--sizes``).

Run:  python benchmarks/torch_models.py [--models weenet,lstm_cell] [--rounds 15] [--threads 2]
                                        [--quick] [--no-compile] [--no-ort] [--profile] [--json results.json]
      python benchmarks/torch_models.py --dynamic [--sizes 1,37,256]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "passive")   # before any OpenMP runtime loads: no spinning workers
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
warnings.filterwarnings("ignore", message="The tensor attributes self._flat_weights", category=UserWarning)

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tesched import graph as G
from tesched.driver.timing import Timing, time_calls, time_interleaved
from tesched.frontend import from_torch
from tesched.frontend.errors import UnsupportedOpError
from tesched.graph.visit import post_order
from tesched.tools.bench.threads import set_all_threads
from tesched.tools.bench.torch_peers import Peer, eager_peer, onnxruntime_peer, torch_compile_peer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dynamic_shapes  # noqa: E402

TARGETS = {   # model: (variant compared, least ratio other/tesched)
    "weenet": [("torch.eager", 2.0), ("tesched.unfused", 1.3)],
    "resnet18": [("torch.eager", 1.3)],
    "mobilenet_v2": [("torch.eager", 2.0)],
    "lstm_cell": [("torch.eager", 1.5)],
}
"""The issue's targets; besides these, every model should be at least as fast as ``torch.compile``."""


def workloads(torch: Any, quick: bool) -> dict[str, Callable[[], tuple[Any, tuple]]]:
    """``name -> make()``, ``make()`` giving ``(model in eval mode, example inputs)``."""
    from tesched.frontend import model_zoo as zoo
    from tesched.frontend.model_zoo_modern import MODERN

    image = 64 if quick else 224
    weenet_size = 32 if quick else 128
    steps = 4 if quick else 16

    def vision(make: Callable[[], Any]) -> Callable[[], tuple[Any, tuple]]:
        return lambda: (zoo.randomize_batch_norm(make()), (torch.rand(1, 3, image, image),))

    return {
        "weenet": lambda: (zoo.randomize_batch_norm(zoo.WeeNet(64)), (torch.rand(1, 64, weenet_size, weenet_size),)),
        "resnet18": vision(zoo.resnet18),
        "mobilenet_v2": vision(zoo.mobilenet_v2),
        "squeezenet1_1": vision(zoo.squeezenet1_1),
        "lstm": lambda: (torch.nn.LSTM(128, 128).eval(), (torch.rand(steps, 1, 128),)),
        "lstm_cell": lambda: (zoo.LSTMCellStep(128, 128).eval(), tuple(torch.rand(1, 128) for _ in range(3))),
        "mlp_block": lambda: (zoo.MLPBlock(256, 1024).eval(), (torch.rand(1, 16 if quick else 64, 256),)),
        **{name: modern(make, inputs) for name, (make, inputs) in MODERN.items()},
    }


def modern(make: Callable[[], Any], inputs: Callable[[], tuple]) -> Callable[[], tuple[Any, tuple]]:
    """A ``tesched.frontend.model_zoo_modern`` entry as a workload (batch norm statistics randomised)."""
    from tesched.frontend import model_zoo as zoo
    return lambda: (zoo.randomize_batch_norm(make()).eval(), inputs())


def leaves(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def relative_error(got: Any, want: Any) -> float:
    """Largest error over the outputs, relative to each output's largest magnitude (at least 1)."""
    worst = 0.0
    for g, w in zip(leaves(got), leaves(want)):
        g = g.detach().numpy() if hasattr(g, "detach") else np.asarray(g)
        w = w.detach().numpy()
        worst = max(worst, float(np.abs(g.astype(np.float64) - w).max()) / max(float(np.abs(w).max()), 1.0))
    return worst


def measure(name: str, make: Callable[[], tuple[Any, tuple]], torch: Any, args: argparse.Namespace) -> dict:
    """Import, build, check and time one model; returns its JSON record."""
    torch.manual_seed(0)
    model, inputs = make()
    arrays = [t.numpy() for t in inputs]
    started = time.perf_counter()
    try:
        fn = from_torch(model, inputs)
    except UnsupportedOpError as error:
        return {"inputs": [list(t.shape) for t in inputs], "does_not_import": error.op}
    imported = time.perf_counter() - started
    exe = G.build(fn)
    built = time.perf_counter() - started - imported
    with torch.inference_mode():
        want = model(*inputs)
    record: dict[str, Any] = {
        "inputs": [list(t.shape) for t in inputs], "kernels": len(exe.kernels),
        "import_seconds": round(imported, 2), "build_seconds": round(built, 2),
        "errors": {"tesched": relative_error(exe(*arrays), want)},
    }
    prepared = exe.prepare(*arrays)
    variants: dict[str, Callable[[], object]] = {"tesched": lambda: exe(*arrays), "tesched.prepared": prepared}
    if name == "weenet":
        unfused = G.build(fn, disabled_passes=["fuse_ops", "fold_constant"])
        record["errors"]["tesched.unfused"] = relative_error(unfused(*arrays), want)
        record["unfused_kernels"] = len(unfused.kernels)
        variants["tesched.unfused"] = unfused.prepare(*arrays)

    variants["torch.eager"] = eager_peer(model, inputs).call
    if not args.no_compile:
        add_peer("torch.compile", torch_compile_peer(model, inputs), "compile", want, variants, record)
    if not args.no_ort:
        add_peer("onnxruntime", onnxruntime_peer(model, inputs, args.threads), "ort", want, variants, record)
    timings = time_interleaved(variants, rounds=args.rounds)
    record["timings"] = {label: {"median_ms": t.median * 1e3, "min_ms": t.min * 1e3, "cpu_ms": t.cpu_median * 1e3,
                                 "spread_percent": 100 * t.spread / t.median, "calls_per_block": t.calls}
                         for label, t in timings.items()}
    record["ratios"] = {label: t.median / timings["tesched"].median for label, t in timings.items()
                        if label != "tesched"}
    record["cpu_ratios"] = {label: t.cpu_median / timings["tesched"].cpu_median for label, t in timings.items()
                            if label != "tesched" and timings["tesched"].cpu_median > 0}
    if "tesched.unfused" in timings:
        record["ratios"]["tesched.unfused/prepared"] = (timings["tesched.unfused"].median
                                                        / timings["tesched.prepared"].median)
    record["targets"] = targets(name, timings)
    if args.profile:
        record["profile"] = profile(exe)
    return record


def add_peer(label: str, peer: Peer, key: str, want: Any, variants: dict[str, Callable[[], object]],
             record: dict) -> None:
    """Time ``peer`` as ``label`` and record its error and setup seconds (``<key>_seconds``), or record why
    it was skipped (``<key>_skipped``)."""
    if peer.call is None:
        record[f"{key}_skipped"] = peer.skipped
        return
    record["errors"][label] = relative_error(peer.output, want)
    record[f"{key}_seconds"] = round(peer.setup_seconds, 2)
    variants[label] = peer.call


def group_flops(fn: G.Function) -> int:
    """Multiply-adds times two of the convolutions and dense layers in a fused group (those of direct
    convolution for a Winograd one)."""
    flops = 0
    for node in post_order(fn.body):
        if isinstance(node, G.Call) and not isinstance(node.op, G.Function):
            out = node.tensor_type.shape
            if node.op_name == "nn.conv2d":
                _, per_group, kh, kw = node.args[1].tensor_type.shape
                flops += 2 * int(np.prod(out)) * per_group * kh * kw
            elif node.op_name == "nn.conv2d_weight_last":
                _, channels, kh, kw, _ = node.args[1].tensor_type.shape
                flops += 2 * int(np.prod(out)) * channels * kh * kw
            elif node.op_name == "nn.winograd_conv2d":
                flops += 2 * int(np.prod(out)) * node.args[1].tensor_type.shape[2] * 9
            elif node.op_name in ("nn.dense", "nn.dense_panels"):     # weight (N, K) or panels (N / w, K, w)
                flops += 2 * int(np.prod(out)) * node.args[1].tensor_type.shape[1]
    return flops


def profile(exe: Any, top: int = 8) -> list[dict]:
    """The ``top`` kernels by time (external calls, such as the attention kernel, included), each timed alone
    on random inputs of its parameters' types."""
    rng = np.random.default_rng(0)
    rows = []
    for external, group in [(False, g) for g in exe.kernels] + [(True, c) for c in exe.external_calls]:
        ins = [rng.random(p.tensor_type.shape).astype(p.tensor_type.dtype) for p in group.function.params]
        out = group.function.body.checked_type
        if not isinstance(out, G.TensorType):
            continue
        outs = np.empty(out.shape, out.dtype)
        if external:
            ins = [ins[k] for k in group.arg_positions]
            seconds = time_calls(group.kernel.prepare(*ins, outs), repeat=10).median
        else:
            seconds = group.kernel.benchmark(*ins, outs, repeat=10).median
        flops = group_flops(group.function)
        rows.append({"kernel": group.function.name, "ms": seconds * 1e3,
                     "gflops": flops / seconds / 1e9 if flops else None})
    total = sum(r["ms"] for r in rows)
    for r in rows:
        r["share_percent"] = 100 * r["ms"] / total
    return sorted(rows, key=lambda r: -r["ms"])[:top]


def targets(name: str, timings: dict[str, Timing]) -> list[dict]:
    """The issue's targets for ``name``: each a ratio ``other / tesched`` and the least it should be. WeeNet's
    fused-over-unfused target compares the prepared calls of both (the same calling path)."""
    checks = list(TARGETS.get(name, [])) + [("torch.compile", 1.0)]
    found = []
    for other, least in checks:
        if other not in timings:
            continue
        ours = timings["tesched.prepared" if other == "tesched.unfused" else "tesched"]
        ratio = timings[other].median / ours.median
        cpu_ratio = timings[other].cpu_median / ours.cpu_median if ours.cpu_median > 0 else float("nan")
        found.append({"versus": other, "ratio": ratio, "target": least, "met": ratio >= least,
                      "cpu_ratio": cpu_ratio, "met_by_processor_time": cpu_ratio >= least})
    return found


def print_record(name: str, record: dict) -> None:
    if "does_not_import" in record:
        print(f"\n{name}: inputs {record['inputs']}: does not import: {record['does_not_import']}")
        return
    errors = ", ".join(f"{k} {v:.1e}" for k, v in record["errors"].items())
    def setup(key: str) -> str:
        return f"{record[key + '_seconds']} s" if key + "_seconds" in record else record.get(key + "_skipped", "-")

    print(f"\n{name}: inputs {record['inputs']}, {record['kernels']} kernels, import {record['import_seconds']} s, "
          f"build {record['build_seconds']} s, torch.compile first call {setup('compile')}, "
          f"ORT export + session {setup('ort')}; "
          f"max error / output scale: {errors}")
    for label, t in record["timings"].items():
        ratio, cpu_ratio = record["ratios"].get(label), record["cpu_ratios"].get(label)
        versus = f"   {ratio:6.2f}x tesched's time" if ratio is not None else ""
        if cpu_ratio is not None:
            versus += f", {cpu_ratio:5.2f}x by processor time"
        print(f"  {label:18s} {t['median_ms']:10.3f} ms  (min {t['min_ms']:.3f}, spread {t['spread_percent']:4.1f}%, "
              f"cpu {t['cpu_ms']:.3f} ms){versus}")
    for check in record["targets"]:
        state = "met" if check["met"] else "NOT met"
        by_cpu = "met" if check["met_by_processor_time"] else "NOT met"
        print(f"  target: tesched >= {check['target']}x {check['versus']}: {check['ratio']:.2f}x, {state} "
              f"(by processor time {check['cpu_ratio']:.2f}x, {by_cpu})")
    for row in record.get("profile", []):
        rate = f", {row['gflops']:6.1f} GFLOP/s" if row["gflops"] else ""
        print(f"    kernel {row['kernel'][:60]:60s} {row['ms']:8.3f} ms ({row['share_percent']:4.1f}%){rate}")


def print_geomeans(records: dict[str, dict]) -> None:
    """Geometric mean of ``other / tesched`` per variant over the models that imported (and had it)."""
    ratios: dict[str, list[float]] = {}
    for record in records.values():
        for label, ratio in record.get("ratios", {}).items():
            ratios.setdefault(label, []).append(ratio)
    missing = [name for name, record in records.items() if "does_not_import" in record]
    print(f"\ngeometric mean, other / tesched (above 1: tesched faster){'; not imported: ' + ', '.join(missing) if missing else ''}")
    for label, values in ratios.items():
        print(f"  {label:24s} {float(np.exp(np.mean(np.log(values)))):6.2f}x over {len(values)} models")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="all", help="comma-separated names (default: all)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per model (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tesched and PyTorch (default 2)")
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke test, not a measurement")
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile (slow to compile)")
    parser.add_argument("--no-ort", action="store_true", help="leave out ONNX Runtime")
    parser.add_argument("--profile", action="store_true", help="time each kernel alone; list the costliest")
    parser.add_argument("--json", type=Path, help="write the results to this file")
    parser.add_argument("--dynamic", action="store_true",
                        help="instead: dynamic against static kernels (benchmarks/dynamic_shapes.py) at --sizes")
    dynamic_shapes.add_arguments(parser)
    args = parser.parse_args()

    import torch
    threads = set_all_threads(args.threads, torch)
    if args.dynamic:
        print(f"threads: {threads}; torch {torch.__version__}; {args.rounds} rounds; dynamic against static")
        dynamic_shapes.run(["mlp", "encoder"], [int(s) for s in args.sizes.split(",")], args.rounds, torch)
        return
    available = workloads(torch, args.quick)
    names = list(available) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in available]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(available)}")
    print(f"threads: {threads}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; torch {torch.__version__}; "
          f"{args.rounds} rounds{' (quick sizes)' if args.quick else ''}; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    results = {"command": " ".join(sys.argv), "threads": args.threads, "torch": torch.__version__,
               "machine": platform.processor() or platform.machine(), "models": {}}
    for name in names:
        results["models"][name] = measure(name, available[name], torch, args)
        print_record(name, results["models"][name])
    print_geomeans(results["models"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
