"""A training step built from a graph (``G.optim.sgd`` of a loss: forward, ``G.gradient``, update, fused by
``G.build`` with the default schedules) against PyTorch eager (``zero_grad``, forward, ``backward``,
``torch.optim.SGD.step``) on the same model, data and weights.

1. MLP: 784 -> 256 -> ReLU -> 10, batch 32, softmax cross-entropy (one-hot targets), float32.
2. CNN: 1x28x28 -> conv 3x3 (8 channels, padding 1) -> ReLU -> max pool 2 -> dense 10, batch 32, the same loss.
3. LSTM: 16 steps of PyTorch's LSTM cell (input 64, hidden 128, one bias) unrolled in the graph, the last
   hidden state through dense 10, batch 32, the same loss; PyTorch eager runs the same cell in a Python
   loop.
4. The same CNN with batch normalisation in training mode after the convolution (no conv bias): the batch's
   own statistics, differentiated through (``G.nn.batch_norm_train``; PyTorch's ``BatchNorm2d`` in ``train()``).

Each step is checked against PyTorch (the loss and the updated parameters) before it is timed; the two are
timed interleaved in one process. Printed: median and minimum per step, spread, and PyTorch's median over
tesched's, and the seconds ``G.gradient`` and ``G.build`` take.

Run:  OMP_WAIT_POLICY=passive python benchmarks/graph_training_step.py [--rounds 15] [--threads 2] [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from tesched import graph as G
from tesched.tools.bench.threads import describe_thread_pools, set_all_threads, thread_pools
from tesched.driver.timing import time_interleaved

LR = 0.05


def _cross_entropy(logits: G.Expr, onehot: G.Var, batch: int) -> G.Expr:
    picked = G.sum(G.multiply(G.log(G.nn.softmax(logits)), onehot), axis=1)
    return G.negative(G.divide(G.sum(picked), float(batch)))


def _mlp(batch: int, hidden: int):
    import torch

    x, onehot = G.var("x", (batch, 784)), G.var("onehot", (batch, 10))
    w1, b1, w2, b2 = G.var("w1", (hidden, 784)), G.var("b1", (hidden,)), G.var("w2", (10, hidden)), G.var("b2", (10,))
    logits = G.nn.dense(G.nn.relu(G.nn.dense(x, w1, b1)), w2, b2)
    f = G.Function([x, onehot, w1, b1, w2, b2], _cross_entropy(logits, onehot, batch))
    model = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    return f, ["w1", "b1", "w2", "b2"], model, (batch, 784)


def _cnn(batch: int, channels: int):
    import torch

    x, onehot = G.var("x", (batch, 1, 28, 28)), G.var("onehot", (batch, 10))
    wc, bc = G.var("wc", (channels, 1, 3, 3)), G.var("bc", (channels,))
    wd, bd = G.var("wd", (10, channels * 14 * 14)), G.var("bd", (10,))
    pooled = G.nn.max_pool2d(G.nn.relu(G.nn.bias_add(G.nn.conv2d(x, wc, padding=1), bc)), 2)
    logits = G.nn.dense(G.reshape(pooled, (batch, channels * 14 * 14)), wd, bd)
    f = G.Function([x, onehot, wc, bc, wd, bd], _cross_entropy(logits, onehot, batch))
    model = torch.nn.Sequential(torch.nn.Conv2d(1, channels, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(channels * 14 * 14, 10))
    return f, ["wc", "bc", "wd", "bd"], model, (batch, 1, 28, 28)


def _cnn_bn(batch: int, channels: int):
    import torch

    x, onehot = G.var("x", (batch, 1, 28, 28)), G.var("onehot", (batch, 10))
    wc, gamma, beta = G.var("wc", (channels, 1, 3, 3)), G.var("gamma", (channels,)), G.var("beta", (channels,))
    wd, bd = G.var("wd", (10, channels * 14 * 14)), G.var("bd", (10,))
    normed = G.nn.batch_norm_train(G.nn.conv2d(x, wc, padding=1), gamma, beta)
    logits = G.nn.dense(G.reshape(G.nn.max_pool2d(G.nn.relu(normed), 2), (batch, channels * 14 * 14)), wd, bd)
    f = G.Function([x, onehot, wc, gamma, beta, wd, bd], _cross_entropy(logits, onehot, batch))
    model = torch.nn.Sequential(torch.nn.Conv2d(1, channels, 3, padding=1, bias=False), torch.nn.BatchNorm2d(channels),
                                torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                torch.nn.Linear(channels * 14 * 14, 10))
    return f, ["wc", "gamma", "beta", "wd", "bd"], model.train(), (batch, 1, 28, 28)


class _LoopLSTM:
    """PyTorch eager of the graph's LSTM: the cell in a Python loop, parameters in the graph's order."""

    def __init__(self, steps: int, inputs: int, hidden: int):
        import torch

        def param(*shape: int):
            return torch.nn.Parameter(torch.randn(*shape) / shape[-1] ** 0.5)
        self.steps, self.hidden = steps, hidden
        self.params = [param(4 * hidden, inputs), param(4 * hidden, hidden), param(4 * hidden), param(10, hidden),
                       param(10)]

    def parameters(self) -> list:
        return self.params

    def __call__(self, x):
        import torch

        w_ih, w_hh, b, wd, bd = self.params
        h = c = torch.zeros(x.shape[1], self.hidden)
        for t in range(self.steps):
            i, f, g, o = (x[t] @ w_ih.T + h @ w_hh.T + b).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h @ wd.T + bd


def _lstm(batch: int, steps: int, inputs: int, hidden: int):
    x, onehot = G.var("x", (steps, batch, inputs)), G.var("onehot", (batch, 10))
    w_ih, w_hh, b = G.var("w_ih", (4 * hidden, inputs)), G.var("w_hh", (4 * hidden, hidden)), G.var("b", (4 * hidden,))
    wd, bd = G.var("wd", (10, hidden)), G.var("bd", (10,))
    h = c = G.const(np.zeros((batch, hidden), "float32"))
    for t in range(steps):
        x_t = G.reshape(G.strided_slice(x, [t], [t + 1]), (batch, inputs))
        state = G.nn.lstm_cell(x_t, h, c, w_ih, w_hh, b)
        h, c = G.TupleGetItem(state, 0), G.TupleGetItem(state, 1)
    f = G.Function([x, onehot, w_ih, w_hh, b, wd, bd], _cross_entropy(G.nn.dense(h, wd, bd), onehot, batch))
    return f, ["w_ih", "w_hh", "b", "wd", "bd"], _LoopLSTM(steps, inputs, hidden), (steps, batch, inputs)


def compare(label: str, f: G.Function, names: list[str], model, shape: tuple[int, ...], rounds: int) -> None:
    import torch

    start = time.perf_counter()
    step_fn = G.optim.sgd(f, names, lr=LR)
    grad_s = time.perf_counter() - start
    start = time.perf_counter()
    exe = G.build(step_fn)
    build_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    labels = rng.integers(0, 10, shape[1] if isinstance(model, _LoopLSTM) else shape[0])
    onehot = np.eye(10, dtype="float32")[labels]
    params = [p.detach().numpy().copy() for p in model.parameters()]
    xt, lt = torch.from_numpy(x), torch.from_numpy(labels)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def torch_step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xt), lt).backward()
        opt.step()

    loss, *news = exe(x, onehot, *params)
    reference = torch.nn.functional.cross_entropy(model(xt), lt).item()
    torch_step()
    np.testing.assert_allclose(loss, reference, rtol=1e-4)
    for ours, theirs in zip(news, model.parameters()):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-3, atol=1e-5)

    timings = time_interleaved({"tesched G.optim.sgd step": lambda: exe(x, onehot, *params),
                                "PyTorch eager step": torch_step}, rounds)
    base = timings["PyTorch eager step"].median
    print(f"\n{label} ({len(exe.kernels)} kernels; G.gradient + update {grad_s:.2f} s, G.build {build_s:.1f} s)")
    for name, t in timings.items():
        print(f"  {name:28s} {t.median * 1e3:9.3f} ms  (min {t.min * 1e3:8.3f}, spread "
              f"{t.spread / t.median * 100:5.1f}%)  PyTorch / this: {base / t.median:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds (a smoke test)")
    args = parser.parse_args()
    import torch

    set_all_threads(args.threads, torch)
    torch.manual_seed(0)
    print(describe_thread_pools(thread_pools()))
    batch, rounds = (4, 3) if args.quick else (32, args.rounds)
    compare(f"MLP 784-256-10, batch {batch}", *_mlp(batch, 32 if args.quick else 256), rounds)
    compare(f"CNN conv3x3(8)-pool-dense, batch {batch}", *_cnn(batch, 8), rounds)
    steps, hidden = (4, 32) if args.quick else (16, 128)
    compare(f"LSTM {steps} steps, 64-{hidden}, batch {batch}", *_lstm(batch, steps, 64, hidden), rounds)
    compare(f"CNN conv3x3(8)-BN(train)-pool-dense, batch {batch}", *_cnn_bn(batch, 8), rounds)


if __name__ == "__main__":
    main()
