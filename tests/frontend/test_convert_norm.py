"""The normalisation converters against PyTorch: GroupNorm, InstanceNorm (1-D, 2-D, batches of several),
a batch norm without running statistics, RMS norm (functional and module) and LayerNorm over two axes."""
import pytest

from tesched.frontend.op_table import converter_for

from .helpers import Case, Lambda, check_case, exported, ops_of, rand, torch

nn, F = torch.nn, torch.nn.functional


class RMSNorms(nn.Module):
    """RMS norm functional (a weight, one axis) and as a module (two axes, a trained weight)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm([4, 8])
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 2)

    def forward(self, x):
        return F.rms_norm(x, (8,), torch.linspace(0.5, 2, 8), eps=1e-5), self.norm(x)


def sequential(*modules):
    return lambda: nn.Sequential(*modules)


CASES = [
    Case("group_norm", sequential(nn.GroupNorm(3, 6), nn.GroupNorm(2, 6, affine=False)), lambda: (rand(2, 6, 5, 4),)),
    Case("instance_norm", lambda: Lambda(lambda x, y: (nn.functional.instance_norm(x, eps=1e-3),
                                                      nn.InstanceNorm1d(3)(y))),
         lambda: (rand(2, 4, 5, 6, low=0, high=3), rand(1, 3, 9))),
    Case("batch_norm_without_running_statistics", sequential(nn.BatchNorm2d(4, track_running_stats=False)),
         lambda: (rand(3, 4, 5, 5),)),
    Case("rms_norm", RMSNorms, lambda: (rand(2, 4, 8),)),
    Case("layer_norm_two_axes", sequential(nn.LayerNorm([4, 8])), lambda: (rand(2, 3, 4, 8),)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


def test_compiled():
    for case in CASES[:2]:
        check_case(case, build=True)


def test_the_decomposed_ops_are_the_ones_converted():
    assert "aten.native_group_norm.default" in ops_of(exported(CASES[0])[1])
    assert "aten._native_batch_norm_legit.no_stats" in ops_of(exported(CASES[1])[1])


def test_instance_norm_with_affine_parameters():
    if converter_for("aten.repeat.default") is None:
        pytest.skip("InstanceNorm's affine parameters decompose to aten.repeat, a shape op not converted here")
    torch.manual_seed(0)
    norm = nn.InstanceNorm2d(3, affine=True)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2)
        norm.bias.uniform_(-1, 1)
    check_case(Case("instance_norm_affine", lambda: norm, lambda: (rand(2, 3, 4, 4),)), build=True)


class _BatchNormLoss(nn.Module):
    """Conv, batch norm in training mode (2-D, or 1-D over a sequence), ReLU, a mean-squared loss. The conv
    has no bias, as before any batch norm: its gradient would be rounding noise, which Adam amplifies."""

    def __init__(self, rank: int, affine: bool, momentum: float):
        super().__init__()
        conv, norm = (nn.Conv2d, nn.BatchNorm2d) if rank == 4 else (nn.Conv1d, nn.BatchNorm1d)
        self.conv, self.bn = conv(2, 3, 3, padding=1, bias=False), norm(3, affine=affine, momentum=momentum)

    def forward(self, x, target):
        return F.mse_loss(torch.relu(self.bn(self.conv(x))).mean(tuple(range(2, x.dim()))), target)


@pytest.mark.parametrize("rank, affine, momentum, optimizer", [
    (3, False, 0.3, "adam"),
    pytest.param(4, True, 0.1, "sgd", marks=pytest.mark.slow),
    pytest.param(4, False, 0.5, "adam", marks=pytest.mark.slow),
])
def test_training_batch_norm_steps_match_torch_with_running_statistics(rank, affine, momentum, optimizer):
    """``train=True`` imports a training-mode batch norm with its batch statistics, and returns its running
    statistics' updates after the loss: three optimizer steps match PyTorch's parameters and buffers."""
    import numpy as np

    from tesched import graph as G
    from tesched.frontend import from_torch

    torch.manual_seed(rank + int(affine))
    model = _BatchNormLoss(rank, affine, momentum).train()
    x, target = rand(4, 2, 5, 6) if rank == 4 else rand(4, 2, 7), rand(4, 3)
    fn = from_torch(model, (x, target), train=True)
    names = [name for name, _ in model.named_parameters()]
    buffers = ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [p.name for p in fn.params] == ["x", "target", *names, *buffers]
    with pytest.raises(Exception, match="has_aux=True"):
        G.optim.sgd(fn, names)
    params = [p.detach().numpy().copy() for p in model.parameters()]
    stats = [b.detach().numpy().copy() for b in model.buffers()]
    if optimizer == "sgd":
        step = G.build(G.optim.sgd(fn, names, lr=0.1, has_aux=True))
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    else:
        step = G.build(G.optim.adam(fn, names, lr=0.05, has_aux=True))
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        state = [np.zeros_like(p) for p in params] * 2
    for k in range(3):
        if optimizer == "sgd":
            loss, *rest = step(x.numpy(), target.numpy(), *params, *stats)
        else:
            loss, *rest = step(x.numpy(), target.numpy(), *params, *stats, *state, np.float32(k + 1))
            state = rest[len(names):3 * len(names)]
        params, stats = rest[:len(names)], rest[-len(buffers):]
        opt.zero_grad()
        reference = model(x, target)
        reference.backward()
        opt.step()
        np.testing.assert_allclose(loss, reference.item(), rtol=1e-4)
    for ours, theirs in zip(params + stats, [*model.parameters(), *model.buffers()]):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_training_batch_norm_refusals_name_the_op():
    from tesched.frontend import FrontendError, from_torch

    model = nn.Sequential(nn.BatchNorm1d(3, momentum=None)).train()     # 1 / num_batches_tracked as a float
    with pytest.raises(FrontendError, match="could not trace Sequential: it has data-dependent control flow"):
        from_torch(model, (rand(4, 3),), train=True)
    with pytest.raises(FrontendError, match="could not trace Sequential.*more than 1 value per channel"):
        from_torch(nn.Sequential(nn.BatchNorm1d(3)).train(), (rand(1, 3),), train=True)
    with pytest.raises(FrontendError, match="training mode.*train=True"):
        from_torch(nn.Sequential(nn.BatchNorm1d(3)).train(), (rand(4, 3),))
    assert converter_for("aten._native_batch_norm_legit_functional.default") is None
    assert converter_for("aten._native_batch_norm_legit_functional.default", train=True) is not None
