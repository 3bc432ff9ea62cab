"""Every graph op: its NumPy evaluation (used by constant folding) agrees with its compiled kernel, and
the registry rejects unknown and duplicate names."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.graph import op as op_module
from tesched.graph.op import all_ops, register_op
from tesched.nn.pattern import Pattern

from .helpers import ATOL, RTOL


def every_op_call():
    """One call of each op on small inputs; returns (inputs, calls)."""
    img = G.var("img", shape=(1, 4, 6, 5))
    w = G.var("w", shape=(6, 2, 3, 3))
    w3 = G.var("w3", shape=(16, 4, 3, 3))
    dw = G.var("dw", shape=(4, 1, 3, 3))
    vec = G.var("vec", shape=(4,))
    mat = G.var("mat", shape=(3, 4))
    wmat = G.var("wmat", shape=(5, 4))
    stats = [G.var(n, shape=(4,)) for n in ("gamma", "beta", "mean", "var")]
    calls = [
        G.add(mat, vec), G.subtract(vec, mat), G.multiply(mat, vec), G.divide(mat, G.add(G.exp(vec), 1.0)),
        G.nn.relu(mat), G.sigmoid(mat), G.tanh(mat), G.exp(mat), G.nn.bias_add(img, vec),
        G.nn.conv2d(img, w, strides=(2, 1), padding=(1, 0), groups=2), G.nn.depthwise_conv2d(img, dw, padding=1),
        G.nn.dense(mat, wmat), G.nn.matmul(mat, G.transpose(wmat)),
        G.nn.dense_panels(mat, G.const(np.linspace(-1, 1, 24, dtype="float32").reshape(2, 4, 3))), G.nn.batch_norm(img, *stats),
        G.nn.batch_norm_train(img, stats[0], stats[1], epsilon=1e-3),
        G.nn.max_pool2d(img, 2, padding=1), G.nn.avg_pool2d(img, 3, strides=1, padding=1),
        G.nn.global_avg_pool2d(img), G.nn.softmax(mat), G.nn.pad(mat, [(1, 0), (0, 2)], pad_value=3.0),
        G.reshape(img, (4, -1)), G.concatenate([mat, mat], axis=0), G.strided_slice(img, [0, 1], [1, 4], [1, 2]),
        G.sum(img, axis=(2, 3)), G.mean(mat, axis=0, keepdims=True), G.max(mat, axis=1),
        G.annotation.stop_fusion(G.nn.relu(vec)),
        G.erf(G.subtract(mat, 1.0)), G.sqrt(mat), G.rsqrt(mat), G.log(mat), G.abs(G.negative(mat)),
        G.clip(mat, 0.7, 1.2), G.clip(vec, None, 0.9), G.nn.layer_norm(mat, vec, vec),
        G.broadcast_to(vec, (2, 3, 4)), G.take(wmat, G.const(np.array([[4, 0], [9, -2]])), axis=0),
        G.take(mat, G.const(np.array([3, 1], dtype="int32")), axis=1),
        G.nn.conv2d_weight_last(img, G.transpose(G.reshape(w3, (2, 8, 4, 3, 3)), (0, 2, 3, 4, 1)), strides=2,
                                padding=1),
        G.nn.winograd_conv2d(img, np.linspace(-1, 1, 6 * 4 * 9, dtype="float32").reshape(6, 4, 3, 3), 2,
                             padding=(1, 1, 1, 2)),
        G.nn.batch_matmul(G.reshape(img, (4, 6, 5)), G.reshape(G.transpose(img), (4, 5, 6))),
        *quantized_calls(img, mat), *mask_calls(mat, vec),
        G.gather(mat, G.const(np.array([[2, 0, 1, 2], [0, 1, 5, -1]], dtype="int64")), 0),
        G.nn.attention(G.reshape(img, (4, 6, 5)), G.reshape(G.transpose(img), (4, 5, 6)), G.reshape(img, (4, 6, 5)),
                       G.const(np.where(np.eye(6) > 0, -np.inf, 0.5).astype("float32")), 0.5, causal=1),
        G.nn.upsample(img, (9, 10), [1.5, 2.0], "linear"), G.nn.upsample(img, (12, 7)), G.cumsum(img, 2),
        *quantized_calls(img, mat),
    ]
    return [img, w, w3, dw, vec, mat, wmat, *stats], calls


def quantized_calls(img, mat):
    """The quantized ops on the float inputs: quantized, multiplied by packed int8 constants, requantized."""
    q = G.nn.quantize(mat, 0.01, 3)
    qimg = G.nn.quantize(G.reshape(img, (1, 6, 5, 4)), 0.01, 3)                 # NHWC, 4 channels
    packed_dense = G.const((np.arange(20) % 13 - 6).astype(np.int8).reshape(1, 5, 4))
    packed_conv = G.const((np.arange(288) % 17 - 8).astype(np.int8).reshape(3, 3, 1, 8, 4))
    scales, offsets = G.const(np.full(5, 0.01, np.float32)), G.const(np.arange(5, dtype=np.int32))
    dense = G.nn.requantize(G.nn.dense_packed(q, packed_dense), scales, offsets, 2, relu=True)
    return [G.nn.dequantize(dense, 0.1, 2), G.nn.conv2d_nhwc_packed(qimg, packed_conv, padding=1, pad_value=3)]


def mask_calls(mat, vec):
    """The comparison and logic ops, their bool results cast to float32 and weighted into one output (an
    executable takes at most 64 arguments)."""
    above, below = G.greater(mat, vec), G.less_equal(mat, 0.9)
    masks = [G.equal(mat, mat), G.not_equal(vec, 1.0), G.less(mat, vec), G.greater_equal(vec, mat),
             G.logical_and(above, below), G.logical_or(above, G.logical_not(below)), G.logical_xor(above, below),
             G.any(above, 1, keepdims=True), G.all(below, 0, keepdims=True)]
    total = G.where(above, mat, -1.0)
    for k, m in enumerate(masks):
        total = G.add(total, G.multiply(G.cast(m, "float32"), float(2 ** (k + 1))))
    return [total]


@pytest.mark.slow
def test_numpy_evaluation_matches_compiled_kernels(rand):
    inputs, calls = every_op_call()
    f = G.Function(inputs, G.Tuple(calls))
    arrays = [rand(p.tensor_type.shape, low=0.5, high=1.5) for p in inputs]
    compiled = G.build(f, disabled_passes=["fuse_ops"])(*arrays)
    for call, got, want in zip(calls, compiled, G.interpret(f, *arrays)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=call.op_name)


def test_the_cases_cover_every_registered_op():
    from tesched.graph.visit import post_order
    _, calls = every_op_call()
    used = {n.op_name for c in calls for n in post_order(c) if isinstance(n, G.Call)}
    assert used == {op.name for op in all_ops()}


def test_registry_lookups_and_duplicates():
    assert G.get_op("nn.conv2d").pattern is Pattern.OUT_ELEMWISE_FUSABLE
    assert G.get_op("add").pattern is Pattern.BROADCAST and G.get_op("reshape").pattern is Pattern.INJECTIVE
    with pytest.raises(ValueError, match="no op named 'nn.conv3d'"):
        G.get_op("nn.conv3d")
    with pytest.raises(ValueError, match="already registered"):
        register_op("add", Pattern.BROADCAST, lambda a, k: a[0], lambda a, k: a[0], 2)


def test_inferred_types_are_remembered_per_types_and_attributes():
    """A second call of an op on the same types and plain attributes reuses the inferred type; other
    types, attribute values or attribute types infer anew; errors are never remembered."""
    op = G.get_op("nn.max_pool2d")
    calls = []
    original = op.declare

    def counting(args, attrs):
        calls.append(dict(attrs))
        return original(args, attrs)

    counted = op_module.Op(op.name, op.pattern, counting, op.evaluate, op.arity)
    img = op_module.TensorType((1, 2, 8, 8))
    attrs = {"pool_size": (2, 2), "strides": (2, 2), "padding": (0, 0, 0, 0), "ceil_mode": False}
    first = counted.infer([img], attrs)
    assert counted.infer([img], dict(attrs)) == first == op_module.TensorType((1, 2, 4, 4)) and len(calls) == 1
    assert counted.infer([img], {**attrs, "strides": (1, 1)}).shape == (1, 2, 7, 7) and len(calls) == 2
    assert counted.infer([op_module.TensorType((1, 2, 6, 6))], attrs).shape == (1, 2, 3, 3) and len(calls) == 3
    counted.infer([img], {**attrs, "ceil_mode": 0})                              # 0 is not False: inferred again
    assert len(calls) == 4
    assert op_module._inference_key(counted, [img], {**attrs, "table": np.ones(3)}) is None   # arrays: never
    for _ in range(2):
        with pytest.raises(ValueError, match="nn.max_pool2d"):
            counted.infer([img], {**attrs, "pool_size": (9, 9)})
    assert len(calls) == 6
