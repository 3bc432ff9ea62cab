"""tesched.autoschedule.pipeline and scan_steps: how stages are classified for the automatic scheduler. A
scan keeps its schedule and is named at the top of the explanation; the stages of its step stay at its
time loop with their own loops arranged (rfactor or reduce loops outside, vectorized), unless the user
arranged them; the result matches NumPy (forward and through-time gradients)."""
import numpy as np
import pytest

import tesched as ts
from tesched.autoschedule.pipeline import Pipeline
from scan_helpers import rnn_reference, rnn_scan
from targets import AVX512


def _rnn(T, B, H, I):
    inputs, _, _, _, hs = rnn_scan(T, B, H, I)
    return inputs, ts.compute(hs.shape, lambda t, b, j: hs[t, b, j] * 2.0, name="out")


def _reference(x, w, u, h0):
    return rnn_reference(x, w, u, h0) * 2.0


def test_a_scan_and_its_step_keep_their_schedule_and_the_rest_is_scheduled(rand):
    T, B, H, I = 7, 3, 16, 8
    inputs, out = _rnn(T, B, H, I)
    s = ts.create_schedule(out.op)
    kinds = {info.name: (info.kind, info.why_opaque) for info in Pipeline(s).stages}
    assert kinds["rnn"] == ("opaque", "it is a scan: its time loop runs in order, with its step computed inside it")
    assert kinds["hw"] == ("opaque", "it is a step of scan rnn, computed at its time loop")
    assert kinds["upd"][1] == "it is a step of scan rnn, computed at its time loop"
    assert kinds["xu"][0] == "reduction" and kinds["out"][0] == "pointwise"

    with ts.Target(AVX512):                 # the decisions below are those for 16 float lanes
        auto = ts.auto_schedule([out])
    text = ts.explain_schedule(auto)
    top = text.split("\n")[1:3]
    assert top == ["left as declared: 1 stage(s):",
                   "    - rnn: kept as scheduled: it is a scan: its time loop runs in order, with its step computed "
                   "inside it"]
    assert "hw: at its scan's time loop, rfactor 8" in text       # W[j, kh]: contiguous along kh only; 16 of it
    assert "upd: at its scan's time loop, vectorized" in text
    values = [rand((T, B, I), low=-1, high=1), rand((H, H), low=-0.3, high=0.3), rand((H, I), low=-1, high=1),
              rand((B, H), low=-1, high=1)]
    f = ts.build(auto, list(inputs) + [out])
    np.testing.assert_allclose(f(*values), _reference(*values), rtol=1e-4, atol=1e-5)


def test_a_step_the_user_arranged_keeps_its_loops(rand):
    T, B, H, I = 5, 2, 8, 4
    inputs, out = _rnn(T, B, H, I)
    s = ts.create_schedule(out.op)
    hw = s.stages[[st.op.name for st in s.stages].index("hw")]
    hw.split(hw.op.reduce_axis[0], 4)
    infos = {info.name: info for info in Pipeline(s).stages}
    assert infos["hw"].scan == "" and infos["upd"].scan == "rnn"
    auto = ts.auto_schedule(s)
    assert "hw: kept as scheduled: its loops were already split" in ts.explain_schedule(auto)
    values = [rand((T, B, I), low=-1, high=1), rand((H, H), low=-0.3, high=0.3), rand((H, I), low=-1, high=1),
              rand((B, H), low=-1, high=1)]
    f = ts.build(auto, list(inputs) + [out])
    np.testing.assert_allclose(f(*values), _reference(*values), rtol=1e-4, atol=1e-5)


def test_through_time_gradients_auto_schedule_and_match_torch(rand):
    torch = pytest.importorskip("torch")
    T, B, H, I = 5, 2, 8, 4
    inputs, out = _rnn(T, B, H, I)
    grads = ts.gradient(out, list(inputs))
    f = ts.build(ts.auto_schedule(grads), list(inputs) + grads)
    values = [rand((T, B, I), low=-1, high=1), rand((H, H), low=-0.3, high=0.3), rand((H, I), low=-1, high=1),
              rand((B, H), low=-1, high=1)]
    got = [np.zeros(v.shape, "float32") for v in values]
    f(*values, *got)
    tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    x, w, u, h = tensors
    hs = [h]
    for t in range(1, T):
        hs.append(torch.tanh(hs[-1] @ w.T + x[t] @ u.T))
    (torch.stack(hs) * 2.0).sum().backward()
    for g, t_ in zip(got, tensors):
        np.testing.assert_allclose(g, t_.grad.numpy(), rtol=2e-4, atol=2e-5)
