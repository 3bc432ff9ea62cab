"""ts.gradient of ts.scan (backpropagation through time) against torch.autograd: a decaying cumulative sum,
an RNN over T steps (input, recurrent weight, bias, initial state), several initial steps and a lag of two,
an LSTM's two states, a loss reading only the last step, the backward scan's own schedule, random small
recurrences drawn by hypothesis, and the steps it refuses."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts

torch = pytest.importorskip("torch")


def _build_and_run(grads, inputs, values, schedule=None):
    s = ts.create_schedule([g.op for g in grads])
    if schedule is not None:
        schedule(s)
    f = ts.build(s, list(inputs) + grads)
    outs = [np.full([int(d) for d in g.shape], np.nan, g.dtype) for g in grads]
    f(*values, *outs)
    return outs


def _torch(fn, values):
    tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    fn(*tensors).sum().backward()
    return [t.grad.numpy() for t in tensors]


def _rnn(T, B, H, I, dtype="float64"):
    X = ts.placeholder((T, B, I), dtype, name="X")
    W = ts.placeholder((H, H), dtype, name="W")
    U = ts.placeholder((H, I), dtype, name="U")
    bias = ts.placeholder((H,), dtype, name="bias")
    h0 = ts.placeholder((B, H), dtype, name="h0")
    state = ts.placeholder((T, B, H), dtype, name="h")
    k = ts.reduce_axis((0, I), name="k")
    xu = ts.compute((T, B, H), lambda t, b, j: ts.sum(X[t, b, k] * U[j, k], axis=k), name="xu")
    init = ts.compute((1, B, H), lambda _, b, j: h0[b, j], name="init")
    kh = ts.reduce_axis((0, H), name="kh")
    hw = ts.compute((T, B, H), lambda t, b, j: ts.sum(state[t - 1, b, kh] * W[j, kh], axis=kh), name="hw")
    upd = ts.compute((T, B, H), lambda t, b, j: ts.tanh(hw[t, b, j] + xu[t, b, j] + bias[j]), name="upd")
    hs = ts.scan(init, upd, state, name="rnn")
    loss = ts.compute((T, B, H), lambda t, b, j: hs[t, b, j] * hs[t, b, j] * (t + 1.0), name="loss")
    return (X, W, U, bias, h0), loss


def _torch_rnn(x, w, u, bias, h0):
    hs = [h0]
    for t in range(1, x.shape[0]):
        hs.append(torch.tanh(hs[-1] @ w.T + x[t] @ u.T + bias))
    steps = torch.arange(1, x.shape[0] + 1, dtype=x.dtype).reshape(-1, 1, 1)
    return torch.stack(hs) ** 2 * steps


def test_a_decaying_cumulative_sum(rand):
    m, n = 7, 5
    X = ts.placeholder((m, n), "float64", name="X")
    state = ts.placeholder((m, n), "float64", name="state")
    init = ts.compute((1, n), lambda t, i: X[t, i] * 2.0, name="init")
    update = ts.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + X[t, i], name="update")
    res = ts.scan(init, update, state, name="cumsum")
    square = ts.compute((m, n), lambda t, i: res[t, i] * res[t, i], name="square")
    x = rand((m, n), "float64")

    def reference(xt):
        out = [2.0 * xt[0]]
        for t in range(1, m):
            out.append(out[-1] * 0.5 + xt[t])
        return torch.stack(out) ** 2

    (dx,) = _build_and_run(ts.gradient(square, [X]), [X], [x])
    np.testing.assert_allclose(dx, _torch(reference, [x])[0], rtol=1e-10)


@pytest.mark.parametrize("schedule", ["default", "inline_steps", "parallel_weights"])
def test_an_rnn_through_time_matches_torch(rand, schedule):
    T, B, H, I = 6, 2, 5, 3
    inputs, loss = _rnn(T, B, H, I)
    values = [rand((T, B, I), "float64", -1, 1), rand((H, H), "float64", -0.5, 0.5), rand((H, I), "float64", -1, 1),
              rand((H,), "float64", -0.5, 0.5), rand((B, H), "float64", -1, 1)]
    grads = ts.gradient(loss, list(inputs))

    def arrange(s):
        if schedule == "inline_steps":
            for stage in s.stages:
                if stage.name.endswith(".grad.step") and stage.op.reduce_axis == []:
                    s[stage].compute_inline()
        elif schedule == "parallel_weights":
            dw = grads[1]
            s[dw].parallel(dw.op.axis[0])

    got = _build_and_run(grads, inputs, values, arrange if schedule != "default" else None)
    for g, expected in zip(got, _torch(_torch_rnn, values)):
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12)


def test_the_backward_pass_is_a_scan_over_reversed_time_in_one_loop():
    inputs, loss = _rnn(5, 1, 3, 2)
    grads = ts.gradient(loss, list(inputs))
    text = str(ts.lower(ts.create_schedule([g.op for g in grads]), list(inputs) + grads))
    assert "produce rnn.bptt" in text
    body = text[text.index("produce rnn.bptt"):]
    assert body.index("for t") < body.index("produce hw.recompute.grad.step")


def test_several_initial_steps_and_a_lag_of_two(rand):
    m, n = 9, 3
    X = ts.placeholder((m, n), "float64", name="X")
    state = ts.placeholder((m, n), "float64", name="state")
    init = ts.compute((2, n), lambda t, i: X[t, i], name="init")
    update = ts.compute((m, n), lambda t, i: ts.sin(state[t - 1, i]) + 0.5 * state[t - 2, i] * X[t, i], name="update")
    fib = ts.scan(init, update, state, name="fib")
    x = rand((m, n), "float64")

    def reference(xt):
        out = [xt[0], xt[1]]
        for t in range(2, m):
            out.append(torch.sin(out[-1]) + 0.5 * out[-2] * xt[t])
        return torch.stack(out)

    (dx,) = _build_and_run(ts.gradient(fib, [X]), [X], [x])
    np.testing.assert_allclose(dx, _torch(reference, [x])[0], rtol=1e-9)


def test_an_lstm_with_two_states_and_a_loss_on_the_last_step(rand):
    T, H = 5, 4
    X = ts.placeholder((T, H), "float64", name="X")
    Wg = ts.placeholder((4, H, H), "float64", name="Wg")
    c_state = ts.placeholder((T, H), "float64", name="c")
    h_state = ts.placeholder((T, H), "float64", name="h")
    k = ts.reduce_axis((0, H), name="k")
    gates = ts.compute((T, 4, H), lambda t, g, j: ts.sum(Wg[g, j, k] * h_state[t - 1, k], axis=k) + X[t, j],
                       name="gates")
    c_new = ts.compute((T, H), lambda t, j: ts.sigmoid(gates[t, 1, j]) * c_state[t - 1, j]
                       + ts.sigmoid(gates[t, 0, j]) * ts.tanh(gates[t, 2, j]), name="c_new")
    h_new = ts.compute((T, H), lambda t, j: ts.sigmoid(gates[t, 3, j]) * ts.tanh(c_new[t, j]), name="h_new")
    c_init = ts.compute((1, H), lambda _, j: X[0, j] * 0.0, name="c_init")
    h_init = ts.compute((1, H), lambda _, j: X[0, j], name="h_init")
    cs, hs = ts.scan([c_init, h_init], [c_new, h_new], [c_state, h_state], name="lstm")
    last = ts.compute((H,), lambda j: hs[T - 1, j] * 3.0, name="last")
    values = [rand((T, H), "float64", -1, 1), rand((4, H, H), "float64", -0.6, 0.6)]

    def reference(x, wg):
        c, h = x[0] * 0.0, x[0]
        for t in range(1, T):
            g = torch.einsum("gjk,k->gj", wg, h) + x[t]
            c = torch.sigmoid(g[1]) * c + torch.sigmoid(g[0]) * torch.tanh(g[2])
            h = torch.sigmoid(g[3]) * torch.tanh(c)
        return h * 3.0

    got = _build_and_run(ts.gradient(last, [X, Wg]), [X, Wg], values)
    for g, expected in zip(got, _torch(reference, values)):
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(2, 7), n=st.integers(1, 4), lag=st.integers(1, 2), decay=st.floats(-1.5, 1.5),
       seed=st.integers(0, 1000))
def test_random_recurrences(m, n, lag, decay, seed):
    lag = min(lag, m - 1)
    rng = np.random.default_rng(seed)
    X = ts.placeholder((m, n), "float64", name="X")
    state = ts.placeholder((m, n), "float64", name="state")
    init = ts.compute((lag, n), lambda t, i: ts.exp(X[t, i] * 0.5), name="init")
    update = ts.compute((m, n), lambda t, i: ts.tanh(state[t - lag, i] * decay + X[t, i] * X[t, i]), name="update")
    res = ts.scan(init, update, state, name="rec")
    x = rng.uniform(-1, 1, (m, n))

    def reference(xt):
        out = [torch.exp(xt[t] * 0.5) for t in range(lag)]
        for t in range(lag, m):
            out.append(torch.tanh(out[t - lag] * decay + xt[t] * xt[t]))
        return torch.stack(out)

    (dx,) = _build_and_run(ts.gradient(res, [X]), [X], [x])
    np.testing.assert_allclose(dx, _torch(reference, [x])[0], rtol=1e-9, atol=1e-12)


def test_a_step_with_a_scatter_is_refused_by_name():
    m, n = 4, 3
    X = ts.placeholder((m, n), name="X")
    state = ts.placeholder((m, n), name="state")
    rt, ri = ts.reduce_axis((1, m - 1), name="rt"), ts.reduce_axis((0, n), name="ri")
    spread = ts.scatter_add((m, n), (rt, (ri + 1) % n), state[rt - 1, ri], [rt, ri], name="spread")
    init = ts.compute((1, n), lambda t, i: X[t, i], name="init")
    update = ts.compute((m, n), lambda t, i: spread[t, i] + X[t, i], name="update")
    res = ts.scan(init, update, state, name="rotate")
    with pytest.raises(ts.GradientError, match=r"scan rotate: its step contains stage spread \(ScatterOp\)"):
        ts.gradient(res, [X])


def test_a_gradient_with_respect_to_weights_only_reaches_them_through_time(rand):
    T, B, H, I = 4, 1, 3, 2
    inputs, loss = _rnn(T, B, H, I)
    values = [rand((T, B, I), "float64", -1, 1), rand((H, H), "float64", -0.5, 0.5), rand((H, I), "float64", -1, 1),
              rand((H,), "float64", -0.5, 0.5), rand((B, H), "float64", -1, 1)]
    (dw,) = ts.gradient(loss, [inputs[1]])
    s = ts.create_schedule(dw.op)
    f = ts.build(s, list(inputs) + [dw])
    out = np.zeros((H, H))
    f(*values, out)
    np.testing.assert_allclose(out, _torch(_torch_rnn, values)[1], rtol=1e-9, atol=1e-12)
