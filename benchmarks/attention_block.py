"""A hand-written self-attention block (QKV linear, ``softmax(q @ k^T * scale) @ v`` over 4 heads, output
linear; seq 128, d 256, batch 1) imported with ``tesched.frontend`` against PyTorch eager.

Checks the built graph against eager (max error relative to the output's scale), then times both in one
process, interleaved (:func:`tesched.driver.timing.time_interleaved`), at the same thread count, and
prints the medians, spreads, processor times and the ratio ``eager / tesched`` (above 1: tesched is faster).
The scores, scale, softmax and product with v become one ``nn.attention`` kernel (the ``fuse_attention``
pass); ``tesched.unfused``, built without that pass (batched products and a softmax as separate kernels),
is timed in the same rounds. ONNX Runtime and ``torch.compile`` are ``benchmarks/torch_models.py``'s business.

Run:  python benchmarks/attention_block.py [--seq 128] [--dim 256] [--heads 4] [--rounds 15] [--threads 2]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from tesched import graph as G  # noqa: E402
from tesched.frontend import from_torch  # noqa: E402
from tesched.frontend.lazy_torch import require_torch  # noqa: E402
from tesched.tools.bench.threads import set_all_threads  # noqa: E402
from tesched.driver.timing import time_interleaved  # noqa: E402


def attention_block(torch, dim: int, heads: int):
    """The block as a ``torch.nn.Module`` in eval mode."""
    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.out = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = (t.reshape(b, n, heads, d // heads).transpose(1, 2) for t in self.qkv(x).split(d, -1))
            a = torch.softmax(q @ k.transpose(-2, -1) * (d // heads) ** -0.5, -1) @ v
            return self.out(a.transpose(1, 2).reshape(b, n, d))
    return Attention().eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch = require_torch()
    print(f"threads: {set_all_threads(args.threads, torch)}; torch {torch.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}")
    torch.manual_seed(0)
    model, x = attention_block(torch, args.dim, args.heads), torch.rand(1, args.seq, args.dim)
    fn = from_torch(model, (x,))
    exe, unfused = G.build(fn), G.build(fn, disabled_passes=["fuse_attention"])
    array = x.numpy()
    with torch.inference_mode():
        want = model(x).numpy()
    got = exe(array)
    got = got[0] if isinstance(got, (tuple, list)) else got
    print(f"max error / scale: {np.abs(got - want).max() / max(np.abs(want).max(), 1.0):.2e}")

    def eager() -> None:
        with torch.inference_mode():
            model(x)

    timings = time_interleaved({"tesched": lambda: exe(array), "tesched.unfused": lambda: unfused(array),
                                "torch.eager": eager}, args.rounds)
    for label, t in timings.items():
        print(f"{label:15s} median {t.median * 1e3:8.3f} ms  spread {100 * t.spread / t.median:5.1f}%  "
              f"cpu {t.cpu_median * 1e3:8.3f} ms")
    print(f"eager / tesched: {timings['torch.eager'].median / timings['tesched'].median:.2f} (wall), "
          f"{timings['torch.eager'].cpu_median / timings['tesched'].cpu_median:.2f} (processor time)")
    print(f"unfused / fused: {timings['tesched.unfused'].median / timings['tesched'].median:.2f} (wall), "
          f"{timings['tesched.unfused'].cpu_median / timings['tesched'].cpu_median:.2f} (processor time)")


if __name__ == "__main__":
    main()
