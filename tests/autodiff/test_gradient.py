"""ts.gradient against torch.autograd: stencils, convolutions, matmuls, reductions, gathers, boundaries,
symbolic sizes, scheduled and fused gradients, and random pipelines drawn by hypothesis."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts

torch = pytest.importorskip("torch")


def _run(output, inputs, placeholders, values, head=None, head_value=None, schedule=None):
    grads = ts.gradient(output, inputs, head=head)
    s = ts.create_schedule([g.op for g in grads])
    if schedule is not None:
        schedule(s, grads)
    pairs = list(zip(placeholders, values)) + ([(head, head_value)] if head is not None else [])
    used = [(t, v) for t, v in pairs if _in_schedule(s, t)]     # an input no gradient reads is no argument
    f = ts.build(s, [t for t, _ in used] + grads)
    outs = [np.full([int(d) for d in g.shape], np.nan, g.dtype) for g in grads]
    f(*[v for _, v in used], *outs)
    return outs


def _in_schedule(s, tensor):
    try:
        s[tensor]
    except ts.ScheduleError:
        return False
    return True


def _torch_grads(fn, values, wrt, head_value=None):
    tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=k in wrt) for k, v in enumerate(values)]
    out = fn(*tensors)
    out.backward(torch.ones_like(out) if head_value is None else torch.tensor(head_value, dtype=torch.float64))
    return [np.zeros(values[k].shape) if tensors[k].grad is None else tensors[k].grad.numpy() for k in wrt]


def _check(ours, theirs, rtol=2e-4, atol=2e-5):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


rng = np.random.default_rng(7)


def test_conv1d_input_and_weight_gradients_are_transposed_convolutions():
    n, k = 13, 3
    x = ts.placeholder((n,), name="x")
    w = ts.placeholder((k,), name="w")
    r = ts.reduce_axis((0, k), name="r")
    y = ts.compute((n - k + 1,), lambda i: ts.sum(x[i + r] * w[r], axis=r), name="y")
    z = ts.compute(y.shape, lambda i: ts.tanh(y[i]) * y[i], name="z")
    xv, wv = rng.standard_normal(n).astype("float32"), rng.standard_normal(k).astype("float32")
    ours = _run(z, [x, w], [x, w], [xv, wv])
    theirs = _torch_grads(lambda a, b: (lambda t: torch.tanh(t) * t)(
        torch.nn.functional.conv1d(a[None, None], b[None, None])[0, 0]), [xv, wv], [0, 1])
    _check(ours, theirs)
    # gather form: the input gradient is a sum over the kernel taps, no scatter stage
    (dx,) = ts.gradient(z, [x])
    text = str(ts.lower(ts.create_schedule(dx.op), [x, w, dx]))
    assert "scatter" not in text


def test_conv2d_nchw_gradients_match_torch():
    n, c, h, w_, f, kh = 2, 3, 7, 6, 4, 3
    X = ts.placeholder((n, c, h, w_), name="X")
    W = ts.placeholder((f, c, kh, kh), name="W")
    rc = ts.reduce_axis((0, c), name="rc")
    ry = ts.reduce_axis((0, kh), name="ry")
    rx = ts.reduce_axis((0, kh), name="rx")
    oh, ow = h - kh + 1, w_ - kh + 1
    Y = ts.compute((n, f, oh, ow), lambda b, k, i, j: ts.sum(X[b, rc, i + ry, j + rx] * W[k, rc, ry, rx],
                                                               axis=[rc, ry, rx]), name="Y")
    R = ts.compute(Y.shape, lambda b, k, i, j: ts.maximum(Y[b, k, i, j], 0.0), name="R")
    xv = rng.standard_normal((n, c, h, w_)).astype("float32")
    wv = rng.standard_normal((f, c, kh, kh)).astype("float32")
    hv = rng.standard_normal((n, f, oh, ow)).astype("float32")
    head = ts.placeholder(R.shape, name="head")
    ours = _run(R, [X, W], [X, W], [xv, wv], head=head, head_value=hv)
    theirs = _torch_grads(lambda a, b: torch.relu(torch.nn.functional.conv2d(a, b)), [xv, wv], [0, 1], hv)
    _check(ours, theirs, rtol=1e-3, atol=1e-4)


def test_strided_and_downsampling_reads_invert_exactly():
    n = 17
    x = ts.placeholder((n,), name="x")
    r = ts.reduce_axis((0, 3), name="r")
    y = ts.compute(((n - 3) // 2 + 1,), lambda i: ts.sum(x[2 * i + r] * (r + 1).astype("float32"), axis=r), name="y")
    d = ts.compute((n // 2 + 1,), lambda i: x[2 * i] * x[2 * i], name="d")
    xv = rng.standard_normal(n).astype("float32")
    (gy,) = _run(y, [x], [x], [xv])
    (gd,) = _run(d, [x], [x], [xv])
    ref_y = np.zeros(n)
    for i in range((n - 3) // 2 + 1):
        for r_ in range(3):
            ref_y[2 * i + r_] += r_ + 1
    ref_d = np.zeros(n)
    ref_d[::2] = 2 * xv[::2]
    np.testing.assert_allclose(gy, ref_y, rtol=1e-6)
    np.testing.assert_allclose(gd, ref_d, rtol=1e-5)


def test_matmul_transpose_broadcast_and_diagonal():
    m, k, n = 5, 7, 4
    A = ts.placeholder((m, k), name="A")
    B = ts.placeholder((k, n), name="B")
    bias = ts.placeholder((n,), name="bias")
    rk = ts.reduce_axis((0, k), name="rk")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, rk] * B[rk, j], axis=rk) , name="C")
    D = ts.compute((n, m), lambda j, i: ts.sigmoid(C[i, j] + bias[j]), name="D")      # transpose + broadcast
    av, bv, cv = (rng.standard_normal(s).astype("float32") for s in ((m, k), (k, n), (n,)))
    ours = _run(D, [A, B, bias], [A, B, bias], [av, bv, cv])
    theirs = _torch_grads(lambda a, b, c: torch.sigmoid(a @ b + c).T, [av, bv, cv], [0, 1, 2])
    _check(ours, theirs)
    S = ts.placeholder((m, m), name="S")
    tr = ts.compute((m,), lambda i: S[i, i] * 3.0, name="tr")
    sv = rng.standard_normal((m, m)).astype("float32")
    (gs,) = _run(tr, [S], [S], [sv])
    np.testing.assert_allclose(gs, 3.0 * np.eye(m), rtol=1e-6)


def test_softmax_and_log_sum_exp_chain():
    m, n = 3, 8
    X = ts.placeholder((m, n), name="X")
    j = ts.reduce_axis((0, n), name="j")
    mx = ts.compute((m,), lambda i: ts.max(X[i, j], axis=j), name="mx")
    e = ts.compute((m, n), lambda i, c: ts.exp(X[i, c] - mx[i]), name="e")
    j2 = ts.reduce_axis((0, n), name="j2")
    s = ts.compute((m,), lambda i: ts.sum(e[i, j2], axis=j2), name="s")
    p = ts.compute((m, n), lambda i, c: e[i, c] / s[i], name="p")
    W = ts.placeholder((m, n), name="Wt")
    loss = ts.compute((m, n), lambda i, c: p[i, c] * W[i, c], name="loss")
    xv, wv = rng.standard_normal((m, n)).astype("float32"), rng.standard_normal((m, n)).astype("float32")
    (gx,) = _run(loss, [X], [X, W], [xv, wv])
    (tx,) = _torch_grads(lambda a, b: torch.softmax(a, dim=1) * b, [xv, wv], [0])
    np.testing.assert_allclose(gx, tx, rtol=1e-4, atol=1e-5)


def test_max_pool_shares_the_gradient_between_ties_as_amax():
    X = ts.placeholder((2, 6), name="X")
    r = ts.reduce_axis((0, 2), name="r")
    P = ts.compute((2, 3), lambda i, j: ts.max(X[i, 2 * j + r], axis=r), name="P")
    xv = np.array([[1, 3, 2, 2, 5, 4], [0, 0, -1, 7, 7, 7]], "float32")
    (gx,) = _run(P, [X], [X], [xv])
    (tx,) = _torch_grads(lambda a: a.reshape(2, 3, 2).amax(dim=2), [xv], [0])
    np.testing.assert_allclose(gx, tx, rtol=1e-6)


def test_reduction_with_where_and_init():
    n = 9
    x = ts.placeholder((n,), name="x")
    b = ts.placeholder((n,), name="b")
    r = ts.reduce_axis((0, n), name="r")
    tri = ts.compute((n,), lambda i: ts.sum(x[r] * x[r], axis=r, where=r <= i, init=b[i] * 2.0), name="tri")
    xv, bv = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    gx, gb = _run(tri, [x, b], [x, b], [xv, bv])
    theirs = _torch_grads(lambda a, c: torch.cumsum(a * a, 0) + 2 * c, [xv, bv], [0, 1])
    _check([gx, gb], theirs)


def test_gather_and_boundary_reads_are_scattered_back():
    n, m = 8, 6
    x = ts.placeholder((n,), name="x")
    idx = ts.placeholder((m,), dtype="int32", name="idx")
    g = ts.compute((m,), lambda i: x[idx[i]] * x[idx[i]], name="g")
    xv = rng.standard_normal(n).astype("float32")
    iv = np.array([1, 1, 5, 0, 7, 1], "int32")
    (gx,) = _run(g, [x], [x, idx], [xv, iv])
    (tx,) = _torch_grads(lambda a: a[torch.tensor(iv, dtype=torch.long)] ** 2, [xv], [0])
    np.testing.assert_allclose(gx, tx, rtol=1e-5)
    edge = ts.boundary.repeat_edge(x)
    blur = ts.compute((n,), lambda i: edge[i - 1] + 2.0 * edge[i] + edge[i + 1], name="blur")
    (gb,) = _run(blur, [x], [x], [xv])
    ref = np.full(n, 4.0)
    ref[0] = ref[-1] = 4.0   # the clamped reads flow back into the edge pixels: 1 + 2 + 1 there too
    counts = np.zeros(n)
    for i in range(n):
        for off, wgt in ((-1, 1.0), (0, 2.0), (1, 1.0)):
            counts[min(max(i + off, 0), n - 1)] += wgt
    np.testing.assert_allclose(gb, counts, rtol=1e-6)


def test_symbolic_sizes():
    n = ts.var("n")
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n - 1,), lambda i: x[i] * x[i + 1], name="y")
    (gx_t,) = ts.gradient(y, [x])
    f = ts.build(ts.create_schedule(gx_t.op), [x, gx_t])
    for size in (2, 5, 11):
        xv = rng.standard_normal(size).astype("float32")
        out = np.full(size, np.nan, "float32")
        f(xv, out)
        (tx,) = _torch_grads(lambda a: a[:-1] * a[1:], [xv], [0])
        np.testing.assert_allclose(out, tx, rtol=1e-5, atol=1e-6)


def test_gradients_are_scheduled_and_fused_like_any_stage():
    n, k = 64, 5
    x = ts.placeholder((n + k - 1,), name="x")
    w = ts.placeholder((k,), name="w")
    r = ts.reduce_axis((0, k), name="r")
    y = ts.compute((n,), lambda i: ts.sum(x[i + r] * w[r], axis=r), name="y")
    z = ts.compute((n,), lambda i: ts.sigmoid(y[i]), name="z")
    xv, wv = rng.standard_normal(n + k - 1).astype("float32"), rng.standard_normal(k).astype("float32")
    (ref,) = _torch_grads(lambda a, b: torch.sigmoid(torch.nn.functional.conv1d(a[None, None], b[None, None])),
                          [xv, wv], [0])

    def schedule(s, grads):
        (dx,) = grads
        dz = dx.op.input_tensors
        xo, xi = s[dx].split(dx.op.axis[0], factor=8)
        s[dx].vectorize(xi)
        s[dx].parallel(xo)
        for t in dz:
            if t.name in ("y.grad", "z.grad"):
                s[t].compute_inline()

    ours = _run(z, [x], [x, w], [xv, wv], schedule=schedule)
    np.testing.assert_allclose(ours[0], ref, rtol=1e-4, atol=1e-6)
    # forward and gradient in one kernel
    (dx,) = ts.gradient(z, [x])
    s = ts.create_schedule([z.op, dx.op])
    f = ts.build(s, [x, w, z, dx])
    zo, do = np.full(n, np.nan, "float32"), np.full(n + k - 1, np.nan, "float32")
    f(xv, wv, zo, do)
    np.testing.assert_allclose(do, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(zo, torch.sigmoid(torch.nn.functional.conv1d(
        torch.tensor(xv)[None, None], torch.tensor(wv)[None, None]))[0, 0].numpy(), rtol=1e-5)


def test_auto_schedule_takes_gradients():
    n, k = 96, 3
    X = ts.placeholder((n + k - 1, n + k - 1), name="X")
    W = ts.placeholder((k, k), name="W")
    ry, rx = ts.reduce_axis((0, k), name="ry"), ts.reduce_axis((0, k), name="rx")
    Y = ts.compute((n, n), lambda i, j: ts.sum(X[i + ry, j + rx] * W[ry, rx], axis=[ry, rx]), name="Y")
    dW, dX = ts.gradient(Y, [W, X])
    s = ts.auto_schedule([dW, dX])
    f = ts.build(s, [X, W, dW, dX])
    xv, wv = rng.standard_normal((n + k - 1,) * 2).astype("float32"), rng.standard_normal((k, k)).astype("float32")
    gw, gx = np.full((k, k), np.nan, "float32"), np.full((n + k - 1,) * 2, np.nan, "float32")
    f(xv, wv, gw, gx)
    tw, tx = _torch_grads(lambda a, b: torch.nn.functional.conv2d(a[None, None], b[None, None]), [wv, xv][::-1],
                          [1, 0])
    np.testing.assert_allclose(gw, tw, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gx, tx, rtol=1e-4, atol=1e-4)


_UNARY = {
    "exp": (ts.exp, torch.exp), "tanh": (ts.tanh, torch.tanh), "sigmoid": (ts.sigmoid, torch.sigmoid),
    "sin": (ts.sin, torch.sin), "cos": (ts.cos, torch.cos), "atan": (ts.atan, torch.atan),
    "sinh": (ts.sinh, torch.sinh), "cosh": (ts.cosh, torch.cosh), "abs": (ts.abs, torch.abs),
    "square": (lambda v: v * v, lambda v: v * v), "relu": (lambda v: ts.maximum(v, 0.0), torch.relu),
    "log1p_abs": (lambda v: ts.log(ts.abs(v) + 1.0), lambda v: torch.log(torch.abs(v) + 1.0)),
    "sqrt": (lambda v: ts.sqrt(v * v + 1.0), lambda v: torch.sqrt(v * v + 1.0)),
    "recip": (lambda v: 1.0 / (v * v + 1.0), lambda v: 1.0 / (v * v + 1.0)),
    "pow": (lambda v: ts.power(v * v + 1.0, 1.5), lambda v: torch.pow(v * v + 1.0, 1.5)),
    "floor": (lambda v: ts.floor(v) * v, lambda v: torch.floor(v) * v),
}


# chains of these stay finite; floor is left out of chains: composed, it lands on its jumps (a tanh that
# saturates to 1.0 in one library and to 0.99999994 in the other), where one rounding flips the subgradient
_BOUNDED = sorted(set(_UNARY) - {"exp", "sinh", "cosh", "square", "pow", "floor"})


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_elementwise_derivatives_in_float64_match_autograd_and_finite_differences(name):
    f_ts, f_t = _UNARY[name]
    n = 16
    x = ts.placeholder((n,), dtype="float64", name="x")
    y = ts.compute((n,), lambda i: f_ts(x[i]), name="y")
    (dx,) = ts.gradient(y, [x])
    f = ts.build(ts.create_schedule(dx.op), [x, dx])
    fy = ts.build(ts.create_schedule(y.op), [x, y])
    xv = np.linspace(-1.7, 1.9, n) + 0.013        # away from the kinks of abs, relu and floor
    out = np.full(n, np.nan)
    f(xv, out)
    (ref,) = _torch_grads(lambda a: f_t(a), [xv], [0])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    h = 1e-6
    up, down = np.empty(n), np.empty(n)
    fy(xv + h, up)
    fy(xv - h, down)
    np.testing.assert_allclose(out, (up - down) / (2 * h), rtol=1e-6, atol=1e-6)


@st.composite
def _pipelines(draw):
    """A random chain of 1-4 stages: each applies a random function to a shifted, scaled read of the last
    stage or of a second input, or reduces a window of it."""
    depth = draw(st.integers(1, 4))
    steps = []
    for _ in range(depth):
        kind = draw(st.sampled_from(["unary", "binary", "window", "mix"]))
        steps.append((kind, draw(st.sampled_from(_BOUNDED)), draw(st.integers(0, 2))))
    return steps, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pipelines())
def test_random_pipelines_match_autograd(drawn):
    steps, seed = drawn
    n = 12 + 2 * len(steps) * 2
    x = ts.placeholder((n,), name="x")
    v = ts.placeholder((n,), name="v")
    cur, size = x, n
    torch_steps = []
    for k, (kind, fname, shift) in enumerate(steps):
        f_ts, f_t = _UNARY[fname]
        prev, prev_size = cur, size
        if kind == "unary":
            cur = ts.compute((size,), lambda i, p=prev, f=f_ts: f(p[i]), name=f"s{k}")
            torch_steps.append(lambda a, b, f=f_t: f(a))
        elif kind == "binary":
            size = prev_size - shift
            cur = ts.compute((size,), lambda i, p=prev, f=f_ts, s=shift: f(p[i + s]) * v[i], name=f"s{k}")
            torch_steps.append(lambda a, b, f=f_t, s=shift, m=size: f(a[s:s + m]) * b[:m])
        elif kind == "window":
            size = prev_size - 2
            r = ts.reduce_axis((0, 3), name=f"r{k}")
            cur = ts.compute((size,), lambda i, p=prev, f=f_ts, r=r: ts.sum(f(p[i + r]) * v[r], axis=r), name=f"s{k}")
            torch_steps.append(lambda a, b, f=f_t, m=size: sum(f(a[t:t + m]) * b[t] for t in range(3)))
        else:
            cur = ts.compute((size,), lambda i, p=prev, f=f_ts: f(p[i]) + p[i] * v[i], name=f"s{k}")
            torch_steps.append(lambda a, b, f=f_t, m=size: f(a) + a * b[:m])
    draw = np.random.default_rng(seed)
    xv = draw.standard_normal(n).astype("float32") * 0.8
    vv = draw.standard_normal(n).astype("float32")

    def forward(a, b):
        for step in torch_steps:
            a = step(a, b)
        return a

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # v unused by a chain of unary stages: a zero gradient
        ours = _run(cur, [x, v], [x, v], [xv, vv])
    theirs = _torch_grads(forward, [xv, vv], [0, 1])
    scale = max(1.0, max(float(np.abs(t).max()) for t in theirs))
    _check(ours, theirs, rtol=1e-3, atol=1e-4 * scale)


def test_errors_name_what_is_wrong():
    x = ts.placeholder((4,), name="x")
    i32 = ts.placeholder((4,), dtype="int32", name="counts")
    y = ts.compute((4,), lambda i: x[i] * i32[i].astype("float32"), name="y")
    with pytest.raises(ts.GradientError, match="counts is int32"):
        ts.gradient(y, [i32])
    with pytest.raises(ts.GradientError, match="head h has shape"):
        ts.gradient(y, [x], head=ts.placeholder((5,), name="h"))
    r = ts.reduce_axis((0, 4), name="r")
    idx, val = ts.compute((1,), lambda i: ts.argmax(x[r], axis=r), name="am")
    with pytest.raises(ts.GradientError, match="am"):
        ts.gradient(val, [x])
    r2 = ts.reduce_axis((0, 4), name="r2")
    pr = ts.compute((1,), lambda i: ts.prod(x[r2], axis=r2), name="pr")
    with pytest.raises(ts.GradientError, match="stage pr: a prod reduction"):
        ts.gradient(pr, [x])
    other = ts.placeholder((3,), name="other")
    with pytest.warns(UserWarning, match="does not depend on other"):
        (g,) = ts.gradient(y, [other])
    f = ts.build(ts.create_schedule(g.op), [g])
    np.testing.assert_array_equal(f(), np.zeros(3, "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts.gradient(y, [x])


def test_an_update_definition_is_refused_by_name():
    g = ts.placeholder((6,), name="g")
    f = ts.Func((6,), name="f")
    x, = f.axis
    f[x] = g[x] * 2.0
    r = ts.reduce_axis((1, 6), "r")
    f[r] += f[r - 1]
    with pytest.raises(ts.GradientError, match=r"stage f.update0 is an update definition of f: ts.gradient does "
                                               r"not differentiate updates in place yet"):
        ts.gradient(f.tensor, [g])


def test_a_sum_scatter_passes_each_point_the_adjoint_of_its_element():
    n, bins = 40, 6
    x, w = ts.placeholder((n,), "float64", name="x"), ts.placeholder((n,), "float64", name="w")
    idx = ts.placeholder((n,), "int32", name="idx")
    r = ts.reduce_axis((0, n), name="r")
    hist = ts.scatter_add((bins,), (idx[r],), w[r] * x[r] * x[r], [r], where=x[r] > -1.0, name="hist")
    out = ts.compute((bins,), lambda b: ts.tanh(hist[b]), name="out")
    grads = ts.gradient(out, [x, w])
    s = ts.create_schedule([g.op for g in grads])
    assert "scatter" not in str(ts.lower(s, [x, w, idx] + grads)).split("produce hist.grad")[1]   # gathers
    rng = np.random.default_rng(7)
    values = [rng.standard_normal(n), rng.standard_normal(n), rng.integers(0, bins, n).astype("int32")]
    got = [np.zeros(n), np.zeros(n)]
    ts.build(s, [x, w, idx] + grads)(*values, *got)
    xt, wt = (torch.tensor(v, requires_grad=True) for v in values[:2])
    kept = (xt > -1.0).double()
    added = torch.zeros(bins, dtype=torch.float64).index_add(0, torch.tensor(values[2]).long(), wt * xt * xt * kept)
    torch.tanh(added).sum().backward()
    np.testing.assert_allclose(got[0], xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[1], wt.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_a_max_scatter_is_refused_by_name():
    x, idx = ts.placeholder((5,), name="x"), ts.placeholder((5,), "int32", name="idx")
    r = ts.reduce_axis((0, 5), name="r")
    peak = ts.scatter((3,), (idx[r],), x[r], [r], "max", name="peak")
    with pytest.raises(ts.GradientError, match="stage peak is a max scatter: ts.gradient differentiates sum"):
        ts.gradient(peak, [x])


def test_a_pipeline_with_inferred_regions_differentiates_its_rebuilt_stages():
    """Halide's blur declared without intermediate shapes (repeat-edge input, 3x3 box): its gradient with
    respect to the input is torch's of the same padded blur."""
    H, W = 6, 7
    A = ts.placeholder((H, W), name="A")
    clamped = ts.compute(None, lambda y, x: A[ts.clamp(y, 0, H - 1), ts.clamp(x, 0, W - 1)], name="clamped")
    bx = ts.compute(None, lambda y, x: clamped[y, x - 1] + 2.0 * clamped[y, x] + clamped[y, x + 1], name="bx")
    by = ts.compute((H, W), lambda y, x: bx[y - 1, x] * bx[y + 1, x], name="by")
    a = rng.standard_normal((H, W)).astype(np.float32)

    def blur(t):
        p = torch.nn.functional.pad(t[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
        b = p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]
        return b[:-2] * b[2:]
    _check(_run(by, [A], [A], [a]), _torch_grads(blur, [a], [0]))
