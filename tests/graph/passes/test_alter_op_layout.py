"""alter_op_layout: constant dense weights packed in column panels (padded with zero columns to whole
vectors, or, narrower than a vector, transposed for the GEMM schedule), 3x3 convolutions to Winograd, others to blocked weights."""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched import graph as G
from tesched.graph.passes import alter_op_layout
from tesched.nn import pack_dense_panels
from tesched.target import current_target
from targets import AVX512, pinned

from ..helpers import ATOL, RTOL, op_names

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def dense_graph(rows, weight):
    x = G.var("x", shape=(rows, weight.shape[1]))
    return G.Function([x], G.nn.relu(G.nn.dense(x, G.const(weight))))


LANES = ts.Target("host").lanes("float32")   # the tests build for the host (pytestmark)


def constants_of(f):
    return [n for n in G.visit.post_order(f.body) if isinstance(n, G.Constant)]


@pytest.mark.parametrize("rows", [1, 16])
def test_constant_weights_are_packed_in_panels_at_build_time(rows, rand):
    weight = rand((4 * LANES, 9), low=-1)
    f = dense_graph(rows, weight)
    altered = alter_op_layout(f)
    assert op_names(altered) == ["nn.dense_panels", "nn.relu"]
    (const,) = constants_of(altered)
    np.testing.assert_array_equal(const.data, pack_dense_panels(weight))
    assert const.data.shape == (2, 9, 2 * LANES)
    x = rand((rows, 9), low=-1)
    np.testing.assert_allclose(G.interpret(altered, x), G.interpret(f, x), rtol=RTOL, atol=ATOL)
    exe = G.build(f)
    assert [k.name for k in exe.kernels] == ["fused_nn_dense_panels_nn_relu"]
    np.testing.assert_allclose(exe(x), np.maximum(x @ weight.T, 0), rtol=RTOL, atol=ATOL)
    assert ".local" not in str(exe.kernels[0].lowered)      # no packing copy at run time


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.sampled_from([1, 2, 5, 8, 24]), columns=st.sampled_from([LANES, 2 * LANES, 5 * LANES, 6, 40]),
       reduced=st.integers(1, 48), constant=st.booleans())
@example(rows=1, columns=5 * LANES, reduced=7, constant=True)        # panels of one vector
@example(rows=8, columns=40, reduced=3, constant=True)                # no panel of whole vectors
def test_random_dense_layers_match_numpy(rows, columns, reduced, constant, rand):
    """Packed panels, the transposed-weight GEMM, the GEMV on the original layout, and a variable weight
    (left as ``nn.dense``, read as given at each call) all compute ``relu(x @ w.T + b)``."""
    weight, bias = rand((columns, reduced), low=-1), rand((columns,), low=-1)
    x = G.var("x", shape=(rows, reduced))
    w = G.const(weight) if constant else G.var("w", shape=weight.shape)
    f = G.Function([x] if constant else [x, w], G.nn.relu(G.nn.dense(x, w, G.const(bias))))
    exe = G.build(f)
    data = rand((rows, reduced), low=-1)
    got = exe(data) if constant else exe(data, weight)
    want = np.maximum(data.astype(np.float64) @ weight.T.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * np.sqrt(reduced))
    packed = constant and (columns % LANES == 0 or columns > LANES)      # padded to whole vectors when wider
    assert ("dense_panels" in exe.kernels[0].name) == packed


@pytest.mark.parametrize("rows", [1, 16])
def test_columns_of_no_whole_vector_are_padded_and_sliced_back(rows, rand):
    """2.5 vectors of output columns: zero columns up to 4 vectors (two panels), the product sliced back, all
    in one kernel."""
    columns = 2 * LANES + LANES // 2
    weight = rand((columns, 9), low=-1)
    f = dense_graph(rows, weight)
    altered = alter_op_layout(f)
    assert op_names(altered) == ["nn.dense_panels", "strided_slice", "nn.relu"]
    (const,) = constants_of(altered)
    assert const.data.shape == (2, 9, 2 * LANES)
    x = rand((rows, 9), low=-1)
    np.testing.assert_allclose(G.interpret(altered, x), G.interpret(f, x), rtol=RTOL, atol=ATOL)
    exe = G.build(f)
    assert [k.name for k in exe.kernels] == ["fused_nn_dense_panels_strided_slice_nn_relu"]
    np.testing.assert_allclose(exe(x), np.maximum(x @ weight.T, 0), rtol=RTOL, atol=ATOL)


def test_many_rows_become_a_gemm_over_the_transposed_weight(rand):
    """Six output columns fill no SIMD vector: no panels, the GEMM schedule on the transposed weight."""
    weight = rand((6, 5), low=-1)
    f = dense_graph(16, weight)
    altered = alter_op_layout(f)
    assert op_names(altered) == ["nn.matmul", "nn.relu"]
    (const,) = constants_of(altered)
    np.testing.assert_array_equal(const.data, weight.T)
    x = rand((16, 5), low=-1)
    np.testing.assert_allclose(G.interpret(altered, x), G.interpret(f, x), rtol=RTOL, atol=ATOL)
    exe = G.build(f)
    assert [k.name for k in exe.kernels] == ["fused_nn_matmul_nn_relu"]
    np.testing.assert_allclose(exe(x), np.maximum(x @ weight.T, 0), rtol=RTOL, atol=ATOL)


def test_few_rows_keep_the_gemv_and_variable_weights_are_left_alone(rand):
    assert op_names(alter_op_layout(dense_graph(2, rand((6, 5))))) == ["nn.dense", "nn.relu"]
    x, w = G.var("x", shape=(16, 5)), G.var("w", shape=(6, 5))
    f = G.Function([x, w], G.nn.dense(x, w))
    assert op_names(alter_op_layout(f)) == ["nn.dense"]


def residual_block(rand, channels=16, size=28):
    x = G.var("x", shape=(1, channels, size, size))
    stats = [G.const(rand((channels,), low=0.5, high=1.5)) for _ in range(4)]
    w1, w2 = (G.const(rand((channels, channels, 3, 3), low=-0.2, high=0.2)) for _ in range(2))
    y = G.nn.relu(G.nn.batch_norm(G.nn.conv2d(x, w1, padding=1), *stats))
    y = G.nn.relu(G.add(G.nn.conv2d(y, w2, padding=1), x))
    return G.Function([x], y)


def test_3x3_convolutions_become_winograd_with_the_epilogue_on_the_tiles(rand):
    f = residual_block(rand)
    altered = alter_op_layout(G.optimize(f, disabled_passes=["alter_op_layout", "fuse_ops"]))
    names = op_names(altered)
    assert names.count("nn.winograd_conv2d") == 2 and "nn.conv2d" not in names
    x = rand((1, 16, 28, 28), low=-1)
    np.testing.assert_allclose(G.interpret(altered, x), G.interpret(f, x), rtol=1e-4, atol=1e-4)
    exe = G.build(f)
    assert [k.name for k in exe.kernels] == ["fused_nn_winograd_conv2d_add_nn_relu",
                                             "fused_nn_winograd_conv2d_add_nn_relu_1"]
    np.testing.assert_allclose(exe(x), G.interpret(f, x), rtol=1e-4, atol=1e-4)


def test_fusion_rules_turn_winograd_off_and_small_layers_keep_direct_convolution(rand):
    f = residual_block(rand)
    assert "nn.winograd_conv2d" not in op_names(alter_op_layout(f, G.FusionRules(winograd=False)))
    assert "nn.winograd_conv2d" not in op_names(alter_op_layout(residual_block(rand, channels=4)))
    exe = G.build(f, rules=G.FusionRules(winograd=False))
    assert len(exe.kernels) == 2 and not any("winograd" in k.name for k in exe.kernels)


def test_strided_and_narrow_convolutions_store_their_weights_output_channels_last(rand):
    x = G.var("x", shape=(1, 4, 10, 10))
    w = rand((16, 4, 3, 3), low=-1)
    f = G.Function([x], G.nn.relu(G.nn.conv2d(x, G.const(w), strides=2, padding=1)))
    with ts.Target(AVX512):                    # the layouts chosen for 16 float lanes
        altered = alter_op_layout(f)
    assert op_names(altered) == ["nn.conv2d_weight_last", "nn.relu"]
    (const,) = [n for n in G.visit.post_order(altered.body) if isinstance(n, G.Constant)]
    np.testing.assert_array_equal(const.data, w.reshape(1, 16, 4, 3, 3).transpose(0, 2, 3, 4, 1))
    xa = rand((1, 4, 10, 10), low=-1)
    np.testing.assert_allclose(G.build(f)(xa), G.interpret(f, xa), rtol=RTOL, atol=ATOL)
    odd_channels = G.Function([x], G.nn.conv2d(x, G.const(rand((12, 4, 3, 3))), strides=2))
    with ts.Target(AVX512):
        assert op_names(alter_op_layout(odd_channels)) == ["nn.conv2d"]


def test_ops_after_a_winograd_view_move_onto_the_tiles_only_when_they_keep_their_meaning(rand):
    x = G.var("x", shape=(1, 16, 28, 28))
    conv = G.nn.conv2d(x, G.const(rand((16, 16, 3, 3), low=-0.2, high=0.2)), padding=1)
    stats = [G.const(rand((16,), low=0.5, high=1.5)) for _ in range(4)]
    by_row = G.const(rand((28,), low=-1))                    # NumPy broadcasting along the width
    y = G.add(G.nn.batch_norm(conv, *stats), by_row)
    f = G.Function([x], G.nn.softmax(G.tanh(y), axis=3))
    altered = alter_op_layout(f)
    assert op_names(altered)[:4] == ["nn.winograd_conv2d", "nn.batch_norm", "add", "tanh"]
    xa = rand((1, 16, 28, 28), low=-1)
    np.testing.assert_allclose(G.interpret(altered, xa), G.interpret(f, xa), rtol=1e-4, atol=1e-5)


def pointwise_block(rand, channels=16, out_channels=24, size=28, batch=1):
    """conv1x1 -> batch_norm -> + residual (a 1x1 projection of ``x``) -> relu, constant weights; the
    function and its arrays (the two weights, then gamma, beta, mean, var)."""
    x = G.var("x", shape=(batch, channels, size, size))
    arrays = [rand((out_channels, channels, 1, 1), low=-0.3, high=0.3) for _ in range(2)] + \
        [rand((out_channels,), low=0.5, high=1.5) for _ in range(4)]
    w1, w2, *stats = (G.const(a) for a in arrays)
    y = G.nn.batch_norm(G.nn.conv2d(x, w1), *stats)
    return G.Function([x], G.nn.relu(G.add(y, G.nn.conv2d(x, w2)))), arrays


def numpy_pointwise(x, w):
    return np.einsum("kc,nchw->nkhw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))


def test_pointwise_convolutions_read_rows_that_fill_whole_vectors(rand):
    """An image of 28-wide rows is read as rows of 16 (AVX2: 4 channels x two vectors of 8 floats; AVX-512:
    8 channels x one vector of 16, where whole rows would reload each image vector per channel from L2):
    both 1x1 convolutions and the epilogue (batch norm, residual add, relu) run on the viewed layout, and
    the graph computes what NumPy does."""
    f, (w1, w2, gamma, beta, mean, var) = pointwise_block(rand, batch=2)
    for target in ("x86-64-avx2", AVX512):
        with ts.Target(target):
            altered = alter_op_layout(G.optimize(f, disabled_passes=["alter_op_layout", "fuse_ops"]))
        names = op_names(altered)
        assert names.count("nn.conv2d") == 2 and names[-1] == "reshape"
        convs = [n for n in G.visit.post_order(altered.body) if isinstance(n, G.Call) and n.op_name == "nn.conv2d"]
        assert all(c.args[0].tensor_type.shape == (2, 16, 49, 16) for c in convs)
    xa = rand((2, 16, 28, 28), low=-1)
    scale = (gamma / np.sqrt(var + 1e-5))[:, None, None]
    bn = (numpy_pointwise(xa, w1) - mean[:, None, None]) * scale + beta[:, None, None]
    code, runnable = pinned(lambda: G.build(f), "x86-64-avx2")
    assert len(code.kernels) == 2 and all("ts_f32x8" in k.c_source for k in code.kernels)
    np.testing.assert_allclose(runnable(xa), np.maximum(bn + numpy_pointwise(xa, w2), 0), rtol=1e-4, atol=1e-4)


def test_a_pointwise_output_read_twice_is_viewed_back_and_matches_numpy(rand):
    x = G.var("x", shape=(1, 8, 28, 28))
    w = rand((16, 8, 1, 1), low=-1)
    conv = G.nn.conv2d(x, G.const(w))
    f = G.Function([x], G.add(G.nn.relu(conv), G.nn.global_avg_pool2d(conv)))
    with ts.Target("x86-64-avx2"):
        altered = alter_op_layout(f)
    assert op_names(altered)[:3] == ["reshape", "nn.conv2d", "reshape"]
    xa = rand((1, 8, 28, 28), low=-1)
    y = numpy_pointwise(xa, w)
    _, runnable = pinned(lambda: G.build(f), "x86-64-avx2")
    np.testing.assert_allclose(runnable(xa), np.maximum(y, 0) + y.mean(axis=(2, 3), keepdims=True),
                               rtol=1e-5, atol=1e-5)
