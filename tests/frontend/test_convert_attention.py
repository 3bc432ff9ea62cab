"""The batched matrix product converter (``aten.bmm``) against PyTorch: bmm itself, matmul of 3-D and 4-D
operands with broadcasting, ``q @ k.transpose(-2, -1)``, ``baddbmm`` and ``einsum`` (which decompose to
bmm), ``nn.MultiheadAttention`` without a mask (batch first and not) and with a key padding mask and an
attention mask, ``scaled_dot_product_attention`` without a mask, with a bool and an additive float mask,
causal and with a scale (also over sequences of several key blocks, built), a ``TransformerEncoderLayer``,
and a Linear over a 3-D tensor; the attentions become one fused ``nn.attention``."""
import pytest

from tesched import graph as G
from tesched.frontend import from_exported_program

from .helpers import Case, Lambda, check_case, exported, rand, torch

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


class MaskedAttentions(nn.Module):
    """Self-attention with a key padding mask (batch first), and with a causal bool attention mask."""

    def __init__(self):
        super().__init__()
        self.padded = nn.MultiheadAttention(16, 4, batch_first=True)
        self.causal = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, padding):
        causal = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        return self.padded(x, x, x, key_padding_mask=padding)[0], self.causal(x, x, x, attn_mask=causal)[0]


def attentions(q, k, v, keep, bias):
    sdpa = nn.functional.scaled_dot_product_attention
    return (sdpa(q, k, v), sdpa(q, k, v, attn_mask=keep), sdpa(q, k, v, attn_mask=bias),
            sdpa(q, k, v, is_causal=True, scale=0.3), sdpa(q, k, v, attn_mask=keep[0, 0], scale=2.0))


def attention_inputs(seq=6, depth=8, value_depth=5):
    keep = rand(2, 1, seq, seq) > -0.6
    keep[..., 0] = True                          # no query sees no key (PyTorch gives NaN there)
    return (rand(2, 3, seq, depth), rand(2, 3, seq, depth), rand(2, 3, seq, value_depth), keep,
            rand(seq, seq, low=-2, high=2))


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
    Case("scaled_dot_product_attention", lambda: Lambda(attentions), attention_inputs),
    Case("masked_multihead_attention", MaskedAttentions,
         lambda: (rand(2, 5, 16), torch.tensor([[False] * 5, [False] * 3 + [True] * 2]))),
    Case("transformer_encoder_layer", lambda: nn.TransformerEncoderLayer(16, 4, 32, batch_first=True),
         lambda: (rand(1, 6, 16),)),
    Case("sdpa_key_blocks_d32", lambda: Lambda(attentions), lambda: attention_inputs(70, 32, 32)),
    Case("sdpa_key_blocks_d64", lambda: Lambda(attentions), lambda: attention_inputs(131, 64, 64)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("index", [1, 2, 6], ids=["matmul_4d_broadcast", "scores", "sdpa"])
def test_compiled(index):
    text = str(check_case(CASES[index], build=True))
    assert "nn.batch_matmul" in text


@pytest.mark.parametrize("index", [2, 6, 7, 8], ids=["scores", "sdpa", "masked_mha", "encoder_layer"])
def test_attention_becomes_one_fused_op(index):
    _, program, _ = exported(CASES[index])
    optimized = str(G.optimize(from_exported_program(program)))
    assert "nn.attention(" in optimized and "nn.softmax(" not in optimized


@pytest.mark.parametrize("index", [9, 10], ids=["seq70_d32", "seq131_d64"])
def test_built_attention_runs_the_online_kernel(index):
    """Sequences over several key blocks, not a multiple of them: no mask, bool and additive masks, causal."""
    fn = check_case(CASES[index], build=True)
    assert [c.name for c in G.build(fn).external_calls] == ["nn.attention"] * 5
