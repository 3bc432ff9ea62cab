"""Tutorial 8: a PyTorch model imported, optimised, fused and timed against PyTorch.
=================================================================================

Run it:  python tutorials/08_import_pytorch.py          (WeeNet on 1 x 64 x 128 x 128; about a minute)
         python tutorials/08_import_pytorch.py --quick  (1 x 64 x 16 x 16, a smoke test; or TESCHED_QUICK=1)

Needs PyTorch:  pip install tesched[torch]

The question this tutorial answers: take a small PyTorch network, WeeNet (a depthwise 3x3 convolution,
batch norm and ReLU over 64 planes), compile it with fusion on and with fusion off; does fusion help on
this net, and why?

1. the model is traced by ``torch.export``, decomposed to core ATen and imported as a tesched graph
   (``frontend.from_torch``); the graph is checked against PyTorch with the NumPy interpreter;
2. the graph after each pass of ``tesched.graph.build``: the batch norm becomes a multiply and an add
   (``simplify_inference``), the multiply folds into the conv weights and bias (``fold_scale_axis``: the
   batch norm is gone), the conv's bias and the batch norm's shift merge into one add
   (``combine_constant_adds``), and ``fuse_ops`` puts conv + add + relu in one primitive function;
3. the fused executable: one kernel, whose loop nest computes each row of the conv and applies the add
   and the relu to it while it is in registers;
4. the unfused executable (``disabled_passes=["fuse_ops", "fold_constant"]``, the seed's comparison):
   the same folded graph, one kernel per op;
5. time per call: fused, unfused and PyTorch (eager), interleaved round-robin in this process;
6. the answer.

The answer, in short (step 6 prints the ratios measured on the machine that runs it). Yes, fusion helps
here, by about 2x, and for a reason that holds on any machine: a depthwise 3x3 convolution does 9
multiply-adds per output element, so its time is the time to move data, not to compute. Unfused, the
conv writes its 4 MiB output (64 x 128 x 128 float32), the add reads it and writes 4 MiB, the relu reads
those and writes 4 MiB again: five passes over memory for the two of the fused kernel (read the input,
write the result). The fused kernel does the same arithmetic with less than half the memory traffic,
so it runs in about half the time. Folding the batch norm into the weights is what makes fusing the
whole block possible, and it would pay even unfused (one op fewer). PyTorch eager runs the conv, the
batch norm and the ReLU as three passes too, so the fused kernel beats it for the same reason (and by
more where PyTorch's batch-1 depthwise convolution is slow). On a shared 2-core AMD EPYC, `python
tutorials/08_import_pytorch.py` printed: fused 3.7 ms, unfused 8.7 ms (2.3x), PyTorch eager 10.2 ms
(2.7x), with other jobs running; ``benchmarks/torch_models.py`` measures the same with more rounds.

On a dense convolution (ResNet's 3x3 convs) fusion matters less: the conv does 9 x 64 multiply-adds per
output element or more, its time is compute, and the saved passes are a small part of the total.
"""
import inspect
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "passive")   # idle OpenMP workers sleep: tesched's and PyTorch's share cores

import numpy as np

from tesched import frontend
from tesched import graph as G
from tesched.tools.bench.threads import set_all_threads
from tesched.driver.timing import time_interleaved
from tesched.tools.tutorial import parse_tutorial_args, ratio_text, tutorial_parser


PARSER = tutorial_parser(__doc__, "1 x 64 x 16 x 16, a smoke test")
PARSER.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 15, quick 3)")
PARSER.add_argument("--threads", type=int, default=2, help="threads for tesched and PyTorch (default 2)")
ARGS = parse_tutorial_args(PARSER)
QUICK = ARGS.quick
SIZE = 16 if QUICK else 128
ROUNDS = ARGS.rounds or (3 if QUICK else 15)

try:
    import torch
except ImportError:
    sys.exit("this tutorial needs PyTorch: pip install tesched[torch]")
from tesched.frontend.model_zoo import WeeNet, randomize_batch_norm

set_all_threads(ARGS.threads, torch)
torch.manual_seed(0)
model = randomize_batch_norm(WeeNet(planes=64))   # eval mode, batch norm with non-trivial statistics
x = torch.rand(1, 64, SIZE, SIZE)
x_np = x.numpy()
with torch.inference_mode():
    expected = model(x).numpy()


def check(what: str, got: np.ndarray) -> None:
    """Compare with PyTorch's output, within 1e-4 of its scale."""
    error = float(np.abs(got - expected).max()) / max(float(np.abs(expected).max()), 1.0)
    assert error <= 1e-4, f"{what}: error {error:.2e}"
    print(f"-> matches PyTorch ({what}; max error {error:.1e} of the output scale)")


print("\n=== 1. WeeNet in PyTorch, imported ===")
print(inspect.getsource(WeeNet))
fn = frontend.from_torch(model, (x,))     # torch.export -> core ATen -> tesched.graph.Function
print(fn)                                  # the parameters are named constants; the input keeps its name
check("the NumPy interpreter on the imported graph", G.interpret(fn, x_np))


print("\n=== 2. The graph after each pass ===")


def show(name: str, graph: G.Function) -> None:
    notes = {
        "simplify_inference": "batch_norm -> multiply(scale) + add(shift)",
        "fold_scale_axis": "the multiply folded into the conv weights and bias: the batch norm is gone",
        "fold_constant": "the folded weights and bias are constants",
        "combine_constant_adds": "the conv's bias and the batch norm's shift merged into one add",
        "fuse_ops": "conv + add + relu grouped into one primitive function",
    }
    print(f"# after {name}: {notes.get(name, '')}\n{graph}\n")


fused = G.build(fn, trace=show)
check("the fused executable", fused(x_np))


print("\n=== 3. Fused: one kernel ===")
print(fused.fusion_report)
kernel = fused.kernels[0]
print(f"\nkernel {kernel.name}: per channel plane (the parallel loop), each output row of the depthwise\n"
      "conv is computed into a local row, then the add and the relu write the result:\n")
print(kernel.lowered)
check(f"{kernel.name}", fused(x_np))


print("\n=== 4. Unfused: one kernel per op (disabled_passes=['fuse_ops', 'fold_constant']) ===")
unfused = G.build(fn, disabled_passes=["fuse_ops", "fold_constant"])
print(unfused.function)
print(f"\n{len(unfused.kernels)} kernels: {', '.join(k.name for k in unfused.kernels)}; the conv's output goes to "
      "memory and is read back by the add, whose output is read back by the relu.")
check("the unfused executable", unfused(x_np))


print("\n=== 5. Time per call: fused, unfused, PyTorch (medians over interleaved rounds) ===")


def eager() -> object:
    with torch.inference_mode():
        return model(x)


times = time_interleaved({"tesched fused": fused.prepare(x_np), "tesched unfused": unfused.prepare(x_np),
                          "PyTorch eager": eager}, rounds=ROUNDS)
for label, timing in times.items():
    print(f"{label:16s} {timing.median * 1e3:9.3f} ms  (min {timing.min * 1e3:.3f} ms)")
check("the fused executable after timing", fused(x_np))


print("\n=== 6. Does fusion help on WeeNet, and why? ===")


def versus_fused(label: str) -> str:
    """How many times faster the fused executable is than ``label`` (or why that cannot be said)."""
    other, fused_time = times[label], times["tesched fused"]
    return ratio_text(other.median, fused_time.median, other.spread, fused_time.spread)


print(f"fused vs unfused: {versus_fused('tesched unfused')}; fused vs PyTorch eager: {versus_fused('PyTorch eager')} "
      f"({ARGS.threads} threads, 1 x 64 x {SIZE} x {SIZE}{', quick sizes: timings are not meaningful' if QUICK else ''}).")
print("Yes: the depthwise conv does 9 multiply-adds per output element, so moving data is its cost. Fused,\n"
      "the block reads the input once and writes the result once; unfused, the conv's output is written,\n"
      "read by the add, written again and read by the relu: five passes over memory instead of two. Batch\n"
      "norm folding (step 2) is what lets the whole block become one kernel.")
