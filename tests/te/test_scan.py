"""Tests of tesched.te.scan: recurrences along a time axis (TVM's te.scan) as one kernel with the time loop
inside it: a cumulative sum against np.cumsum, a simple RNN over T steps against a NumPy loop, schedules
of the scan's loops and of its update stages, and the mistakes a scan can be declared or scheduled with."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from scan_helpers import rnn_reference, rnn_scan


def _cumsum(m, n, init_steps=1):
    X = ts.placeholder((m, n), name="X")
    state = ts.placeholder((m, n), name="state")
    init = ts.compute((init_steps, n), lambda t, i: X[t, i], name="init")
    update = ts.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    return X, update, ts.scan(init, update, state, inputs=[X], name="cumsum")


@pytest.mark.parametrize("schedule", ["default", "inline", "parallel_i", "split_i", "vectorize_i"])
def test_cumsum_matches_numpy(rand, schedule):
    X, update, res = _cumsum(12, 40)
    s = ts.create_schedule(res.op)
    i = res.op.axis[1]
    if schedule == "inline":
        s[update].compute_inline()
    elif schedule == "parallel_i":
        s[res].parallel(i)
        s[update].parallel(update.op.axis[1])
    elif schedule == "split_i":
        s[res].split(i, factor=16)
    elif schedule == "vectorize_i":
        _, inner = s[res].split(i, factor=8)
        s[res].vectorize(inner)
    f = ts.build(s, [X, res], name=f"cumsum_{schedule}")
    x = rand((12, 40))
    np.testing.assert_allclose(f(x), np.cumsum(x, axis=0), rtol=1e-5)


def test_the_time_loop_is_inside_one_kernel_and_the_update_inside_it():
    X, update, res = _cumsum(6, 4)
    text = str(ts.lower(ts.create_schedule(res.op), [X, res]))
    assert text.index("for t in") < text.index("produce update")
    assert "cumsum[t - 1, i" in text


def test_several_initial_steps_and_a_symbolic_length(rand):
    m = ts.var("m")
    X = ts.placeholder((m, 3), name="X")
    state = ts.placeholder((m, 3), name="state")
    init = ts.compute((2, 3), lambda t, i: X[0, i] * 2.0, name="init")
    update = ts.compute((m, 3), lambda t, i: state[t - 1, i] + state[t - 2, i], name="update")
    fib = ts.scan(init, update, state, name="fib")
    f = ts.build(ts.create_schedule(fib.op), [X, fib], name="scan_fib")
    x = rand((9, 3))
    expected = np.zeros((9, 3), "float32")
    expected[:2] = 2 * x[0]
    for t in range(2, 9):
        expected[t] = expected[t - 1] + expected[t - 2]
    np.testing.assert_allclose(f(x), expected, rtol=1e-5)


@pytest.mark.parametrize("schedule", ["default", "inline_update", "parallel", "hw_split"])
def test_a_simple_rnn_over_t_steps_matches_a_numpy_loop(rand, schedule):
    T, B, H, I = 9, 2, 16, 5
    inputs, xu, hw, upd, hs = rnn_scan(T, B, H, I)
    s = ts.create_schedule(hs.op)
    if schedule == "inline_update":
        s[upd].compute_inline()
    elif schedule == "parallel":
        s[xu].parallel(xu.op.axis[0])
        s[hw].parallel(hw.op.axis[2])
        s[hs].parallel(hs.op.axis[2])
    elif schedule == "hw_split":
        ko, ki = s[hw].split(hw.op.reduce_axis[0], factor=4)
        s[hw].vectorize(ki)
    f = ts.build(s, list(inputs) + [hs], name=f"rnn_{schedule}")
    x, w, u, h0 = rand((T, B, I)), rand((H, H), low=-0.3, high=0.3), rand((H, I)), rand((B, H))
    np.testing.assert_allclose(f(x, w, u, h0), rnn_reference(x, w, u, h0), rtol=1e-4, atol=1e-5)


def test_a_parallel_time_loop_is_refused_by_the_dependence_check():
    inputs, _, _, _, hs = rnn_scan(4, 2, 4, 3)
    s = ts.create_schedule(hs.op)
    s[hs].parallel(hs.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"loop t of stage rnn is parallel, but its iterations depend"):
        ts.lower(s, list(inputs) + [hs])


def test_an_update_computed_at_the_root_is_refused():
    X, update, res = _cumsum(5, 3)
    s = ts.create_schedule(res.op)
    s[update].compute_root()
    with pytest.raises(ts.ScheduleError, match=r"stage update reads the state of scan cumsum, so it runs inside the "
                                               r"scan's time loop: compute it at cumsum.t"):
        ts.lower(s, [X, res])


def test_an_update_reading_the_current_step_is_refused():
    X = ts.placeholder((5, 3), name="X")
    state = ts.placeholder((5, 3), name="state")
    init = ts.compute((1, 3), lambda t, i: X[t, i], name="init")
    update = ts.compute((5, 3), lambda t, i: state[t, i] + X[t, i], name="update")
    res = ts.scan(init, update, state, name="bad")
    with pytest.raises(ts.ScheduleError, match="would read a value before bad"):
        ts.lower(ts.create_schedule(res.op), [X, res])


@pytest.mark.parametrize("make, error, message", [
    (lambda X, st, i, u: ts.scan(i, u, u), TypeError, "must be a ts.placeholder"),
    (lambda X, st, i, u: ts.scan(i, ts.compute((4, 3), lambda t, j: st[t - 1, j]), st), ValueError,
     "update has shape"),
    (lambda X, st, i, u: ts.scan(ts.compute((1, 2), lambda t, j: X[t, j]), u, st), ValueError, "init has shape"),
    (lambda X, st, i, u: ts.scan(i, ts.compute((5, 3), lambda t, j: X[t, j]), st), ValueError,
     "update does not read the state"),
    (lambda X, st, i, u: ts.scan(ts.compute((1, 3), lambda t, j: st[t, j]), u, st), ValueError,
     "init reads the state"),
    (lambda X, st, i, u: ts.scan(i, u, ts.placeholder((5, 3), "float64", name="s64")), TypeError,
     "init is float32 but the state is float64"),
])
def test_declaration_mistakes(make, error, message):
    X = ts.placeholder((5, 3), name="X")
    state = ts.placeholder((5, 3), name="state")
    init = ts.compute((1, 3), lambda t, i: X[t, i], name="init")
    update = ts.compute((5, 3), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    with pytest.raises(error, match=message):
        make(X, state, init, update)


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 12), n=st.integers(1, 20), seed=st.integers(0, 2**31), steps=st.integers(1, 3),
       factor=st.sampled_from([0, 2, 7]), inline=st.booleans(), parallel=st.booleans())
def test_random_cumsums_and_schedules(m, n, seed, steps, factor, inline, parallel):
    steps = min(steps, m)
    X, update, res = _cumsum(m, n, steps)
    s = ts.create_schedule(res.op)
    i = res.op.axis[1]
    if factor:
        i, _ = s[res].split(i, factor=factor)
    if parallel:
        s[res].parallel(i)
    if inline:
        s[update].compute_inline()
    f = ts.build(s, [X, res], name="random_cumsum")
    x = np.random.default_rng(seed).uniform(size=(m, n)).astype("float32")
    expected = x.copy()
    for t in range(steps, m):
        expected[t] = expected[t - 1] + x[t]
    np.testing.assert_allclose(f(x), expected, rtol=1e-5)


def test_an_lstm_over_a_sequence_is_one_kernel_with_its_two_states_packed(rand):
    """TVM's LSTM scan keeps c and h; here one state of shape (T, 2, B, H) holds both (c at 0, h at 1)."""
    T, B, H, I = 6, 2, 8, 5
    X = ts.placeholder((T, B, I), name="X")
    Wx = ts.placeholder((4 * H, I), name="Wx")
    Wh = ts.placeholder((4 * H, H), name="Wh")
    state = ts.placeholder((T, 2, B, H), name="ch")
    k = ts.reduce_axis((0, I), name="k")
    xw = ts.compute((T, B, 4 * H), lambda t, b, g: ts.sum(X[t, b, k] * Wx[g, k], axis=k), name="xw")
    kh = ts.reduce_axis((0, H), name="kh")
    hw = ts.compute((T, B, 4 * H), lambda t, b, g: ts.sum(state[t - 1, 1, b, kh] * Wh[g, kh], axis=kh), name="hw")

    def gate(t, b, j, n):
        return xw[t, b, n * H + j] + hw[t, b, n * H + j]

    c = ts.compute((T, B, H), lambda t, b, j: ts.sigmoid(gate(t, b, j, 1)) * state[t - 1, 0, b, j]
                   + ts.sigmoid(gate(t, b, j, 0)) * ts.tanh(gate(t, b, j, 2)), name="c")
    update = ts.compute((T, 2, B, H), lambda t, s, b, j: ts.if_then_else(
        s == 0, c[t, b, j], ts.sigmoid(gate(t, b, j, 3)) * ts.tanh(c[t, b, j])), name="update")
    init = ts.compute((1, 2, B, H), lambda t, s, b, j: ts.const(0.0), name="init")
    seq = ts.scan(init, update, state, name="lstm")
    s = ts.create_schedule(seq.op)
    s[update].compute_inline()
    kernel = ts.build(s, [X, Wx, Wh, seq], name="lstm_scan")
    assert "for t in" in str(kernel.lowered)
    x, wx, wh = rand((T, B, I)), rand((4 * H, I), low=-0.5, high=0.5), rand((4 * H, H), low=-0.5, high=0.5)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    cs, hs = np.zeros((T, B, H), "float32"), np.zeros((T, B, H), "float32")
    for t in range(1, T):
        g = x[t] @ wx.T + hs[t - 1] @ wh.T
        cs[t] = sig(g[:, H:2 * H]) * cs[t - 1] + sig(g[:, :H]) * np.tanh(g[:, 2 * H:3 * H])
        hs[t] = sig(g[:, 3 * H:]) * np.tanh(cs[t])
    out = kernel(x, wx, wh)
    np.testing.assert_allclose(out[:, 0], cs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[:, 1], hs, rtol=1e-4, atol=1e-5)


def test_a_scan_of_two_states_reading_each_other(rand):
    """TVM's multi-state scan: lists of inits, updates and states; each update reads both states, and
    the outputs come back in order (the second is a build argument of its own)."""
    m, n = ts.var("m"), ts.var("n")
    X = ts.placeholder((m, n), name="X")
    s1, s2 = ts.placeholder((m, n), name="s1"), ts.placeholder((m, n), name="s2")
    i1 = ts.compute((1, n), lambda _, i: X[0, i], name="i1")
    i2 = ts.compute((1, n), lambda _, i: X[0, i] * 2.0, name="i2")
    u1 = ts.compute((m, n), lambda t, i: s1[t - 1, i] + s2[t - 1, i] + X[t, i], name="u1")
    u2 = ts.compute((m, n), lambda t, i: s2[t - 1, i] - s1[t - 1, i] * 0.5, name="u2")
    r1, r2 = ts.scan([i1, i2], [u1, u2], [s1, s2], name="pair")
    s = ts.create_schedule(r1.op)
    assert s[r1] is s[r2]
    x = rand((6, 3))
    a, b = ts.build(s, [X, r1, r2])(x)
    want1, want2 = np.zeros_like(x), np.zeros_like(x)
    want1[0], want2[0] = x[0], 2 * x[0]
    for t in range(1, 6):
        want1[t] = want1[t - 1] + want2[t - 1] + x[t]
        want2[t] = want2[t - 1] - want1[t - 1] * 0.5
    np.testing.assert_allclose(a, want1, rtol=1e-5)
    np.testing.assert_allclose(b, want2, rtol=1e-5)


@pytest.mark.parametrize("call, error, message", [
    (lambda i, u, s: ts.scan([i], u, [s]), TypeError, "must all be tensors or all be lists"),
    (lambda i, u, s: ts.scan([i, i], [u], [s]), ValueError, "2 inits, 1 updates and 1 states"),
    (lambda i, u, s: ts.scan([i, "x"], [u, u], [s, s]), TypeError, "init must be a tensor, got str"),
])
def test_a_multi_state_scan_checks_its_lists(call, error, message):
    X = ts.placeholder((5, 3), name="X")
    st = ts.placeholder((5, 3), name="st")
    init = ts.compute((1, 3), lambda _, i: X[0, i], name="init")
    update = ts.compute((5, 3), lambda t, i: st[t - 1, i] + X[t, i], name="update")
    with pytest.raises(error, match=message):
        call(init, update, st)
