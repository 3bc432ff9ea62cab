"""tesched.autoschedule.scan_steps: the loops chosen for the stages of a scan's step, from the strides of
their reads (pinned to AVX-512's 16 float lanes), and the scheduled scans against NumPy."""
import numpy as np
import pytest

import tesched as ts
from targets import AVX512


def _scan(T, B, H, transposed):
    """``s[t] = tanh(s[t-1] @ W.T)`` (``W[j, k]``: contiguous along the reduction) or ``tanh(s[t-1] @ W)``
    (``W[k, j]``: contiguous along the output row)."""
    W = ts.placeholder((H, H), name="W")
    s0 = ts.placeholder((B, H), name="s0")
    state = ts.placeholder((T, B, H), name="s")
    k = ts.reduce_axis((0, H), name="k")
    weight = (lambda j, kk: W[kk, j]) if transposed else (lambda j, kk: W[j, kk])
    mv = ts.compute((T, B, H), lambda t, b, j: ts.sum(state[t - 1, b, k] * weight(j, k), axis=k), name="mv")
    act = ts.compute((T, B, H), lambda t, b, j: ts.tanh(mv[t, b, j]), name="act")
    init = ts.compute((1, B, H), lambda _, b, j: s0[b, j], name="init")
    return (W, s0), ts.scan(init, act, state, name="rec")


def _reference(w, s0, T, transposed):
    out = [s0]
    for _ in range(1, T):
        out.append(np.tanh(out[-1] @ (w if transposed else w.T)))
    return np.stack(out)


@pytest.mark.parametrize("transposed,decision", [
    (False, "mv: at its scan's time loop, rfactor 16"),
    (True, "mv: at its scan's time loop, vectorized, register tile"),
])
def test_the_step_reduction_is_vectorized_along_whichever_axis_its_inputs_are_contiguous(rand, transposed, decision):
    T, B, H = 6, 3, 32
    inputs, res = _scan(T, B, H, transposed)
    with ts.Target(AVX512):
        s = ts.auto_schedule(res)
    text = ts.explain_schedule(s)
    assert decision in text
    assert "act: at its scan's time loop, vectorized" in text
    w, s0 = rand((H, H), low=-0.3, high=0.3), rand((B, H), low=-1, high=1)
    f = ts.build(s, list(inputs) + [res])
    np.testing.assert_allclose(f(w, s0), _reference(w, s0, T, transposed), rtol=1e-4, atol=1e-5)


def test_a_short_step_keeps_its_loops_and_says_why():
    inputs, res = _scan(4, 2, 2, False)
    with ts.Target(AVX512):
        text = ts.explain_schedule(ts.auto_schedule(res))
    assert "    - mv: loops left as declared: no axis long enough for a vector" in text


def test_a_step_doing_enough_work_runs_its_batch_axis_in_parallel(rand):
    T, B, H = 3, 16, 128                      # 16 x 128 x 128 multiply-adds per step
    inputs, res = _scan(T, B, H, True)
    with ts.Target(AVX512):
        s = ts.auto_schedule(res)
    text = ts.explain_schedule(s)
    assert "mv: at its scan's time loop, parallel x1, vectorized, register tile" in text
    assert "its axis b in parallel: 262144 operations per time step" in text
    assert "act: at its scan's time loop, vectorized" in text        # elementwise: not worth a region
    w, s0 = rand((H, H), low=-0.1, high=0.1), rand((B, H), low=-1, high=1)
    f = ts.build(s, list(inputs) + [res])
    np.testing.assert_allclose(f(w, s0), _reference(w, s0, T, True), rtol=1e-4, atol=1e-5)
