"""G.gradient against torch.autograd: an MLP with a squared-error loss, a small CNN with softmax
cross-entropy, random graphs of elementwise, broadcast and reduction ops drawn by hypothesis, and the
errors (integer values, unknown parameters, heads of the wrong type)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tesched import graph as G
from tesched.errors import GradientError

torch = pytest.importorskip("torch")
F = torch.nn.functional
RTOL, ATOL = 2e-4, 2e-5


def _torch_grads(fn, values, wrt):
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in wrt) for k, v in values.items()}
    loss = fn(t)
    loss.backward()
    return loss.item(), [t[k].grad.numpy() for k in wrt]


def _check(out, loss, grads):
    np.testing.assert_allclose(out[0], loss, rtol=RTOL, atol=ATOL)
    assert len(out) == len(grads) + 1
    for ours, theirs in zip(out[1:], grads):
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL * max(1.0, np.abs(theirs).max()))


def _values(rng, shapes):
    return {k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()}


def test_mlp_squared_error_gradients_match_torch():
    b, i, h, o = 5, 7, 6, 3
    shapes = {"x": (b, i), "y": (b, o), "w1": (h, i), "b1": (h,), "w2": (o, h), "b2": (o,)}
    v = {k: G.var(k, s) for k, s in shapes.items()}
    z = G.nn.dense(G.nn.relu(G.nn.dense(v["x"], v["w1"], v["b1"])), v["w2"], v["b2"])
    d = G.subtract(z, v["y"])
    f = G.Function(list(v.values()), G.mean(G.multiply(d, d)))
    wrt = ["x", "w1", "b1", "w2", "b2"]
    exe = G.build(G.gradient(f, wrt))
    rng = np.random.default_rng(1)
    for _ in range(2):                                  # one build, two draws
        values = _values(rng, shapes)

        def reference(t):
            hid = torch.relu(t["x"] @ t["w1"].T + t["b1"])
            return ((hid @ t["w2"].T + t["b2"] - t["y"]) ** 2).mean()
        _check(exe(**values), *_torch_grads(reference, values, wrt))


def test_cnn_softmax_cross_entropy_gradients_match_torch():
    n, c, size, k, classes = 2, 3, 6, 4, 5
    shapes = {"x": (n, c, size, size), "wc": (k, c, 3, 3), "bc": (k,), "wd": (classes, k * 9), "bd": (classes,)}
    v = {name: G.var(name, s) for name, s in shapes.items()}
    onehot = G.var("onehot", (n, classes))
    conv = G.nn.relu(G.nn.bias_add(G.nn.conv2d(v["x"], v["wc"], padding=1), v["bc"]))
    pooled = G.nn.max_pool2d(conv, 2)
    logits = G.nn.dense(G.reshape(pooled, (n, k * 9)), v["wd"], v["bd"])
    picked = G.sum(G.multiply(G.log(G.nn.softmax(logits)), onehot), axis=1)
    f = G.Function([*v.values(), onehot], G.negative(G.mean(picked)))
    wrt = ["x", "wc", "bc", "wd", "bd"]
    exe = G.build(G.gradient(f, wrt))
    values = _values(np.random.default_rng(2), shapes)
    values["wd"] *= 0.2                             # logits of a few units: log(softmax) stays finite in float32
    labels = np.array([1, 4])
    out = exe(**values, onehot=np.eye(classes, dtype="float32")[labels])

    def reference(t):
        h = F.max_pool2d(torch.relu(F.conv2d(t["x"], t["wc"], t["bc"], padding=1)), 2)
        return F.cross_entropy(h.reshape(n, -1) @ t["wd"].T + t["bd"], torch.tensor(labels))
    _check(out, *_torch_grads(reference, values, wrt))


def test_cnn_with_batch_norm_in_training_mode_gradients_match_torch():
    n, c, size, k, classes = 3, 2, 6, 4, 5
    shapes = {"x": (n, c, size, size), "wc": (k, c, 3, 3), "gamma": (k,), "beta": (k,), "wd": (classes, k * 9)}
    v = {name: G.var(name, s) for name, s in shapes.items()}
    onehot = G.var("onehot", (n, classes))
    normed = G.nn.batch_norm_train(G.nn.conv2d(v["x"], v["wc"], padding=1), v["gamma"], v["beta"], epsilon=1e-3)
    logits = G.nn.dense(G.reshape(G.nn.max_pool2d(G.nn.relu(normed), 2), (n, k * 9)), v["wd"])
    picked = G.sum(G.multiply(G.log(G.nn.softmax(logits)), onehot), axis=1)
    f = G.Function([*v.values(), onehot], G.negative(G.mean(picked)))
    wrt = ["x", "wc", "gamma", "beta", "wd"]
    exe = G.build(G.gradient(f, wrt))
    values = _values(np.random.default_rng(5), shapes)
    values["wd"] *= 0.2
    labels = np.array([1, 4, 0])
    out = exe(**values, onehot=np.eye(classes, dtype="float32")[labels])

    def reference(t):
        bn = F.batch_norm(F.conv2d(t["x"], t["wc"], padding=1), None, None, t["gamma"], t["beta"], training=True,
                          eps=1e-3)
        return F.cross_entropy(F.max_pool2d(torch.relu(bn), 2).reshape(n, -1) @ t["wd"].T, torch.tensor(labels))
    _check(out, *_torch_grads(reference, values, wrt))


def test_fan_out_and_repeated_arguments_add_their_adjoints():
    x, w = G.var("x", (3, 4)), G.var("w", (4,))
    y = G.multiply(x, x)                             # one value read twice by one call
    f = G.Function([x, w], G.sum(G.add(G.multiply(y, w), G.tanh(y))))
    values = _values(np.random.default_rng(3), {"x": (3, 4), "w": (4,)})
    out = G.build(G.gradient(f)).__call__(**values)
    _check(out, *_torch_grads(lambda t: ((t["x"] * t["x"]) * t["w"] + torch.tanh(t["x"] * t["x"])).sum(),
                              values, ["x", "w"]))


def test_head_is_the_adjoint_of_a_non_scalar_output():
    x, head = G.var("x", (2, 3)), G.var("head", (2,))
    f = G.Function([x], G.max(G.exp(x), axis=1))
    g = G.gradient(f, ["x"], head=head)
    assert [p.name for p in g.params] == ["x", "head"]
    rng = np.random.default_rng(4)
    xv, hv = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal(2).astype("float32")
    out = G.build(g)(xv, hv)
    t = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    y = torch.exp(t).amax(dim=1)
    y.backward(torch.tensor(hv, dtype=torch.float64))
    np.testing.assert_allclose(out[0], y.detach().numpy(), rtol=RTOL)
    np.testing.assert_allclose(out[1], t.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_gather_adjoint_scatters_into_the_table():
    table, ids = G.var("table", (5, 3)), G.var("ids", (4,), "int32")
    f = G.Function([table, ids], G.sum(G.tanh(G.take(table, ids, axis=0))))
    tv = np.random.default_rng(5).standard_normal((5, 3)).astype("float32")
    iv = np.array([0, 3, 3, 1], "int32")
    out = G.build(G.gradient(f, ["table"]))(tv, iv)
    _check(out, *_torch_grads(lambda t: torch.tanh(t["table"][torch.tensor(iv, dtype=torch.long)]).sum(),
                              {"table": tv}, ["table"]))


# random graphs ------------------------------------------------------------------------------------

_UNARY = {
    "tanh": (G.tanh, torch.tanh), "sigmoid": (G.sigmoid, torch.sigmoid), "relu": (G.nn.relu, torch.relu),
    "negative": (G.negative, torch.neg), "abs": (G.abs, torch.abs),
    "exp_tanh": (lambda a: G.exp(G.tanh(a)), lambda a: torch.exp(torch.tanh(a))),
    "log1p_sq": (lambda a: G.log(G.add(G.multiply(a, a), 1.0)), lambda a: torch.log(a * a + 1)),
    "sqrt1p_sq": (lambda a: G.sqrt(G.add(G.multiply(a, a), 1.0)), lambda a: torch.sqrt(a * a + 1)),
}
_BINARY = {
    "add": (G.add, torch.add), "subtract": (G.subtract, torch.sub), "multiply": (G.multiply, torch.mul),
    "divide_pos": (lambda a, b: G.divide(a, G.add(G.multiply(b, b), 1.0)), lambda a, b: a / (b * b + 1)),
}
_SHAPES = {"a": (2, 3), "b": (3,), "c": (2, 1)}


@st.composite
def _programs(draw):
    """A list of steps: ("unary", name, k), ("binary", name, k, l), ("reduce", kind, k, axis)."""
    steps = []
    count = len(_SHAPES)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce"]))
        k = draw(st.integers(0, count - 1))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(_UNARY))), k))
        elif kind == "binary":
            steps.append(("binary", draw(st.sampled_from(sorted(_BINARY))), k, draw(st.integers(0, count - 1))))
        else:
            steps.append(("reduce", draw(st.sampled_from(["sum", "mean", "max"])), k, draw(st.sampled_from([0, -1]))))
        count += 1
    return steps


def _run_program(steps, inputs, graph):
    values = list(inputs)
    for step in steps:
        if step[0] == "unary":
            values.append((_UNARY[step[1]][0 if graph else 1])(values[step[2]]))
        elif step[0] == "binary":
            values.append((_BINARY[step[1]][0 if graph else 1])(values[step[2]], values[step[3]]))
        else:
            v = values[step[2]]
            if graph:
                values.append(getattr(G, step[1])(v, axis=step[3] % len(v.checked_type.shape), keepdims=True))
            else:
                fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax}[step[1]]
                values.append(fn(v, dim=step[3] % v.dim(), keepdim=True))
    last = values[-1]
    return G.sum(last) if graph else last.sum()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs(), st.sampled_from(["float32", "float64"]), st.integers(0, 2**31 - 1))
def test_random_graphs_match_autograd(steps, dtype, seed):
    names = list(_SHAPES)
    vars_ = [G.var(n, _SHAPES[n], dtype) for n in names]
    f = G.Function(vars_, _run_program(steps, vars_, graph=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # an input the program does not read: zeros
        g = G.gradient(f)
    values = {k: v.astype(dtype) for k, v in _values(np.random.default_rng(seed), _SHAPES).items()}
    out = G.build(g)(**values)
    t = [torch.tensor(values[n], dtype=torch.float64, requires_grad=True) for n in names]
    loss = _run_program(steps, t, graph=False)
    loss.backward()
    want = [np.zeros(_SHAPES[n]) if x.grad is None else x.grad.numpy() for n, x in zip(names, t)]
    if dtype == "float32":
        _check(out, loss.item(), want)
    else:
        for ours, theirs in zip(out, [loss.item(), *want]):
            assert ours.dtype == np.float64
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_random_graph_gradients_agree_with_interpret():
    x, w = G.var("x", (2, 3)), G.var("w", (3,))
    f = G.Function([x, w], G.mean(G.sigmoid(G.divide(x, G.add(G.multiply(w, w), 1.0)))))
    g = G.gradient(f)
    values = _values(np.random.default_rng(6), {"x": (2, 3), "w": (3,)})
    for ours, ref in zip(G.build(g)(**values), G.interpret(g, **values)):
        np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)


# errors --------------------------------------------------------------------------------------------

def test_integer_values_on_the_path_are_named():
    x = G.var("x", (4,))
    f = G.Function([x], G.sum(G.cast(G.cast(x, "int32"), "float32")))
    with pytest.raises(GradientError, match=r"through cast, whose int32 result"):
        G.gradient(f)


def test_a_condition_passes_no_gradient():
    x = G.var("x", (5,))
    f = G.Function([x], G.sum(G.where(G.greater(x, G.const(0.0)), x, G.multiply(x, 0.5))))
    xv = np.array([-2, -0.5, 0.25, 1, 3], "float32")
    out = G.build(G.gradient(f))(xv)
    np.testing.assert_allclose(out[1], np.where(xv > 0, 1.0, 0.5))


def test_bad_parameters_and_heads_are_named():
    x, n = G.var("x", (3,)), G.var("n", (3,), "int32")
    f = G.Function([x, n], G.sum(G.multiply(x, G.cast(n, "float32"))))
    with pytest.raises(GradientError, match="'y' is not a parameter"):
        G.gradient(f, ["y"])
    with pytest.raises(GradientError, match="parameter n is int32"):
        G.gradient(f, ["n"])
    with pytest.raises(GradientError, match="head must be a graph value of the output's type"):
        G.gradient(f, ["x"], head=G.var("h", (3,)))
    with pytest.raises(GradientError, match="one floating tensor"):
        G.gradient(G.Function([n], G.sum(n)))
    with pytest.raises(TypeError, match="expected a graph Function"):
        G.gradient(x)


def test_auxiliary_outputs_pass_through_after_the_gradients():
    x, c = G.var("x", (3,)), G.var("c", (3,))
    aux = G.add(G.multiply(c, G.const(0.9)), G.multiply(x, G.const(0.1)))
    f = G.Function([x, c], G.Tuple([G.sum(G.multiply(x, x)), aux, G.max(x)]))
    with pytest.raises(GradientError, match="must be one floating tensor \\(a tuple whose first field is the loss: "
                                            "pass has_aux=True\\)"):
        G.gradient(f, ["x"])
    xv, cv = np.array([1.0, -2.0, 3.0], "float32"), np.array([4.0, 5.0, 6.0], "float32")
    loss, grad, new_c, top = G.build(G.gradient(f, ["x"], has_aux=True))(xv, cv)
    np.testing.assert_allclose(loss, 14.0, rtol=1e-6)
    np.testing.assert_allclose(grad, 2 * xv, rtol=1e-6)
    np.testing.assert_allclose(new_c, 0.9 * cv + 0.1 * xv, rtol=1e-6)
    np.testing.assert_allclose(top, 3.0)
    with pytest.raises(GradientError, match="has_aux=True needs the output of .* to be a tuple"):
        G.gradient(G.Function([x], G.sum(x)), has_aux=True)
    with pytest.raises(GradientError, match="the first output of .* \\(the loss\\) must be one floating tensor"):
        G.gradient(G.Function([x], G.Tuple([G.cast(x, "int32"), x])), has_aux=True)


def test_a_parameter_the_loss_does_not_read_gets_zeros_and_a_warning():
    x, unused = G.var("x", (3,)), G.var("unused", (2, 2))
    f = G.Function([x, unused], G.sum(G.exp(x)))
    with pytest.warns(UserWarning, match="does not depend on unused"):
        g = G.gradient(f)
    xv = np.array([0.0, 1.0, -1.0], "float32")
    out = G.build(g)(xv, np.ones((2, 2), "float32"))
    np.testing.assert_allclose(out[1], np.exp(xv), rtol=1e-6)
    np.testing.assert_array_equal(out[2], np.zeros((2, 2)))
