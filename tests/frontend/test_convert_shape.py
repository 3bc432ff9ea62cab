"""The view, permute, concatenation, split, slice, padding, identity and constant-factory converters against
PyTorch."""
import pytest

from tesched.frontend import UnsupportedOpError, from_torch

from .helpers import Case, Lambda, check_case, rand, torch

F = torch.nn.functional


def image():
    return (rand(2, 3, 4, 6),)


CASES = [
    Case("views", lambda: Lambda(lambda x: (x.flatten(1), x.reshape(6, 4, 6).unsqueeze(0), x[:1].squeeze(0),
                                            x.view(2, 3, 24).permute(2, 0, 1), x.transpose(1, 3), x.transpose(2, 2),
                                            x.permute(0, 1, 2, 3) + 1)), image),
    Case("views_raw", lambda: Lambda(lambda x: (x.flatten(1), x.reshape(3, 48), x[:1].squeeze(), x.squeeze(0),
                                                x.unsqueeze(1), x.view(6, 24).t(), x.transpose(0, 1),
                                                x.permute(0, 2, 1, 3).contiguous(), torch.ops.aten._unsafe_view(x, (6, 24)))),
         image, raw=True),
    Case("expand_cat", lambda: Lambda(lambda x: (x[:, :1].expand(2, 3, 4, 6) * x, torch.cat([x, x * 2], 1),
                                                 torch.cat([x], 0), torch.cat([x, x[:1]], 0))), image),
    Case("split", lambda: Lambda(lambda x: (x.split(1, 1), x.chunk(2, 3), x.unbind(0), x.split([1, 2], 1),
                                            x.split(4, -1))), image),
    Case("split_raw", lambda: Lambda(lambda x: (x.split(2, 3), x.unbind(1), x.split([3, 3], -1))), image, raw=True),
    Case("slices", lambda: Lambda(lambda x: (x[:, 1:, ::2, 3], x[..., -3:], x.select(1, -1), x.narrow(2, 1, 3),
                                             x[:, :, 1:100], x[:, :], x[1])), image),
    Case("pad", lambda: Lambda(lambda x: (F.pad(x, (1, 2, 0, 3), value=0.5), F.pad(x, (2, 0)), F.pad(x, (-1, 2, 0, -2)),
                                          F.pad(x, (-1, -1)))), image),
    Case("any_rank", lambda: Lambda(lambda x, v: (
        x.flatten(), x.flatten(1, 3), x.unflatten(2, (2, 2)), x.unflatten(-1, (1, 2)), x.chunk(2, 2), x.chunk(3, -2),
        torch.split(x, [1, 2], 1), torch.stack([x, x * 2], 0), torch.stack([x, x], -1), torch.cat([x, x], 4),
        x[:, :1].expand(2, 3, 4, 5, 2), x.unsqueeze(0).expand(3, -1, -1, -1, -1, -1),
        F.pad(x, (1, 2, 0, 1, 1, 1, 0, 0, 1, 0)), torch.stack([v, v]), v.unflatten(0, (7, 1)), v.chunk(3),
        F.pad(v, (2, 1), value=2.0), torch.cat([v, v]))), lambda: (rand(2, 3, 4, 5, 2), rand(7))),
    Case("identities", lambda: Lambda(lambda x: (x.clone() + 1, x.float() * 2, x.permute(0, 2, 1, 3).contiguous(),
                                                 torch.nn.functional.dropout(x, 0.5, training=False))), image),
    Case("identities_raw", lambda: Lambda(lambda x: (x.clone(), x.detach() + 1, F.dropout(x, 0.3, training=False),
                                                     x * torch.tensor(2.0), torch.ops.aten._to_copy(x))),
         image, raw=True),
    Case("factories", lambda: Lambda(lambda x: (x + torch.zeros(3, 4, 6), x * torch.full((6,), 2.0),
                                                x + torch.arange(0.0, 12.0, 2.0), torch.zeros_like(x) + torch.ones_like(x),
                                                torch.full_like(x, 3.0) - x, x * torch.tensor(2.0),
                                                x * torch.scalar_tensor(3.0))), image),
    Case("factories_raw", lambda: Lambda(lambda x: (x + torch.zeros(6), x + torch.ones(6), x + torch.arange(6.0),
                                                    x + torch.arange(2.0, 8.0), torch.zeros_like(x) + torch.ones_like(x) + x,
                                                    torch.full_like(x, 2.0))), image, raw=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


def test_compiled():
    check_case(CASES[5], build=True)


