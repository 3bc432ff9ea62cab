"""``from_torch``: the inputs it accepts, the explanation when torch.export cannot trace a model, and
random stacks of layers imported and compared with PyTorch (hypothesis)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tesched import graph as G
from tesched.frontend import FrontendError, from_torch

from .helpers import TOLERANCE, Lambda, max_relative_error, rand, torch


def test_a_tensor_a_list_or_numpy_arrays_as_example_inputs():
    model = Lambda(lambda x, y: x * y + 1)
    x, y = rand(2, 3), rand(3)
    for inputs in ((x, y), [x, y], (x.numpy(), y.numpy())):
        fn = from_torch(model, inputs)
        np.testing.assert_allclose(G.interpret(fn, x.numpy(), y.numpy()), (x * y + 1).numpy(), rtol=1e-6)
    assert from_torch(torch.nn.ReLU(), x).params[0].checked_type.shape == (2, 3)


def test_bad_arguments_raise_type_errors():
    with pytest.raises(TypeError, match=r"expected a torch.nn.Module, got function"):
        from_torch(lambda x: x, (rand(2),))
    with pytest.raises(TypeError, match=r"example input 1 is a str"):
        from_torch(torch.nn.ReLU(), (rand(2), "x"))


def test_data_dependent_control_flow_is_explained():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(FrontendError, match=r"could not trace Branchy: it has data-dependent control flow .*"
                                            r"straight-line graphs") as info:
        from_torch(Branchy(), (rand(3),))
    assert info.value.__cause__ is not None   # PyTorch's own error stays attached


def test_other_tracing_failures_name_the_model():
    class NotTraceable(torch.nn.Module):
        def forward(self, x):
            return x.numpy()

    with pytest.raises(FrontendError, match=r"torch.export could not trace NotTraceable: "):
        from_torch(NotTraceable(), (rand(3),))


# random models -------------------------------------------------------------------------------------

nn = torch.nn
ACTIVATIONS = [nn.ReLU, nn.ReLU6, nn.Hardswish, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Tanh, nn.Hardsigmoid]


class Residual(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


@st.composite
def image_models(draw):
    """A random stack of convolutions, batch norms, activations, pools and residual blocks over a small
    NCHW input, ending in a linear layer; returns ``(model, input shape)``."""
    from tesched.frontend.model_zoo import randomize_batch_norm  # imports torch: after helpers' skip check
    channels, height, width = draw(st.integers(1, 4)), draw(st.integers(5, 9)), draw(st.integers(5, 9))
    shape = (1, channels, height, width)
    layers = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["conv", "bn", "act", "pool", "residual"]))
        c, h, w = shape[1:]
        if kind == "conv":
            out = draw(st.sampled_from([c, 2, 4]))
            kernel = draw(st.sampled_from([1, 3])) if min(h, w) >= 3 else 1
            stride, padding = draw(st.integers(1, 2)), draw(st.integers(0, kernel // 2))
            groups = c if out == c and draw(st.booleans()) else 1
            layers.append(nn.Conv2d(c, out, kernel, stride, padding, groups=groups, bias=draw(st.booleans())))
            shape = (1, out, (h + 2 * padding - kernel) // stride + 1, (w + 2 * padding - kernel) // stride + 1)
        elif kind == "bn":
            layers.append(nn.BatchNorm2d(c))
        elif kind == "act":
            layers.append(draw(st.sampled_from(ACTIVATIONS))())
        elif kind == "pool" and min(h, w) >= 2:
            ceil = draw(st.booleans())
            layers.append(draw(st.sampled_from([nn.MaxPool2d(2, ceil_mode=ceil), nn.AvgPool2d(2, ceil_mode=ceil)])))
            size = (lambda n: -(-n // 2)) if ceil else (lambda n: n // 2)
            shape = (1, c, size(h), size(w))
        elif kind == "residual":
            layers.append(Residual(nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())))
    layers += [nn.Flatten(), nn.Linear(int(np.prod(shape)), 3)]
    return randomize_batch_norm(nn.Sequential(*layers), seed=draw(st.integers(0, 100))), (1, channels, height, width)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image_models())
def test_random_models_import_and_match_pytorch(model_and_shape):
    model, shape = model_and_shape
    x = rand(*shape)
    fn = from_torch(model, (x,))
    with torch.no_grad():
        assert max_relative_error(G.interpret(fn, x.numpy()), model(x)) <= TOLERANCE


class _WithLoss(torch.nn.Module):
    """A model and its loss in one module: the function ``train=True`` imports returns the loss."""

    def __init__(self, model, loss):
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x, target):
        return self.loss(self.model(x), target)


@pytest.mark.parametrize("case", ["mlp_mse", pytest.param("cnn_cross_entropy", marks=pytest.mark.slow)])
def test_train_imports_parameters_as_inputs_and_sgd_matches_torch(case):
    torch.manual_seed(5)
    if case == "mlp_mse":
        model = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
        x, target = rand(8, 5), rand(8, 3)
        wrapped = _WithLoss(model, torch.nn.functional.mse_loss)
    else:
        model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                    torch.nn.Flatten(), torch.nn.Linear(27, 4))
        x, target = rand(2, 2, 6, 6), torch.nn.functional.one_hot(torch.tensor([1, 3]), 4).float()
        wrapped = _WithLoss(model, torch.nn.functional.cross_entropy)
    fn = from_torch(wrapped, (x, target), train=True)
    names = [name for name, _ in wrapped.named_parameters()]
    assert [p.name for p in fn.params] == ["x", "target", *names]
    step = G.build(G.optim.sgd(fn, names, lr=0.1))
    params = [p.detach().numpy().copy() for p in wrapped.parameters()]
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    for _ in range(3):
        loss, *params = step(x.numpy(), target.numpy(), *params)
        opt.zero_grad()
        reference = wrapped(x, target)
        reference.backward()
        opt.step()
        np.testing.assert_allclose(loss, reference.item(), rtol=1e-5)
    for ours, theirs in zip(params, wrapped.parameters()):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_without_train_parameters_stay_constants():
    fn = from_torch(torch.nn.Linear(3, 2), (rand(4, 3),))
    assert [p.name for p in fn.params] == ["input"]


class _ZooLoss(torch.nn.Module):
    """A model of the zoo and a squared-error loss on each of its outputs."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        outs = self.model(*inputs[:-1])
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(torch.nn.functional.mse_loss(o, inputs[-1]) for o in outs)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["mlp_block", "lstm_cell"])
def test_zoo_models_train_with_adam_like_torch(case):
    from tesched.frontend.model_zoo import LSTMCellStep, MLPBlock

    torch.manual_seed(6)
    if case == "mlp_block":                         # linear, GELU, residual, layer norm
        wrapped, inputs = _ZooLoss(MLPBlock(8, 16)), (rand(6, 8), rand(6, 8))
    else:                                           # the four gates of nn.LSTMCell
        wrapped, inputs = _ZooLoss(LSTMCellStep(4, 5)), (rand(3, 4), rand(3, 5), rand(3, 5), rand(3, 5))
    names = [name for name, _ in wrapped.named_parameters()]
    step = G.build(G.optim.adam(from_torch(wrapped, inputs, train=True), names, lr=0.01))
    params = [p.detach().numpy().copy() for p in wrapped.parameters()]
    state = [np.zeros_like(p) for p in params] * 2
    opt = torch.optim.Adam(wrapped.parameters(), lr=0.01)
    for k in range(3):
        loss, *rest = step(*[i.numpy() for i in inputs], *params, *state, np.float32(k + 1))
        params, state = rest[:len(names)], rest[len(names):]
        opt.zero_grad()
        reference = wrapped(*inputs)
        reference.backward()
        opt.step()
        np.testing.assert_allclose(loss, reference.item(), rtol=1e-5)
    for ours, theirs in zip(params, wrapped.parameters()):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-6)
