"""The online-softmax kernel behind the graph's ``nn.attention`` against PyTorch's
``scaled_dot_product_attention``: sequences that are not a multiple of the key or row block, head dimensions
32 and 64 (and value widths other than the query's, one that fits no vector tile), causal masks of several
offsets (rows masked out whole give zeros), additive masks broadcast along each axis, on every micro-kernel
instruction set this CPU runs; groups the kernel does not serve keep the tensor-expression kernel."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.attention_kernel import bias_strides
from tesched.intrin.isa import supported_isas

torch = pytest.importorskip("torch")


def attention_graph(b, m, n, d, dv, causal=None, bias_shape=None, scale=None):
    params = [G.var("q", (b, m, d)), G.var("kt", (b, d, n)), G.var("v", (b, n, dv))]
    if bias_shape is not None:
        params.append(G.var("bias", bias_shape))
    return G.Function(params, G.nn.attention(*params, scale=d ** -0.5 if scale is None else scale, causal=causal))


def reference(q, k, v, causal, bias, scale):
    """PyTorch's attention; rows whose keys are all masked out are zeros (PyTorch gives NaN there)."""
    mask = None
    if causal is not None:
        rows, keys = q.shape[1], k.shape[1]
        keep = np.arange(keys)[None, :] <= np.arange(rows)[:, None] + causal
        mask = torch.from_numpy(np.where(keep, 0.0, -np.inf).astype(np.float32))
    if bias is not None:
        mask = torch.from_numpy(bias) if mask is None else mask + torch.from_numpy(bias)
    with torch.no_grad():
        out = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                                               attn_mask=mask, scale=scale).numpy()
    return np.nan_to_num(out, nan=0.0)


def check(rng, b, m, n, d, dv, causal=None, bias_shape=None, scale=None):
    q, k = rng.standard_normal((b, m, d), np.float32), rng.standard_normal((b, n, d), np.float32)
    v = rng.standard_normal((b, n, dv), np.float32)
    data = [q, np.ascontiguousarray(k.transpose(0, 2, 1)), v]
    bias = None
    if bias_shape is not None:
        bias = rng.standard_normal(bias_shape, np.float32)
        bias[rng.random(bias_shape) > 0.7] = -np.inf           # some keys masked out
        data.append(bias)
    exe = G.build(attention_graph(b, m, n, d, dv, causal, bias_shape, scale))
    assert [c.name for c in exe.external_calls] == ["nn.attention"] and not exe.kernels
    got = exe(*data)
    np.testing.assert_allclose(got, reference(q, k, v, causal, bias, scale), rtol=1e-4, atol=2e-5)
    return got


@pytest.mark.parametrize("b, m, n, d, dv, causal, bias_shape", [
    (3, 70, 70, 32, 32, None, None),             # one full key block and a partial one
    (2, 130, 97, 64, 64, 0, None),               # causal, rows and keys of different counts
    (2, 33, 200, 64, 48, None, (33, 200)),       # additive mask shared by the batch, Dv of 3 AVX-512 vectors
    (4, 65, 65, 64, 64, 0, (4, 1, 65)),          # causal plus a key padding mask per batch
    (2, 40, 150, 32, 20, 3, (2, 40, 1)),         # a bias per row; Dv fits no vector tile
])
def test_matches_pytorch(rng, b, m, n, d, dv, causal, bias_shape):
    check(rng, b, m, n, d, dv, causal, bias_shape)


def test_rows_whose_keys_are_all_masked_out_are_zeros(rng):
    got = check(rng, 2, 9, 70, 32, 32, causal=-1, bias_shape=(9, 70), scale=0.3)
    assert np.all(got[:, 0] == 0)                  # row 0 sees no key at offset -1


def test_a_nan_score_gives_nan_and_large_negative_scores_give_zeros(rng):
    """The vectorized exponential: a NaN score makes its row NaN (as PyTorch's), scores far below the row's
    maximum (under -87 after the shift, in the partial last key block too) weigh nothing."""
    b, m, n, d = 1, 5, 70, 32
    q, k, v = (rng.standard_normal(s, np.float32) for s in ((b, m, d), (b, n, d), (b, n, d)))
    bias = np.zeros((m, n), np.float32)
    bias[1, 66:] = -200.0                          # row 1: the partial block's keys weigh ~exp(-200)
    bias[2, 3] = np.nan                            # row 2: one NaN score
    got = G.build(attention_graph(b, m, n, d, d, bias_shape=(m, n)))(q, np.ascontiguousarray(k.transpose(0, 2, 1)),
                                                                    v, bias)
    want = reference(q, k, v, None, bias, d ** -0.5)
    assert np.isnan(got[0, 2]).all()
    keep = [0, 1, 3, 4]
    np.testing.assert_allclose(got[0, keep], want[0, keep], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("isa", ["avx2", "c"])
def test_every_instruction_set(rng, monkeypatch, isa):
    if isa not in supported_isas():
        pytest.skip(f"this CPU does not run {isa}")
    monkeypatch.setenv("TESCHED_INTRIN_ISA", isa)
    check(rng, 2, 70, 100, 64, 64, causal=0, bias_shape=(2, 1, 100))


def test_other_dtypes_keep_the_tensor_expression_kernel():
    q, kt, v = G.var("q", (1, 4, 8), "float64"), G.var("kt", (1, 8, 5), "float64"), G.var("v", (1, 5, 8), "float64")
    f = G.Function([q, kt, v], G.nn.attention(q, kt, v, scale=0.5))
    exe = G.build(f)
    assert not exe.external_calls and len(exe.kernels) == 1
    rng = np.random.default_rng(1)
    data = [rng.standard_normal(p.tensor_type.shape) for p in f.params]
    np.testing.assert_allclose(exe(*data), G.interpret(f, *data), rtol=1e-5)


@pytest.mark.parametrize("shape, strides", [((7, 5), (0, 5, 1)), ((3, 7, 5), (35, 5, 1)), ((3, 1, 5), (5, 0, 1)),
                                            ((7, 1), (0, 1, 0)), ((1, 1, 1), (0, 0, 0))])
def test_bias_strides(shape, strides):
    assert bias_strides(shape, 3, 7, 5) == strides


def test_an_exported_library_carries_the_kernel(rng, tmp_path):
    f = attention_graph(2, 70, 70, 32, 32, causal=0, bias_shape=(70, 70))
    data = [rng.standard_normal(p.tensor_type.shape, np.float32) for p in f.params]
    exe = G.build(f)
    loaded = G.load_executable(exe.export_library(tmp_path / "attention.so"))
    np.testing.assert_allclose(loaded(*data), exe(*data), rtol=1e-6, atol=1e-7)
