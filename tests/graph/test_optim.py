"""Training steps (G.optim) against torch.optim on the same MLP and data: SGD, SGD with momentum and Adam,
parameters compared after several steps; the updates fuse into the weight gradients' kernels."""
import numpy as np
import pytest

from tesched import graph as G

torch = pytest.importorskip("torch")

B, I, H, O = 8, 5, 6, 3
NAMES = ["w1", "b1", "w2", "b2"]
STEPS = 4


def _mlp_loss():
    x, y = G.var("x", (B, I)), G.var("y", (B, O))
    w1, b1, w2, b2 = G.var("w1", (H, I)), G.var("b1", (H,)), G.var("w2", (O, H)), G.var("b2", (O,))
    d = G.subtract(G.nn.dense(G.nn.relu(G.nn.dense(x, w1, b1)), w2, b2), y)
    return G.Function([x, y, w1, b1, w2, b2], G.mean(G.multiply(d, d)))


def _torch_mlp(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(I, H), torch.nn.ReLU(), torch.nn.Linear(H, O))
    return model, [model[0].weight, model[0].bias, model[2].weight, model[2].bias]


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_steps_match_torch_optim(kind):
    model, tparams = _torch_mlp(3)
    params = [p.detach().numpy().copy() for p in tparams]
    if kind == "sgd":
        step, opt, state = G.optim.sgd(_mlp_loss(), NAMES, lr=0.1), torch.optim.SGD(model.parameters(), lr=0.1), []
    elif kind == "momentum":
        step = G.optim.sgd(_mlp_loss(), NAMES, lr=0.1, momentum=0.9)
        opt, state = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), [np.zeros_like(p) for p in params]
    else:
        step = G.optim.adam(_mlp_loss(), NAMES, lr=0.01)
        opt, state = torch.optim.Adam(model.parameters(), lr=0.01), [np.zeros_like(p) for p in params * 2]
    exe = G.build(step)
    rng = np.random.default_rng(4)
    for k in range(STEPS):
        x, y = rng.standard_normal((B, I)).astype("float32"), rng.standard_normal((B, O)).astype("float32")
        counter = [np.float32(k + 1)] if kind == "adam" else []
        loss, *rest = exe(x, y, *params, *state, *counter)
        params, state = rest[:len(NAMES)], rest[len(NAMES):]
        opt.zero_grad()
        reference = ((model(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        reference.backward()
        opt.step()
        np.testing.assert_allclose(loss, reference.item(), rtol=1e-5)
    for ours, theirs in zip(params, tparams):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_sgd_update_fuses_into_the_weight_gradient():
    exe = G.build(G.optim.sgd(_mlp_loss(), NAMES, lr=0.1))
    assert any("nn_dense_grad_multiply_subtract" in group.name for group in exe.kernels)


def test_state_names_may_not_repeat_parameters():
    x, w, w_m = G.var("x", (2,)), G.var("w", (2,)), G.var("w_m", (2,))
    f = G.Function([x, w, w_m], G.sum(G.multiply(G.multiply(x, w), w_m)))
    with pytest.raises(ValueError, match="w_m"):
        G.optim.adam(f, ["w"])
