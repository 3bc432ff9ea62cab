"""The arithmetic, activation and reduction converters against PyTorch, on core-ATen and raw programs."""
import pytest

from .helpers import Case, Lambda, check_case, exported, ops_of, rand, torch

F = torch.nn.functional


def image():
    return (rand(2, 3, 5, 6, low=0.1, high=2.0),)


CASES = [
    Case("binary", lambda: Lambda(lambda x, y: (x + 1, x - 2, 3 - x, x * 4, x / 5, 5 / x, x.add(y, alpha=2),
                                                x.sub(y, alpha=3), torch.div(x, y, rounding_mode=None), x * y[0],
                                                torch.rsub(x, y), x - y, y / x)),
         lambda: (rand(2, 3, low=0.5), rand(3, low=0.5))),
    Case("binary_raw", lambda: Lambda(lambda x, y: (torch.rsub(x, y), torch.rsub(x, 2.0), x.add(1.0), x.mul(3.0),
                                                    x.div(2.0), x.sub(0.5), torch.ops.aten.add.Scalar(x, 2),
                                                    torch.ops.aten.sub.Scalar(x, 1, alpha=2), torch.ops.aten.mul.Scalar(x, 3),
                                                    torch.ops.aten.div.Scalar(x, 4))),
         lambda: (rand(4, 3), rand(4, 3)), raw=True),
    Case("math", lambda: Lambda(lambda x: (x ** 2, x ** 3, x ** 0.5, x ** -0.5, x ** -1, x ** -2, x ** 1,
                                           x.rsqrt(), x.reciprocal(), -x, (x - 1).abs(), x.exp(), x.log(),
                                           x.sqrt(), torch.erf(x - 1))), image),
    Case("activations", lambda: Lambda(lambda x: (F.relu(x), F.relu6(x * 5), F.hardtanh(x, -0.5, 0.5),
                                                  x.clamp(0.2, 0.8), x.clamp(min=0.3), x.clamp(max=0.6),
                                                  F.gelu(x * 3 - 3), F.gelu(x, approximate="tanh"), F.silu(x),
                                                  F.hardswish(x * 6 - 6), F.hardsigmoid(x * 4 - 4),
                                                  F.leaky_relu(x - 1, 0.1), torch.sigmoid(x), torch.tanh(x))),
         image),
    Case("activations_raw", lambda: Lambda(lambda x: (F.silu(x), F.hardswish(x * 6 - 3), F.hardsigmoid(x),
                                                      torch.clamp_min(x, 0.1), torch.clamp_max(x, 0.9),
                                                      F.relu(x))),
         lambda: (rand(3, 7),), raw=True),
    Case("reductions", lambda: Lambda(lambda x: (x.mean(), x.mean((2, 3)), x.mean((-1, -2), keepdim=True),
                                                 x.mean(1, keepdim=True), x.sum(-1), x.sum((0, 2)), x.amax(1),
                                                 x.max())), image),
    Case("reductions_raw", lambda: Lambda(lambda x: (x.sum(), x.mean(dim=0))), lambda: (rand(3, 4),), raw=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


def test_composed_activations_compile_into_one_kernel():
    fused = Case("fused", lambda: Lambda(lambda x: F.gelu(x) + F.hardswish(x) - F.leaky_relu(x, 0.2) * F.silu(x)),
                 lambda: (rand(2, 33, low=-4, high=4),))
    assert "erf" in str(check_case(fused, build=True))


def test_a_mean_over_height_and_width_is_a_global_pool():
    fn = check_case(CASES[5])
    assert "nn.global_avg_pool2d" in str(fn)


@pytest.mark.parametrize("fn, message", [
    (lambda x: x ** 1.5, r"aten.pow.Tensor_Scalar .*exponent 1.5.*Nearest supported alternative: an exponent among"),
    (lambda x: torch.div(x, 2.0, rounding_mode="floor"), r"rounding_mode='floor'"),
    (lambda x: x.clamp(min=x * 0.5), (r"aten.clamp.Tensor in the model's own forward \(Lambda\) is not supported "
                                      r".*Nearest supported alternative: aten.clamp.default")),
    (lambda x: x.sum(dtype=torch.float64), r"a reduction to dtype float64"),
])
def test_unsupported_uses_are_named(fn, message):
    from tesched.frontend import UnsupportedOpError, from_torch
    with pytest.raises(UnsupportedOpError, match=message):
        from_torch(Lambda(fn), (rand(3, 4),))


def test_the_raw_cases_stay_raw():
    assert "aten.rsub.Tensor" in ops_of(exported(CASES[1])[1])
