"""Tests of tesched.nn.quantized: quantize, dequantize, requantize, dense_packed, conv2d_nhwc_packed,
qdense and qconv2d with their default schedules, against tesched.nn.quantized_ref (exact for integers) and,
where installed, PyTorch's fbgemm quantized Linear."""
import numpy as np
import pytest

import tesched as ts
from tesched import nn
from tesched.nn import quantized_ref as ref


def _build(out, args, name):
    return ts.build(nn.default_schedule(out), [*args, out], name=name)


def test_quantize_dequantize_round_trip(rand):
    x_t = ts.placeholder((4, 33), name="x")
    q_t = nn.quantize(x_t, 0.05, 10, "uint8")
    d_t = nn.dequantize(q_t, 0.05, 10)
    f = ts.build(nn.default_schedule([q_t, d_t]), [x_t, q_t, d_t], name="quant_roundtrip")
    x = rand((4, 33), "float32", -2, 12)
    x[0, :3] = [0.025, 0.075, 100.0]                 # ties round to even; overflow saturates
    q, d = f(x)
    np.testing.assert_array_equal(q, ref.quantize(x, 0.05, 10, "uint8"))
    np.testing.assert_array_equal(d, ref.dequantize(q, 0.05, 10))


@pytest.mark.parametrize("relu, dtype", [(False, "uint8"), (True, "int8")])
def test_requantize_per_channel(relu, dtype, rand):
    acc_t = ts.placeholder((6, 24), "int32", name="acc")
    m_t, o_t = ts.placeholder((24,), name="multiplier"), ts.placeholder((24,), "int32", name="offset")
    out_t = nn.requantize(acc_t, m_t, 5, dtype, o_t, relu)
    f = _build(out_t, [acc_t, m_t, o_t], f"requant_{dtype}_{relu}")
    acc, offset = rand((6, 24), "int32", -50000, 50000), rand(24, "int32", -1000, 1000)
    multiplier = rand(24, "float32", 1e-4, 1e-2)
    np.testing.assert_array_equal(f(acc, multiplier, offset), ref.requantize(acc, multiplier, 5, dtype, offset, relu))


def _dense_case(rng, dtype, m=5, k=32, n=40):
    x = rng.integers(0, 256, (m, k)).astype(np.uint8) if dtype == "uint8" else \
        rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    return x, w


@pytest.mark.usefixtures("host_target")
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qdense_matches_the_reference(dtype, rng):
    x, w = _dense_case(rng, dtype)
    zero = 128 if dtype == "uint8" else -3
    packed, offset, multiplier = nn.quantized_dense_params(w, rng.uniform(0.001, 0.01, 40),
                                                           rng.standard_normal(40), 0.02, zero, 0.1)
    x_t = ts.placeholder(x.shape, dtype, name="x")
    w_t = ts.placeholder(packed.shape, "int8", name="w")
    o_t, m_t = ts.placeholder((40,), "int32", name="offset"), ts.placeholder((40,), name="multiplier")
    out_t = nn.qdense(x_t, w_t, o_t, m_t, 7, "uint8", relu=True)
    f = _build(out_t, [x_t, w_t, o_t, m_t], f"qdense_{dtype}")
    assert "dot4" in f.c_source                              # the dot-product pattern was found
    expected = ref.requantize(ref.dense(x, w), multiplier, 7, "uint8", offset, relu=True)
    np.testing.assert_array_equal(f(x, packed, offset, multiplier), expected)


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_qdense_agrees_with_pytorch_fbgemm(rng):
    """fbgemm is a peer only where it is exact: without VNNI it multiplies uint8 by int8 with vpmaddubsw,
    which saturates pairs of products at int16 (45 off an exact reference on these values); tesched is
    held to the exact reference everywhere (test_qdense_matches_the_reference)."""
    torch = pytest.importorskip("torch")
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        pytest.skip("PyTorch without fbgemm")
    host = ts.Target("host")
    if not (host.has("avx512_vnni") or host.has("avx_vnni")):
        pytest.skip("this CPU has no VNNI: fbgemm's uint8 x int8 products saturate at int16, so it is not exact")
    torch.backends.quantized.engine = "fbgemm"
    x, w = _dense_case(rng, "uint8", m=8, k=64, n=32)
    scales, bias = rng.uniform(0.001, 0.01, 32), rng.standard_normal(32).astype(np.float32)
    linear = torch.ao.nn.quantized.Linear(64, 32, dtype=torch.qint8)
    linear.set_weight_bias(torch._make_per_channel_quantized_tensor(
        torch.from_numpy(w), torch.from_numpy(scales), torch.zeros(32, dtype=torch.long), 0), torch.from_numpy(bias))
    linear.scale, linear.zero_point = 0.1, 7
    expected = linear(torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), 0.02, 128)).int_repr().numpy()
    packed, offset, multiplier = nn.quantized_dense_params(w, scales, bias, 0.02, 128, 0.1)
    x_t, w_t = ts.placeholder(x.shape, "uint8", name="x"), ts.placeholder(packed.shape, "int8", name="w")
    o_t, m_t = ts.placeholder((32,), "int32", name="offset"), ts.placeholder((32,), name="multiplier")
    out_t = nn.qdense(x_t, w_t, o_t, m_t, 7, "uint8")
    got = _build(out_t, [x_t, w_t, o_t, m_t], "qdense_torch")(x, packed, offset, multiplier)
    assert np.abs(got.astype(np.int32) - expected).max() <= 1   # the bias is rounded apart from the sum


@pytest.mark.parametrize("dtype, strides", [("uint8", 1), ("int8", 2)])
def test_qconv2d_matches_the_reference(dtype, strides, rng):
    n, h, w_, c, o = 1, 6, 9, 8, 16
    x = rng.integers(0, 256, (n, h, w_, c)).astype(np.uint8) if dtype == "uint8" else \
        rng.integers(-128, 128, (n, h, w_, c)).astype(np.int8)
    weight = rng.integers(-127, 128, (o, c, 3, 3)).astype(np.int8)
    zero = 100 if dtype == "uint8" else 2
    packed, offset, multiplier = nn.quantized_conv_params(weight, rng.uniform(0.001, 0.01, o), None, 0.05, zero, 0.2)
    x_t, w_t = ts.placeholder(x.shape, dtype, name="x"), ts.placeholder(packed.shape, "int8", name="w")
    o_t, m_t = ts.placeholder((o,), "int32", name="offset"), ts.placeholder((o,), name="multiplier")
    out_t = nn.qconv2d(x_t, w_t, o_t, m_t, 4, "uint8", relu=True, strides=strides, padding=1, data_zero_point=zero)
    f = _build(out_t, [x_t, w_t, o_t, m_t], f"qconv_{dtype}_{strides}")
    acc = ref.conv2d_nhwc(x, weight, (strides, strides), (1, 1), zero)
    expected = ref.requantize(acc, multiplier, 4, "uint8", offset, relu=True)
    np.testing.assert_array_equal(f(x, packed, offset, multiplier), expected)


def test_bfloat16_dense_accumulates_in_float32(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.standard_normal((8, 16)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((48, 16)).astype(ml_dtypes.bfloat16)
    x_t, w_t = ts.placeholder(x.shape, "bfloat16", name="x"), ts.placeholder((8, 48, 2), "bfloat16", name="w")
    out_t = nn.dense_packed(x_t, w_t)
    assert out_t.dtype == "float32"
    f = _build(out_t, [x_t, w_t], "dense_bf16")
    np.testing.assert_allclose(f(x, nn.pack_dense_weight(w)), ref.dense(x, w), rtol=1e-5, atol=1e-5)


def test_quantized_ops_name_what_is_wrong():
    x = ts.placeholder((4, 30), "uint8", name="x")
    with pytest.raises(ValueError, match="dense_packed: data .* do not match"):
        nn.dense_packed(x, ts.placeholder((8, 16, 4), "int8", name="w"))
    with pytest.raises(TypeError, match="dense_packed: data is uint8 and packed weights uint8"):
        nn.dense_packed(ts.placeholder((4, 32), "uint8", name="x8"), ts.placeholder((8, 16, 4), "uint8", name="u"))
    with pytest.raises(TypeError, match="operands must be one of"):
        nn.dense_packed(ts.placeholder((4, 32), name="f"), ts.placeholder((8, 16, 4), "int8", name="w8"))
    with pytest.raises(ValueError, match="multiple of 4"):
        nn.pack_dense_weight(np.zeros((16, 30), np.int8))
    with pytest.raises(ValueError, match="requantize: multiplier must be a 1-D float32 tensor of 16 channels"):
        nn.requantize(ts.placeholder((2, 16), "int32", name="acc"), ts.placeholder((8,), name="m"), 0)
