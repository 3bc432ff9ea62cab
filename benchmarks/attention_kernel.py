"""The fused attention op alone: the graph's ``nn.attention`` kernel (online softmax, key blocks) against the
op's tensor-expression declaration built with its default schedule (two-pass softmax per stored row) and
PyTorch's ``scaled_dot_product_attention``, per sequence length, with and without ``is_causal``.

Checks both tesched kernels against PyTorch, then times the three in one process, interleaved, at the same
thread count, and prints medians, spreads, processor times (all threads) and the ratios ``two-pass / online``
and ``torch / online`` by both (above 1: the online kernel is faster).

Run:  python benchmarks/attention_kernel.py [--seqs 128,512,2048] [--heads 4] [--head-dim 64] [--rounds 9]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import tesched as ts  # noqa: E402
import tesched.nn as nn  # noqa: E402
from tesched.nn.attention import attention  # noqa: E402
from tesched import graph as G  # noqa: E402
from tesched.frontend.lazy_torch import require_torch  # noqa: E402
from tesched.tools.bench.threads import set_all_threads  # noqa: E402
from tesched.driver.timing import time_interleaved  # noqa: E402


def kernels(heads: int, seq: int, depth: int, causal: bool):
    """``(online, two_pass)``: callables of ``(q, kt, v)`` returning the attention."""
    shapes = [(heads, seq, depth), (heads, depth, seq), (heads, seq, depth)]
    params = [G.var(name, s) for name, s in zip(("q", "kt", "v"), shapes)]
    scale, offset = depth ** -0.5, 0 if causal else None
    online = G.build(G.Function(params, G.nn.attention(*params, scale=scale, causal=offset)))
    tensors = [ts.placeholder(s, name=name) for name, s in zip(("q", "kt", "v"), shapes)]
    out = attention(*tensors, scale=scale, causal=offset)
    two_pass = ts.build(nn.default_schedule([out]), tensors + [out], name="attention_two_pass")
    return online, two_pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqs", default="128,512,2048")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch = require_torch()
    print(f"threads: {set_all_threads(args.threads, torch)['tesched']}; torch {torch.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}")
    rng = np.random.default_rng(0)
    for seq in (int(s) for s in args.seqs.split(",")):
        for causal in (False, True):
            q, k, v = (rng.standard_normal((args.heads, seq, args.head_dim)).astype(np.float32) for _ in range(3))
            kt = np.ascontiguousarray(k.transpose(0, 2, 1))
            online, two_pass = kernels(args.heads, seq, args.head_dim, causal)
            tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
            with torch.inference_mode():
                want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).numpy()
            two_out = np.empty_like(want)
            two_pass(q, kt, v, two_out)
            errors = [np.abs(got - want).max() for got in (online(q, kt, v), two_out)]

            def sdpa() -> None:
                with torch.inference_mode():
                    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

            t = time_interleaved({"online": lambda: online(q, kt, v),
                                  "two-pass": lambda: two_pass(q, kt, v, two_out), "torch": sdpa}, args.rounds)
            row = "  ".join(f"{label} {x.median * 1e3:8.3f} ms ±{100 * x.spread / x.median:4.0f}% (cpu "
                            f"{x.cpu_median * 1e3:.3f})" for label, x in t.items())
            ratios = "  ".join(f"{label}/online {t[label].median / t['online'].median:.2f} (cpu "
                               f"{t[label].cpu_median / t['online'].cpu_median:.2f})"
                               for label in ("two-pass", "torch"))
            print(f"seq {seq:5d} causal {causal!s:5s} max error {max(errors):.1e}  {row}  {ratios}")


if __name__ == "__main__":
    main()
