"""The mask converters against PyTorch: comparisons (Tensor and Scalar forms, mixed dtypes), where, any/all,
logical and bitwise ops on bool, masked_fill, triu/tril, a bool input and output, a bool-to-float copy; the
forms refused name the op."""
import pytest

from tesched.frontend import from_torch, supported_ops
from tesched.frontend.errors import UnsupportedOpError

from .helpers import Case, Lambda, check_case, ops_of, exported, rand, torch


def comparisons(x, y):
    positions = torch.arange(x.shape[-1])
    return (x > 0.25, x == y, x != 1, x <= y * 2, x < y, x >= -0.5, positions > 2.5, positions <= x.shape[-1] // 2,
            (x > 0) == (y > 0), x == 0.5, x >= y, x > y, x != y)


def masks(x, y, keep):
    above = x > 0
    mixed = torch.logical_xor(torch.logical_not(above) & (y < 0.5), ~keep | (x < -0.5))
    return (torch.where(mixed, x, -y), torch.where(keep, x, 0.0), above.any(dim=1), above.all(),
            (x > -0.9).all(dim=(1, 2)), torch.logical_or(x, y), torch.logical_and(above, keep), above ^ keep, mixed)


CASES = [
    Case("comparisons", lambda: Lambda(comparisons), lambda: (rand(2, 3, 8), rand(2, 3, 8))),
    Case("where_logic_any_all", lambda: Lambda(masks),
         lambda: (rand(2, 3, 8), rand(2, 3, 8), rand(2, 3, 8) > 0)),
    Case("masked_fill_triangles", lambda: Lambda(lambda x, m: (x.masked_fill(m, -1.5), x.masked_fill(x > 0, 0.0),
                                                             torch.triu(x), torch.tril(x, -1), torch.triu(x, 2))),
         lambda: (rand(2, 5, 6), rand(5, 6) > 0)),
    Case("raw_masked_fill_triangles", lambda: Lambda(lambda x, m: (x.masked_fill(m, -1.5), torch.triu(x, 1),
                                                                 torch.tril(x))),
         lambda: (rand(2, 5, 6), rand(5, 6) > 0), raw=True),
    Case("raw_any_all", lambda: Lambda(lambda x, m: (m.all(), m.all(dim=1), m.all(dim=(0, 2), keepdim=True),
                                                   m.any(), (x > 0).any(dim=(1, 2)),
                                                   x.masked_fill(m, torch.tensor(-2.0)))),
         lambda: (rand(2, 3, 4), rand(2, 3, 4) > -0.8), raw=True),
    Case("dtype_conversions", lambda: Lambda(lambda x: ((x > 0).float() * x, (x > 0).to(torch.int64),
                                                       x.double() * 2, (x * 4).to(torch.int32))),
         lambda: (rand(3, 7),)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


def test_compiled():
    check_case(CASES[1], build=True)
    check_case(CASES[2], build=True)


def test_the_ops_are_listed_and_met():
    listed = set(supported_ops())
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
        assert {f"aten.{cmp}.Tensor", f"aten.{cmp}.Scalar"} <= listed
    assert {"aten.where.self", "aten.any.dim", "aten.all.default", "aten.logical_xor.default",
            "aten.bitwise_not.default", "aten.masked_fill.Scalar", "aten.triu.default"} <= listed
    met = set().union(*(ops_of(exported(case)[1]) for case in CASES[:3]))
    assert {"aten.where.self", "aten.any.dim", "aten.bitwise_not.default", "aten.logical_xor.default",
            "aten.ge.Scalar", "aten.le.Tensor"} <= met


def test_bitwise_on_integers_names_the_op():
    model = Lambda(lambda x: (x > 0).to(torch.int32) & (x < 0.5).to(torch.int32))
    with pytest.raises(UnsupportedOpError, match=r"aten\.bitwise_and\.Tensor.*bitwise operation on int32"):
        from_torch(model, (rand(2, 3),))
