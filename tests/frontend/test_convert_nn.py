"""The convolution, normalisation, matrix product, pooling, embedding and softmax converters against
PyTorch."""
import pytest

from tesched.frontend import UnsupportedOpError, from_torch

from .helpers import Case, Lambda, check_case, rand, torch

nn, F = torch.nn, torch.nn.functional


def image(channels=4, height=9, width=8):
    return lambda: (rand(2, channels, height, width),)


def batch_norm(channels, affine=True):
    bn = nn.BatchNorm2d(channels, affine=affine)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        if affine:
            bn.weight.uniform_(0.5, 2)
            bn.bias.uniform_(-1, 1)
    return bn


CASES = [
    Case("conv2d", lambda: nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.Conv2d(6, 6, 3, dilation=2, groups=2),
                                         nn.Conv2d(6, 6, (1, 3), padding=(0, 1), groups=6, bias=False)),
         image(height=13, width=12)),
    Case("conv1d", lambda: nn.Conv1d(4, 6, 3, stride=2, padding=2), lambda: (rand(2, 4, 11),)),
    Case("batch_norm", lambda: nn.Sequential(nn.Conv2d(4, 4, 1), batch_norm(4), batch_norm(4, affine=False)), image()),
    Case("batch_norm1d", lambda: nn.BatchNorm1d(5).eval(), lambda: (rand(3, 5),)),
    Case("layer_norm", lambda: Lambda(lambda x, g, b: (F.layer_norm(x, (8,), g, b), F.layer_norm(x, (9, 8)))),
         lambda: (rand(2, 4, 9, 8), rand(8), rand(8))),
    Case("linear", lambda: nn.Sequential(nn.Linear(8, 5), nn.Linear(5, 3, bias=False)), lambda: (rand(2, 3, 8),)),
    Case("matmul", lambda: Lambda(lambda a, b: (a @ b, torch.mm(a, b.t()), torch.addmm(b[0], a, b, beta=0.5, alpha=2.0),
                                                torch.addmm(a[:, :1], a, b), torch.addmm(b[0], a, b, beta=0))),
         lambda: (rand(3, 4), rand(4, 4))),
    Case("transpose_raw", lambda: Lambda(lambda a, b: torch.mm(a, b.t())), lambda: (rand(3, 4), rand(5, 4)), raw=True),
    Case("pools", lambda: Lambda(lambda x: (F.max_pool2d(x, 3, 2, 1), F.max_pool2d(x, 2, ceil_mode=True),
                                            F.max_pool2d(x, (3, 2), (2, 1)), F.avg_pool2d(x, 3, 2, 1),
                                            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                                            F.avg_pool2d(x, 2, ceil_mode=True), F.adaptive_avg_pool2d(x, 1),
                                            F.adaptive_avg_pool2d(x[..., :6, :], (3, 2)))), image(height=7)),
    Case("embedding", lambda: nn.Embedding(10, 4), lambda: (torch.tensor([[1, 9, 3], [0, 0, 2]]),)),
    Case("softmax", lambda: Lambda(lambda x: (F.softmax(x, 1), F.log_softmax(x, -1), F.softmax(x * 30, -1))),
         image()),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("index", [0, 2, 8], ids=["conv2d", "batch_norm", "pools"])
def test_compiled(index):
    check_case(CASES[index], build=True)


def test_linear_layers_become_dense():
    text = str(check_case(CASES[5]))
    assert text.count("nn.dense(") == 2 and "nn.matmul" not in text and "nn.bias_add" in text


def test_batch_norm_keeps_its_parameters_by_name():
    text = str(check_case(CASES[2]))
    assert "= 1.running_var: Tensor[(4), float32]" in text and "nn.batch_norm" in text


@pytest.mark.parametrize("model, inputs, message", [
    (nn.Sequential(nn.ReLU(), nn.ConvTranspose3d(3, 2, 2)), (rand(1, 3, 4, 4, 4),),
     r"aten.convolution.default in module `1` \(ConvTranspose3d\) is not supported: a 3-D transposed convolution"),
    (Lambda(lambda x: F.max_pool2d(x, 2, dilation=2)), (rand(1, 2, 8, 8),), r"dilation \[2, 2\]"),
    (Lambda(lambda x: F.avg_pool2d(x, 2, divisor_override=3)), (rand(1, 2, 4, 4),), "divisor_override"),
    (Lambda(lambda x: F.adaptive_avg_pool2d(x, 3)), (rand(1, 2, 4, 4),), r"output size \(3, 3\) does not divide"),
    (Lambda(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)), (rand(1, 2, 8, 8),), "count_include_pad=True"),
])
def test_unsupported_uses_are_named(model, inputs, message):
    with pytest.raises(UnsupportedOpError, match=message):
        from_torch(model, inputs)
