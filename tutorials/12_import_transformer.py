"""Tutorial 12: a transformer encoder layer imported, what fused, and four runtimes timed.
=======================================================================================

Run it:  python tutorials/12_import_transformer.py          (the zoo's encoder layer, seq 128, d 256, 4 heads)
         python tutorials/12_import_transformer.py --quick  (seq 16, d 64, a smoke test; or TESCHED_QUICK=1)

Needs PyTorch:  pip install tesched[torch]; ONNX Runtime and its exporter for the fourth runtime:
pip install tesched[bench] (each runtime that is missing is skipped with the reason).

The question this tutorial answers: take a post-norm transformer encoder layer (self-attention through
``scaled_dot_product_attention``, two layer norms, a GELU MLP; ``EncoderLayer`` of
``tesched.frontend.model_zoo_modern``); what does tesched make of it, which parts become one kernel and
which do not, and how fast is the result next to PyTorch eager, ``torch.compile`` and ONNX Runtime?

1. the layer is traced by ``torch.export``, decomposed to core ATen and imported (``frontend.from_torch``);
   the graph is checked against PyTorch with the NumPy interpreter;
2. the graph after each pass of ``tesched.graph.build``: what each pass changed (ops added and removed),
   then the graph that ``fuse_ops`` receives;
3. the fusion report: which ops share a kernel, every edge left between kernels with the rule that kept it,
   and in particular what became of attention, the layer norms and the GELU;
4. the loop IR of the most interesting kernel tesched generated (the matrix product with the most ops
   fused into it), run alone and checked against the NumPy interpreter of its group;
5. time per call of tesched, PyTorch eager, ``torch.compile`` (inductor) and ONNX Runtime, interleaved
   round-robin in this process, each checked against eager before it is timed;
6. the answer, from the numbers step 5 measured.

The answer, in short (step 6 prints what the machine that runs it measured). Attention becomes one kernel
(``fuse_attention``: the two batched products and the softmax are one online-softmax kernel, and the seq x
seq scores are never stored); the scale stays outside it, in the two small kernels that multiply q and k by
the square root of 1/sqrt(d) (as PyTorch's decomposition of SDPA writes it), beside the transposes that lay
out the heads. Each linear layer is one kernel with its bias; the first MLP product carries the GELU's
five elementwise ops, and the output projection and the second MLP product carry the residual add: the
``sink_reshapes`` pass moves them before the reshape that ends each product (a view, which would otherwise
keep them apart). Each layer norm is a kernel of its own: the fusion rules do not let an opaque op follow
anything or be followed by anything. The layer runs as 9 tesched kernels and the attention kernel.

On an Intel Xeon with AVX-512 (2 vCPUs shared with other jobs, load average 10 to 14), ``python
tutorials/12_import_transformer.py --rounds 30`` could not compare the wall-clock medians: they varied by 24%
to 82% between rounds. What it could measure: the processor time per call (the work done, all threads) was
tesched 3.6 ms, ONNX Runtime 3.8 ms (1.04x tesched's), ``torch.compile`` 5.3 ms (1.47x) and PyTorch eager
5.4 ms (1.50x); the fastest blocks of calls took tesched 3.47 ms, ONNX Runtime 2.65 ms, eager 4.78 ms and
``torch.compile`` 5.03 ms. So on this layer tesched does less work than eager and ``torch.compile`` and about
as much as ONNX Runtime, whose fastest runs were faster than tesched's: tesched does not beat ONNX Runtime
here. Those figures predate ``sink_reshapes``, the vectorized exponential of the attention kernel and the
vectorized layer norm; re-run it on a quiet machine before quoting any ratio.
"""
import inspect
import os
import sys
import warnings
from collections import Counter

os.environ.setdefault("OMP_WAIT_POLICY", "passive")   # idle OpenMP workers sleep: the runtimes share the cores
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)

import numpy as np

from tesched import frontend
from tesched import graph as G
from tesched.graph.visit import post_order
from tesched.target import Target
from tesched.tools.bench.suite import cpu_model
from tesched.tools.bench.threads import set_all_threads
from tesched.driver.timing import time_interleaved
from tesched.tools.tutorial import is_noisy, parse_tutorial_args, ratio_text, tutorial_parser

PARSER = tutorial_parser(__doc__, "seq 16, d 64, a smoke test; torch.compile is skipped")
PARSER.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 15, quick 3)")
PARSER.add_argument("--threads", type=int, default=2, help="threads for every runtime (default 2)")
PARSER.add_argument("--compile", action="store_true", help="time torch.compile in quick mode too (slow to compile)")
ARGS = parse_tutorial_args(PARSER)
QUICK = ARGS.quick
ROUNDS = ARGS.rounds or (3 if QUICK else 15)

try:
    import torch
except ImportError:
    sys.exit("this tutorial needs PyTorch: pip install tesched[torch]")
from tesched.frontend.model_zoo_modern import MODERN, EncoderLayer
from tesched.tools.bench.torch_peers import eager_peer, onnxruntime_peer, torch_compile_peer

set_all_threads(ARGS.threads, torch)
torch.manual_seed(0)
if QUICK:
    model, x = EncoderLayer(dim=64, heads=4, hidden=256).eval(), torch.rand(1, 16, 64)
else:
    make_model, make_inputs = MODERN["encoder_layer"]       # seq 128, d 256, 4 heads, MLP 1024
    model, (x,) = make_model().eval(), make_inputs()
x_np = x.numpy()
with torch.inference_mode():
    expected = model(x).numpy()


def output_of(result: object) -> np.ndarray:
    """The one output of a runtime's call as a NumPy array (ONNX Runtime returns a list, PyTorch a tensor)."""
    if isinstance(result, (list, tuple)):
        result = result[0]
    return result.detach().numpy() if hasattr(result, "detach") else np.asarray(result)


def check(what: str, got: object) -> None:
    """Compare with PyTorch's output, within 1e-4 of its scale."""
    error = float(np.abs(output_of(got) - expected).max()) / max(float(np.abs(expected).max()), 1.0)
    assert error <= 1e-4, f"{what}: error {error:.2e}"
    print(f"-> matches PyTorch ({what}; max error {error:.1e} of the output scale)")


def op_counts(graph: G.Function) -> Counter:
    """How many calls of each op ``graph`` makes (inside its fused primitive functions too)."""
    counts: Counter = Counter()
    for node in post_order(graph.body):
        if isinstance(node, G.Call) and isinstance(node.op, G.Function):
            counts += op_counts(node.op)
        elif isinstance(node, G.Call):
            counts[node.op_name] += 1
    return counts


print(f"\n=== 1. The encoder layer in PyTorch, imported (input {tuple(x.shape)}) ===")
print(inspect.getsource(EncoderLayer))
fn = frontend.from_torch(model, (x,))     # torch.export -> core ATen -> tesched.graph.Function
imported = op_counts(fn)
print(f"imported: {sum(imported.values())} op calls: " + ", ".join(f"{op} x{n}" for op, n in imported.most_common()))
check("the NumPy interpreter on the imported graph", G.interpret(fn, x_np))


print("\n=== 2. The graph after each pass ===")
before_fusion: list[G.Function] = []
previous = [imported]


def show(name: str, graph: G.Function) -> None:
    """One line per pass: the ops it removed (-) and added (+)."""
    counts = op_counts(graph)
    removed, added = previous[0] - counts, counts - previous[0]
    change = ", ".join([f"-{op} x{n}" for op, n in removed.items()] + [f"+{op} x{n}" for op, n in added.items()])
    print(f"after {name:22s} {change or 'no change in the ops'}")
    previous[0] = counts
    if name != "fuse_ops":
        before_fusion[:] = [graph]


exe = G.build(fn, trace=show)
print("\nThe graph fuse_ops receives (weights are meta[Constant]s):\n")
print(before_fusion[0])
check("the built executable", exe(x_np))


print("\n=== 3. What fused into which kernel, and why the rest did not ===")
report = exe.fusion_report
views = [edge for edge in report.unfused if "is a view of its input's memory" in edge.reason]
print(f"{len(report.groups)} groups, run as {len(exe.kernels)} tesched kernels and {len(exe.external_calls)} "
      f"external call(s); the other {len(report.groups) - len(exe.kernels) - len(exe.external_calls)} are "
      "reshapes, views that need no kernel.")
for name, ops in report.groups:
    if ops != ["reshape"]:
        print(f"  {name}: {', '.join(ops)}")
print(f"\nedges left between groups ({len(views)} more end at a reshape, which is a view, not a kernel):")
for edge in report.unfused:
    if edge not in views:
        print(f"  {edge}")


def fate(label: str, op: str) -> tuple[str, list[str]]:
    """What became of ``op``: the kernel it is in (with what else), and the edges that kernel kept to
    other groups, each with the rule that kept it (see step 3's list)."""
    homes = [k for k, (_, ops) in enumerate(report.groups) if op in ops]
    if not homes:
        return f"{label}: there is no {op} in the built graph", []
    ops = report.groups[homes[0]][1]
    where = "a kernel of its own" if ops == [op] else f"one kernel with {', '.join(o for o in ops if o != op)}"
    members = {m for k in homes for m in report.members[k]}
    near = [edge for edge in report.unfused if {edge.producer, edge.consumer} & members]
    edges = [f"kept apart: {edge}" for edge in near if edge not in views]
    through = [f"{edge.producer.split()[0]} -> {edge.consumer.split()[0]}" for edge in near if edge in views]
    if through:
        edges.append(f"kept apart by a reshape (a view: no kernel, so nothing fuses across it): {', '.join(through)}")
    return f"{label} ({op}, {len(homes)} in the graph): {where}", edges


gelu_op = "erf" if any("erf" in ops for _, ops in report.groups) else "tanh"
fates = [fate(label, op) for label, op in [("attention", "nn.attention"), ("layer norm", "nn.layer_norm"),
                                           ("GELU", gelu_op)]]
print()
for summary, edges in fates:
    print("\n    ".join([summary] + edges))
if any(call.name == "nn.attention" for call in exe.external_calls):
    print("The attention kernel is the graph's online-softmax C kernel (tesched.graph.attention_source): per\n"
          "block of query rows it keeps a running maximum and sum, so the seq x seq scores are never stored.")
check("the built executable, after the report", exe(x_np))


print("\n=== 4. The loop IR of the most interesting kernel ===")


def interest(group: object) -> tuple[int, int]:
    """A matrix product with the most ops fused into it first, then any kernel with the most ops."""
    ops = op_counts(group.function)
    return (any(op.startswith(("nn.dense", "nn.matmul", "nn.batch_matmul")) for op in ops), sum(ops.values()))


kernel = max(exe.kernels, key=interest)
print(f"{kernel.name} ({', '.join(op_counts(kernel.function))})" + (
    ": the product is accumulated in a tile of\nregisters (the 'promoted to registers' note), and the ops fused "
    "after it read the tile there before\nanything is stored" if "promoted to registers" in str(kernel.lowered)
    else "") + ":\n")
print(kernel.lowered)
rng = np.random.default_rng(0)
inputs = [rng.standard_normal(p.tensor_type.shape).astype(p.tensor_type.dtype) for p in kernel.function.params]
result = np.empty(kernel.function.body.checked_type.shape, kernel.function.body.checked_type.dtype)
kernel.kernel(*inputs, result)
want = G.interpret(kernel.function, *inputs)
error = float(np.abs(result - want).max()) / max(float(np.abs(want).max()), 1.0)
assert error <= 1e-4, f"{kernel.name}: error {error:.2e}"
print(f"-> matches NumPy ({kernel.name} alone on random inputs, against the interpreter; max error {error:.1e})")
check("the built executable, after the kernel ran alone", exe(x_np))


print("\n=== 5. Time per call: tesched, PyTorch eager, torch.compile, ONNX Runtime ===")
peers = {"PyTorch eager": eager_peer(model, (x,))}
if QUICK and not ARGS.compile:
    print("torch.compile: skipped in quick mode (compiling takes about half a minute; --compile times it)")
else:
    peers["torch.compile"] = torch_compile_peer(model, (x,))
peers["ONNX Runtime"] = onnxruntime_peer(model, (x,), ARGS.threads)
variants = {"tesched": lambda: exe(x_np)}
for label, peer in peers.items():
    if peer.call is None:
        print(f"{label}: skipped ({peer.skipped})")
        continue
    check(f"{label}, ready in {peer.setup_seconds:.1f} s", peer.output)
    variants[label] = peer.call
times = time_interleaved(variants, rounds=ROUNDS)
ours = times["tesched"]
print("median and fastest wall-clock ms per call, their spread (interquartile range), and the processor time\n"
      "per call (every thread of the process: the work done, which other jobs on the machine disturb less)")
for label, timing in times.items():
    versus = "" if label == "tesched" else \
        f"; {label} / tesched: {ratio_text(timing.median, ours.median, timing.spread, ours.spread)}"
    print(f"{label:14s} {timing.median * 1e3:9.3f} ms  (min {timing.min * 1e3:.3f} ms, spread "
          f"{100 * timing.spread / timing.median:.0f}%, processor {timing.cpu_median * 1e3:.3f} ms{versus})")
check("tesched after timing", exe(x_np))


print("\n=== 6. What fused, and how tesched compares ===")
isa = next((f for f in ("avx512f", "avx2", "sse4_2") if Target("host").has(f)), "no x86 SIMD")
load = " ".join(f"{v:.1f}" for v in os.getloadavg())
print(f"Measured on {cpu_model()} ({isa}), {ARGS.threads} threads, load average {load}, input {tuple(x.shape)}"
      f"{'; quick sizes: the timings are not meaningful' if QUICK else ''}.")
peers_timed = [label for label in times if label != "tesched"]
noisy = [label for label in peers_timed if is_noisy(times[label].median, times[label].spread)
         or is_noisy(ours.median, ours.spread)]
faster = [label for label in peers_timed if label not in noisy and times[label].median > ours.median]
slower = [label for label in peers_timed if label not in noisy and times[label].median <= ours.median]
print(f"By the wall-clock medians, tesched was faster than: {', '.join(faster) or 'none of them'}; slower than: "
      f"{', '.join(slower) or 'none'}" + (f"; not measurable (the machine was too busy): {', '.join(noisy)}"
                                          if noisy else "") + ".")
if ours.cpu_median > 0:
    print("By processor time per call, other / tesched: " + ", ".join(
        f"{label} {times[label].cpu_median / ours.cpu_median:.2f}x" for label in peers_timed)
          + " (above 1: tesched did less work; it says nothing of how well each uses the threads).")
print("By the fastest block of calls, other / tesched: " + ", ".join(
    f"{label} {times[label].min / ours.min:.2f}x" for label in peers_timed) + " (the least disturbed runs).")
for summary, _ in fates:
    print(summary)
print("Every kernel boundary sends the layer's activations to memory and back; step 3 names the rule behind\n"
      "each one, and a runtime that fuses across more of them (the residual add into the layer norm, the GELU\n"
      "into the product before it) saves those passes.")
