"""Size of a whole network's page and the time headless Chromium takes to open it and make it interactive.

Builds ResNet-18 (torchvision's layer structure: 7x7 stem, 4 stages of 2 basic blocks, batch-norm after
every convolution, global pooling, dense) with ``tesched.graph``, writes ``exe.to_html``, then loads the
page ``--loads`` times in Debian's headless Chromium (fresh browser each time) and reports, as medians
(min-max): DOMContentLoaded, the moment the page's script has attached its handlers (``data-ready-ms``,
from navigation start), the load event, and the time a click on the largest loop takes to highlight its C
lines. Needs chromium, chromium-driver and selenium (see .ci/run).

    python benchmarks/viz_page.py                 # ResNet-18 at 224x224
    python benchmarks/viz_page.py --size 56       # smaller images, same graph (faster to build)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tesched import graph as G
from tesched.tools.browser import file_url, missing, open_browser


def resnet18(size: int, rng: np.random.Generator) -> tuple[G.Function, dict[str, np.ndarray]]:
    """ResNet-18 as a graph function of ``data`` (1x3xsizexsize) and its random parameters."""
    params: dict[str, np.ndarray] = {}

    def weight(name: str, shape: tuple[int, ...]) -> G.Var:
        params[name] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        return G.var(name, shape)

    def conv_bn(x, name: str, cin: int, cout: int, k: int, stride: int, relu: bool = True):
        y = G.nn.conv2d(x, weight(f"{name}.w", (cout, cin, k, k)), strides=stride, padding=k // 2)
        bn = [weight(f"{name}.{p}", (cout,)) for p in ("gamma", "beta", "mean")]
        params[f"{name}.var"] = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        y = G.nn.batch_norm(y, *bn, G.var(f"{name}.var", (cout,)))
        return G.nn.relu(y) if relu else y

    data = G.var("data", (1, 3, size, size))
    x = G.nn.max_pool2d(conv_bn(data, "stem", 3, 64, 7, 2), 3, 2, 1)
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"layer{stage + 1}.{block}"
            y = conv_bn(x, f"{name}.conv1", cin, cout, 3, stride)
            y = conv_bn(y, f"{name}.conv2", cout, cout, 3, 1, relu=False)
            skip = conv_bn(x, f"{name}.down", cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
            x = G.nn.relu(G.add(y, skip))
            cin = cout
    logits = G.nn.dense(G.reshape(G.nn.global_avg_pool2d(x), (1, 512)), weight("fc.w", (1000, 512)))
    free = [v for v in _vars(logits) if v.name != "data"]
    return G.Function([data] + free, logits), params


def _vars(expr) -> list:
    from tesched.graph.visit import post_order
    return [n for n in post_order(expr) if isinstance(n, G.Var)]


def measure(path: Path, loads: int) -> dict[str, list[float]]:
    from selenium.webdriver.common.by import By
    out: dict[str, list[float]] = {"DOMContentLoaded": [], "script ready": [], "load event": [], "click": []}
    for _ in range(loads):
        with open_browser() as browser:
            browser.get(file_url(path))
            timing = browser.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "return [n.domContentLoadedEventEnd, +document.documentElement.dataset.readyMs, n.loadEventEnd];")
            for key, value in zip(("DOMContentLoaded", "script ready", "load event"), timing):
                out[key].append(value)
            widest = browser.execute_script(
                "let best = null, most = -1; for (const l of document.querySelectorAll('.loop')) {"
                " const n = (l.dataset.c || '').split(',').filter(Boolean).map(r => r.split('-'))"
                ".reduce((s, [a, b]) => s + (+b) - (+a) + 1, 0); if (n > most) { most = n; best = l; } }"
                " best.scrollIntoView(); return best;")
            out["click"].append(browser.execute_script(
                "const t = performance.now(); arguments[0].click(); return performance.now() - t;", widest))
            assert browser.find_elements(By.CSS_SELECTOR, ".cl.hl"), "the click highlighted no C line"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="image size (default 224)")
    parser.add_argument("--loads", type=int, default=7, help="page loads to time (default 7)")
    parser.add_argument("--keep", type=Path, help="also keep the page here")
    args = parser.parse_args()
    reason = missing()
    if reason is not None:
        print(f"cannot time the page: {reason}", file=sys.stderr)
        return 2
    f, params = resnet18(args.size, np.random.default_rng(0))
    t0 = time.perf_counter()
    exe = G.build(f, params=params)
    built = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "resnet18.html"
        t0 = time.perf_counter()
        exe.to_html(path, title=f"ResNet-18, 1x3x{args.size}x{args.size}")
        written = time.perf_counter() - t0
        size = path.stat().st_size
        timings = measure(path, args.loads)
    print(f"ResNet-18 at {args.size}x{args.size}: {len(exe.kernels)} fused groups, "
          f"{len({id(k.kernel) for k in exe.kernels})} distinct kernels (graph built in {built:.1f} s)")
    print(f"page: {size / 1e6:.3f} MB ({size} bytes), written in {written:.2f} s")
    for key, values in timings.items():
        print(f"  {key:<17} median {statistics.median(values):7.1f} ms   (min {min(values):.1f}, "
              f"max {max(values):.1f}; {len(values)} loads, ms from navigation start"
              f"{'' if key != 'click' else '; click: the page handling a click on the loop with most C lines'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
