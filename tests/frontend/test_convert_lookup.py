"""The lookup converters against PyTorch: embedding (with a padding index), index_select along any axis,
gather with indices smaller than the data, and an embedding whose weight is also a head (tied)."""
import pytest

from .helpers import Case, Lambda, check_case, torch

nn = torch.nn


class TiedHead(nn.Module):
    """Token embedding and a language-model head sharing its weight."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 6, padding_idx=0)
        self.head = nn.Linear(6, 11, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.tanh(self.embed(tokens)))


def integers(high, *shape):
    return lambda: (torch.rand(4, 5, 4) * 2 - 1, torch.randint(0, high, shape))


CASES = [
    Case("tied_embedding", TiedHead, lambda: (torch.randint(0, 11, (2, 7)),)),
    Case("index_select", lambda: Lambda(lambda x, i: (x.index_select(1, i), x.index_select(-1, i[:2]),
                                                     x.index_select(0, i[:1]))), integers(4, 3)),
    Case("gather", lambda: Lambda(lambda x, i: (torch.gather(x, 1, i), torch.gather(x, 2, i[:, :2, :3]))),
         integers(4, 2, 3, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


def test_compiled():
    for case in CASES:
        check_case(case, build=True)
