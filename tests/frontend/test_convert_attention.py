"""The batched matrix product converter (``aten.bmm``) against PyTorch: bmm itself, matmul of 3-D and 4-D
operands with broadcasting, ``q @ k.transpose(-2, -1)``, ``baddbmm`` and ``einsum`` (which decompose to
bmm), ``nn.MultiheadAttention`` without a mask (batch first and not), and a Linear over a 3-D tensor."""
import pytest

from .helpers import Case, Lambda, check_case, rand, torch

nn = torch.nn

class TwoAttentions(nn.Module):
    """Self-attention batch first, and cross-attention (other key/value widths) sequence first."""

    def __init__(self):
        super().__init__()
        self.own = nn.MultiheadAttention(16, 4, batch_first=True)
        self.cross = nn.MultiheadAttention(16, 2, kdim=8, vdim=8)

    def forward(self, x, y):
        xt, yt = x.transpose(0, 1), y.transpose(0, 1)
        return self.own(x, x, x), self.cross(xt, yt, yt)


CASES = [
    Case("bmm", lambda: Lambda(lambda a, b: torch.bmm(a, b)), lambda: (rand(2, 3, 4), rand(2, 4, 5))),
    Case("matmul_4d_broadcast", lambda: Lambda(lambda a, b: a @ b), lambda: (rand(2, 3, 5, 4), rand(3, 4, 6))),
    Case("scores", lambda: Lambda(lambda q, k: torch.softmax(q @ k.transpose(-2, -1) * 0.5, -1) @ k),
         lambda: (rand(1, 2, 7, 8), rand(1, 2, 7, 8))),
    Case("baddbmm_einsum", lambda: Lambda(lambda c, a, b: (torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
                                                          torch.einsum("bij,bjk->bik", a, b),
                                                          torch.einsum("bhqd,bhkd->bhqk", a[None], a[None]))),
         lambda: (rand(2, 3, 5), rand(2, 3, 4), rand(2, 4, 5))),
    Case("multihead_attention", lambda: TwoAttentions(), lambda: (rand(2, 5, 16), rand(2, 7, 8))),
    Case("linear_3d", lambda: nn.Linear(8, 5), lambda: (rand(2, 3, 8),)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("index", [1, 2], ids=["matmul_4d_broadcast", "scores"])
def test_compiled(index):
    text = str(check_case(CASES[index], build=True))
    assert "nn.batch_matmul" in text
