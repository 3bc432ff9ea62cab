"""The build's progress bar: one step per kernel group, drawn only when asked for (or on a terminal), with
tqdm; a graph built with its bar still computes the reference."""
import sys

import numpy as np
import pytest

from tesched import graph as G
from tesched.graph import progress

from .helpers import ATOL, RTOL, lstm, lstm_reference


def two_blocks():
    """Two dense layers with a reshape between them: two kernels and one view."""
    x = G.var("x", shape=(3, 8))
    w1, w2 = G.var("w1", shape=(6, 8)), G.var("w2", shape=(4, 6))
    y = G.nn.relu(G.nn.dense(x, w1))
    y = G.reshape(G.reshape(y, (6, 3)), (3, 6))
    return G.Function([x, w1, w2], G.nn.dense(y, w2))


def test_the_bar_counts_the_kernel_groups(monkeypatch):
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((6, 8)).astype("float32"), rng.standard_normal((4, 6)).astype("float32")
    made = []
    original = progress.BuildProgress

    def watched(total, enabled):
        made.append(original(total, enabled))
        return made[-1]

    monkeypatch.setattr("tesched.graph.executor.BuildProgress", watched)
    exe = G.build(two_blocks(), {"w1": w1, "w2": w2}, progress=True)
    bar = made[0]._bar
    assert bar is not None and bar.total == len(exe.kernels) == bar.n
    x = rng.standard_normal((3, 8)).astype("float32")
    np.testing.assert_allclose(exe(x), np.maximum(x @ w1.T, 0) @ w2.T, rtol=RTOL, atol=ATOL)


def test_no_bar_when_turned_off_or_off_a_terminal(monkeypatch, capfd):
    assert progress.BuildProgress(5, False)._bar is None
    monkeypatch.setattr(sys, "stderr", open(__file__))          # not a terminal
    try:
        assert progress.BuildProgress(5, None)._bar is None
    finally:
        sys.stderr.close()
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)          # tqdm not installed: silent, no error
    assert progress.BuildProgress(5, True)._bar is None
    f, params = lstm()
    exe = G.build(f, params, progress=None)
    rng = np.random.default_rng(0)
    x, h, c = (rng.standard_normal(s).astype("float32") for s in ((2, 3), (2, 4), (2, 4)))
    for got, want in zip(exe(x, h, c), lstm_reference(x, h, c, params)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    assert capfd.readouterr().err == ""


def test_kernel_groups_leave_out_views():
    fused = G.build(two_blocks(), {"w1": np.ones((6, 8), "float32"), "w2": np.ones((4, 6), "float32")}).function
    assert progress.kernel_groups(fused) == 2
