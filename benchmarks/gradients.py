"""Gradients from ``ts.gradient`` against PyTorch autograd, and the time ``ts.gradient`` itself takes.

1. A 3x3 convolution layer (batch 8, 32 -> 32 channels, 56x56, float32, NCHW): the gradients of a loss
   ``sum(head * conv(x, w))`` with respect to the weights and to the input. tesched: ``ts.gradient`` of the
   declared convolution, ``auto_schedule``-d, one kernel for both gradients; PyTorch: the same
   convolution's ``backward`` (``torch.ops.aten.convolution_backward``, oneDNN), given the same head.
2. Backpropagation through time: an RNN ``h[t] = tanh(W h[t-1] + U x[t] + b)`` declared with ``ts.scan``
   (T 32, batch 32, hidden 256, input 128), the gradients with respect to ``x``, ``W``, ``U``, ``b`` and
   ``h0`` for a given head. tesched: ``ts.gradient`` of the scan, ``auto_schedule``-d, forward and backward
   in one kernel; PyTorch: autograd of the same loop, forward and backward (what a training step runs),
   and ``torch.nn.RNN``'s own forward and backward.
3. The bilateral grid of :mod:`tesched.recipes.bilateral_grid` (Halide's app; one image, which is both the
   input and the guide), the gradient of ``sum(head * grid(image))`` with respect to the image. tesched:
   ``ts.gradient`` of the declared pipeline (histogram scatter, blurs, trilinear slice), ``auto_schedule``-d,
   forward and backward in one kernel; PyTorch: autograd of the same computation
   (``benchmarks/bilateral_grid_torch.py``), forward and backward.
4. A chain of 20 stages (stencils, pointwise functions and reductions): the seconds ``ts.gradient`` takes
   to build the adjoint pipeline (the declaration only, no lowering).

Each variant is checked against PyTorch before it is timed; the variants are timed interleaved in one
process. Printed: median and minimum per call, spread, and PyTorch's median over the variant's.

Run:  OMP_WAIT_POLICY=passive python benchmarks/gradients.py [--rounds 15] [--threads 2] [--quick]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tesched as ts
from tesched.tools.bench.threads import describe_thread_pools, set_all_threads, thread_pools
from tesched.driver.timing import time_interleaved

RNG = np.random.default_rng(0)


def report(title: str, timings: dict, peers: list[str]) -> None:
    """Print ``title``, then each variant's median, minimum and spread, and the best peer's median over it."""
    base = min(timings[name].median for name in peers)
    print(f"\n{title}")
    for label, t in timings.items():
        print(f"  {label:38s} {t.median * 1e3:9.2f} ms  (min {t.min * 1e3:8.2f}, spread "
              f"{t.spread / t.median * 100:5.1f}%)  best PyTorch / this: {base / t.median:5.2f}x")


def conv_layer(n: int, c: int, f: int, size: int, rounds: int) -> None:
    import torch

    k = 3
    X = ts.placeholder((n, c, size + k - 1, size + k - 1), name="X")
    W = ts.placeholder((f, c, k, k), name="W")
    rc, ry, rx = ts.reduce_axis((0, c), name="rc"), ts.reduce_axis((0, k), name="ry"), ts.reduce_axis((0, k), name="rx")
    Y = ts.compute((n, f, size, size), lambda b, o, i, j: ts.sum(X[b, rc, i + ry, j + rx] * W[o, rc, ry, rx],
                                                                  axis=[rc, ry, rx]), name="Y")
    head = ts.placeholder(Y.shape, name="dY")
    dW, dX = ts.gradient(Y, [W, X], head=head)
    start = time.perf_counter()
    s = ts.auto_schedule([dW, dX])
    kernel = ts.build(s, [X, W, head, dW, dX], name="conv_grad")
    build_s = time.perf_counter() - start

    xv = RNG.standard_normal(tuple(int(d) for d in X.shape)).astype("float32")
    wv = RNG.standard_normal(tuple(int(d) for d in W.shape)).astype("float32") * 0.1
    hv = RNG.standard_normal(tuple(int(d) for d in Y.shape)).astype("float32")
    gw, gx = np.empty_like(wv), np.empty_like(xv)
    xt, wt, ht = (torch.from_numpy(a) for a in (xv, wv, hv))

    def torch_backward() -> tuple:
        return torch.ops.aten.convolution_backward(ht, xt, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                                   [True, True, False])[:2]

    tx, tw = torch_backward()
    kernel(xv, wv, hv, gw, gx)
    np.testing.assert_allclose(gw, tw.numpy(), rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(gx, tx.numpy(), rtol=2e-3, atol=2e-3)

    timings = time_interleaved({"tesched ts.gradient + auto_schedule": lambda: kernel(xv, wv, hv, gw, gx),
                                "PyTorch convolution_backward": torch_backward}, rounds)
    report(f"conv 3x3 layer gradients, batch {n}, {c}->{f} channels, {size}x{size} (tesched auto_schedule + "
           f"build: {build_s:.1f} s)", timings, ["PyTorch convolution_backward"])


def rnn_through_time(T: int, B: int, H: int, I: int, rounds: int) -> None:
    import torch

    X, W, U = (ts.placeholder(shape, name=n) for shape, n in (((T, B, I), "X"), ((H, H), "W"), ((H, I), "U")))
    bias, h0, state = ts.placeholder((H,), name="b"), ts.placeholder((B, H), name="h0"), ts.placeholder((T, B, H), name="h")
    k, kh = ts.reduce_axis((0, I), name="k"), ts.reduce_axis((0, H), name="kh")
    xu = ts.compute((T, B, H), lambda t, b, j: ts.sum(X[t, b, k] * U[j, k], axis=k), name="xu")
    hw = ts.compute((T, B, H), lambda t, b, j: ts.sum(state[t - 1, b, kh] * W[j, kh], axis=kh), name="hw")
    step = ts.compute((T, B, H), lambda t, b, j: ts.tanh(hw[t, b, j] + xu[t, b, j] + bias[j]), name="step")
    hs = ts.scan(ts.compute((1, B, H), lambda _, b, j: h0[b, j], name="first"), step, state, name="rnn")
    head = ts.placeholder(hs.shape, name="dH")
    start = time.perf_counter()
    grads = ts.gradient(hs, [X, W, U, bias, h0], head=head)
    kernel = ts.build(ts.auto_schedule(grads), [X, W, U, bias, h0, head] + grads, name="rnn_bptt")
    build_s = time.perf_counter() - start

    values = [RNG.standard_normal((T, B, I)).astype("float32") * 0.5,
              (RNG.standard_normal((H, H)) * 0.05).astype("float32"),
              (RNG.standard_normal((H, I)) * 0.05).astype("float32"),
              (RNG.standard_normal(H) * 0.1).astype("float32"), RNG.standard_normal((B, H)).astype("float32"),
              RNG.standard_normal((T, B, H)).astype("float32")]
    outs = [np.empty(v.shape, "float32") for v in values[:5]]
    params = [torch.tensor(v, requires_grad=True) for v in values[:5]]
    dh = torch.from_numpy(values[5])
    layer = torch.nn.RNN(I, H, nonlinearity="tanh")
    with torch.no_grad():
        layer.weight_ih_l0.copy_(params[2]), layer.weight_hh_l0.copy_(params[1])
        layer.bias_ih_l0.copy_(params[3]), layer.bias_hh_l0.zero_()
    x_seq = torch.tensor(values[0][1:], requires_grad=True)
    h_first = torch.tensor(values[4][None], requires_grad=True)

    def autograd_loop() -> None:
        x, w, u, b, h = params
        for p in params:
            p.grad = None
        states = [h]
        for t in range(1, T):
            states.append(torch.tanh(states[-1] @ w.T + x[t] @ u.T + b))
        torch.stack(states).backward(dh)

    def nn_rnn() -> None:
        layer.zero_grad()
        out, _ = layer(x_seq, h_first)
        out.backward(dh[1:])

    kernel(*values, *outs)
    autograd_loop()
    for got, p in zip(outs, params):
        np.testing.assert_allclose(got, p.grad.numpy(), rtol=2e-3, atol=2e-3)
    timings = time_interleaved({"tesched ts.gradient of ts.scan + auto": lambda: kernel(*values, *outs),
                                "PyTorch autograd of the loop": autograd_loop,
                                "PyTorch torch.nn.RNN backward": nn_rnn}, rounds)
    report(f"RNN forward + backward through time, T {T}, batch {B}, hidden {H}, input {I} (tesched gradient + "
           f"auto_schedule + build: {build_s:.1f} s)", timings,
           ["PyTorch autograd of the loop", "PyTorch torch.nn.RNN backward"])


def bilateral_grid(h: int, w: int, rounds: int) -> None:
    import torch

    from bilateral_grid_torch import bilateral_grid_torch   # beside this script
    from tesched.recipes.bilateral_grid import bilateral_grid as declare

    app = declare(h, w)
    image = app.args[0]
    head = ts.placeholder(app.output.shape, name="dOut")
    start = time.perf_counter()
    (grad,) = ts.gradient(app.output, [image], head=head)
    kernel = ts.build(ts.auto_schedule(grad), [image, head, grad], name="bilateral_grid_grad")
    build_s = time.perf_counter() - start

    iv = RNG.uniform(0.0, 1.0, (h, w)).astype("float32")
    hv = RNG.standard_normal((h, w)).astype("float32")
    gv = np.empty_like(iv)
    filtered = bilateral_grid_torch(h, w)
    it, ht = torch.tensor(iv, requires_grad=True), torch.from_numpy(hv)

    def autograd() -> None:
        it.grad = None
        filtered(it).backward(ht)

    kernel(iv, hv, gv)
    autograd()
    assert it.grad is not None
    np.testing.assert_allclose(gv, it.grad.numpy(), rtol=2e-3, atol=2e-3)
    timings = time_interleaved({"tesched ts.gradient + auto_schedule": lambda: kernel(iv, hv, gv),
                                "PyTorch autograd of the same grid": autograd}, rounds)
    report(f"bilateral grid gradient w.r.t. the image, {h}x{w}, s_sigma 8, r_sigma 0.1 (tesched gradient + "
           f"auto_schedule + build: {build_s:.1f} s)", timings, ["PyTorch autograd of the same grid"])


def twenty_stages(repeat: int) -> None:
    n = 256
    x = ts.placeholder((n + 64, n + 64), name="x")
    cur = x
    size = n + 64
    for k in range(20):
        prev = cur
        if k % 4 == 0:
            size -= 2
            cur = ts.compute((size, size), lambda i, j, p=prev: (p[i, j] + p[i + 1, j + 1] + p[i + 2, j + 2]) / 3.0,
                             name=f"blur{k}")
        elif k % 4 == 1:
            cur = ts.compute((size, size), lambda i, j, p=prev: ts.tanh(p[i, j]) * p[i, j], name=f"act{k}")
        elif k % 4 == 2:
            r = ts.reduce_axis((0, 3), name=f"r{k}")
            size -= 2
            cur = ts.compute((size, size), lambda i, j, p=prev, r=r: ts.max(p[i + r, j], axis=r), name=f"pool{k}")
        else:
            cur = ts.compute((size, size), lambda i, j, p=prev: ts.exp(p[i, j] * 0.1) + p[i, j], name=f"mix{k}")
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        ts.gradient(cur, [x])
        seconds.append(time.perf_counter() - start)
    print(f"\nts.gradient of a 20-stage pipeline: median {statistics.median(seconds) * 1e3:.1f} ms, "
          f"min {min(seconds) * 1e3:.1f} ms over {repeat} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds (a smoke test)")
    args = parser.parse_args()
    import torch

    set_all_threads(args.threads, torch)
    print(describe_thread_pools(thread_pools()))
    if args.quick:
        conv_layer(1, 4, 4, 12, 3)
        rnn_through_time(4, 2, 16, 8, 3)
        bilateral_grid(24, 40, 3)
    else:
        conv_layer(8, 32, 32, 56, args.rounds)
        rnn_through_time(32, 32, 256, 128, args.rounds)
        bilateral_grid(512, 768, args.rounds)
    twenty_stages(3 if args.quick else 11)


if __name__ == "__main__":
    main()
