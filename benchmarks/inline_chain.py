"""How lowering scales with the depth of an inlined stencil chain (fan-in 2).

``f_k(i) = f_{k-1}(i) + f_{k-1}(i + 2)``, every stage but the last inlined: the chain reads ``f_{k-m}`` at
``m + 1`` distinct points, so the shared expression has ``O(depth**2)`` distinct values (``2**depth``
reads without sharing), each bound once by a ``let``. Printed per depth: the number of distinct values,
of ``let``s, the length of ``lower()``'s text and the characters per value (constant when the text is
linear in the values), and the seconds lowering took (median and spread of ``--repeat`` runs). Halide's
chain is depth 100.

Run:  python benchmarks/inline_chain.py [--depths 8 14 20 30 50 100] [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import tesched as ts


def stencil_chain(depth: int, n: int = 64) -> tuple:
    """The schedule and arguments of the chain of ``depth`` stages."""
    A = ts.placeholder((n + 2 * depth,), name="A")
    cur = ts.compute((n + 2 * depth,), lambda i: A[i] * 1.5, name="f0")
    stages, size = [cur], n + 2 * depth
    for k in range(1, depth):
        prev, size = cur, size - 2
        cur = ts.compute((size,), lambda i, p=prev: p[i] + p[i + 2], name=f"f{k}")
        stages.append(cur)
    s = ts.create_schedule(cur.op)
    for st in stages[:-1]:
        s[st].compute_inline()
    return s, [A, cur]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="+", default=[8, 14, 20, 30, 50, 100])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'depth':>6} {'values':>7} {'lets':>6} {'lower() text':>13} {'chars/value':>12} {'lowering s':>11} "
          f"{'spread':>7}")
    for depth in args.depths:
        seconds, text = [], ""
        for _ in range(args.repeat):
            s, tensors = stencil_chain(depth)
            start = time.perf_counter()
            text = str(ts.lower(s, tensors))
            seconds.append(time.perf_counter() - start)
        values = depth * (depth + 1) // 2
        print(f"{depth:>6} {values:>7,} {text.count('let '):>6,} {len(text):>13,} {len(text) / values:>12.1f} "
              f"{statistics.median(seconds):>11.2f} {max(seconds) - min(seconds):>7.2f}")


if __name__ == "__main__":
    main()
