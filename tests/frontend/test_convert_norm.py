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
