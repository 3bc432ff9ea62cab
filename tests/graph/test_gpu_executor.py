"""Graphs built for GPU targets: a small CNN and an MLP on pocl against NumPy, device and torch arrays in
and out, the graph ops through the default GPU schedules, and what a GPU build refuses."""
import re

import numpy as np
import pytest

from tesched import graph as G
from tesched.errors import BuildError
from tests.gpu_helpers import need_cuda_device, need_nvrtc, need_opencl

from .helpers import ATOL, RTOL, wee_net, wee_net_reference
from .test_op import every_op_call


def mlp(rng):
    """``(function, reference)`` of dense -> bias -> relu -> dense -> bias -> softmax, weights constant."""
    w1, b1 = (rng.standard_normal((48, 20)) / 5).astype("float32"), rng.standard_normal(48).astype("float32")
    w2, b2 = (rng.standard_normal((10, 48)) / 7).astype("float32"), rng.standard_normal(10).astype("float32")
    x = G.var("x", shape=(3, 20))
    h = G.nn.relu(G.nn.bias_add(G.nn.dense(x, G.const(w1)), G.const(b1)))
    y = G.nn.softmax(G.nn.bias_add(G.nn.dense(h, G.const(w2)), G.const(b2)))

    def reference(a):
        z = np.maximum(a.astype(np.float64) @ w1.T + b1, 0) @ w2.T + b2
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    return G.Function([x], y), reference


@pytest.fixture(scope="module")
def gpu_mlp():
    need_opencl()
    f, reference = mlp(np.random.default_rng(4))
    return G.build(f, target="opencl"), reference


def test_cnn_builds_for_opencl_and_matches_numpy():
    need_opencl()
    f, params = wee_net(channels=6, size=10)
    exe = G.build(f, params=params, target="opencl")
    assert type(exe).__name__ == "GpuExecutable" and len(exe.kernels) == 4     # conv, conv, pool, dense
    x = np.random.default_rng(2).standard_normal((1, 3, 10, 10)).astype("float32")
    np.testing.assert_allclose(exe(x), wee_net_reference(x, params), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(exe(data=x), wee_net_reference(x, params), rtol=RTOL, atol=ATOL)


def test_cnn_with_auto_schedules_matches_numpy():
    """The two conv -> batch_norm -> relu blocks are one group and one kernel (the first convolution per
    block of the second), then the pooling and the dense layer."""
    need_opencl()
    f, params = wee_net(channels=6, size=10)
    exe = G.build(f, params=params, target="opencl", schedule="auto")
    assert [g.name for g in exe.kernels] == ["fused_nn_conv2d_add_nn_relu_nn_conv2d_add_nn_relu",
                                             "fused_nn_global_avg_pool2d", "fused_nn_dense_nn_bias_add"]
    assert len(exe.kernels[0].kernel.gpu.kernels) == 1 and "__local float" in exe.kernels[0].kernel.source
    x = np.random.default_rng(3).standard_normal((1, 3, 10, 10)).astype("float32")
    np.testing.assert_allclose(exe(x), wee_net_reference(x, params), rtol=RTOL, atol=ATOL)


def test_mlp_matches_numpy_with_host_device_and_torch_arrays(gpu_mlp):
    exe, reference = gpu_mlp
    a = np.random.default_rng(5).standard_normal((3, 20)).astype("float32")
    np.testing.assert_allclose(exe(a), reference(a), rtol=RTOL, atol=1e-6)
    cla = pytest.importorskip("pyopencl.array")
    from tesched.driver.gpu import opencl_queue
    on_device = exe(cla.to_device(opencl_queue(), a))
    assert isinstance(on_device, cla.Array)
    np.testing.assert_allclose(on_device.get(), reference(a), rtol=RTOL, atol=1e-6)
    torch = pytest.importorskip("torch")
    out = exe(torch.from_numpy(a))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), reference(a), rtol=RTOL, atol=1e-6)


def test_bad_inputs_are_refused_by_name(gpu_mlp):
    exe, _ = gpu_mlp
    with pytest.raises(ValueError, match="input x"):
        exe(np.zeros((4, 20), np.float32))
    with pytest.raises(TypeError, match="missing inputs: x"):
        exe()


def test_a_gpu_build_keeps_the_declared_weight_layouts():
    """alter_op_layout packs weights for the CPU's SIMD registers; a GPU build skips it (no pass history
    entry, the dense ops read W as declared) and still matches NumPy."""
    need_opencl()
    f, reference = mlp(np.random.default_rng(7))
    cpu, gpu = G.build(f), G.build(f, target="opencl")
    assert "alter_op_layout" in [name for name, _ in cpu.pass_history]
    assert "alter_op_layout" not in [name for name, _ in gpu.pass_history]
    assert "nn.dense_panels" in str(cpu.pass_history[-1][1])
    assert "nn.dense_panels" not in str(gpu.pass_history[-1][1]) and "nn.dense(" in str(gpu.pass_history[-1][1])
    x = np.random.default_rng(8).standard_normal((3, 20)).astype("float32")
    np.testing.assert_allclose(gpu(x), reference(x), rtol=RTOL, atol=ATOL)


def test_cnn_compiles_for_cuda():
    need_nvrtc()
    f, params = wee_net(channels=6, size=10)
    exe = G.build(f, params=params, target="cuda")
    assert len(exe.kernels) == 4 and all(group.kernel.ptx for group in exe.kernels)


@pytest.mark.gpu
def test_cnn_runs_on_a_cuda_gpu():
    need_cuda_device()
    f, params = wee_net(channels=6, size=10)
    exe = G.build(f, params=params, target="cuda")
    x = np.random.default_rng(2).standard_normal((1, 3, 10, 10)).astype("float32")
    np.testing.assert_allclose(exe(x), wee_net_reference(x, params), rtol=RTOL, atol=ATOL)


def test_cpu_only_schedule_choices_are_refused_for_a_gpu_target():
    f, _ = mlp(np.random.default_rng(0))
    with pytest.raises(BuildError, match="schedule='tuned' is for CPU targets; opencl takes the default GPU"):
        G.build(f, target="opencl", schedule="tuned", tuning_db="unused.json")


# one op of each kind the default GPU schedules meet (nn.conv2d: grouped and depthwise); every op: --slow
REPRESENTATIVE = {"add", "nn.bias_add", "nn.conv2d", "nn.conv2d_nhwc_packed", "nn.dense", "nn.max_pool2d",
                  "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.softmax", "nn.layer_norm", "concatenate", "take",
                  "sum", "nn.attention", "nn.upsample", "cumsum"}


def test_representative_graph_ops_on_opencl_match_their_numpy_evaluation(rand):
    ops_on_opencl(rand, REPRESENTATIVE)


@pytest.mark.slow
def test_every_graph_op_on_opencl_matches_its_numpy_evaluation(rand):
    ops_on_opencl(rand, None)


def ops_on_opencl(rand, names):
    """Each call of ``every_op_call`` (those of the ops ``names``, or all) its own kernel on OpenCL, vs
    the graph's NumPy evaluation."""
    need_opencl()
    inputs, calls = every_op_call()
    if names is not None:
        calls = [c for c in calls if c.op_name in names]
        assert {c.op_name for c in calls} == names
    f = G.Function(inputs, G.Tuple(calls))
    arrays = [rand(p.tensor_type.shape, low=0.5, high=1.5) for p in inputs]
    compiled = G.build(f, disabled_passes=["fuse_ops"], target="opencl")(*arrays)
    for call, got, want in zip(calls, compiled, G.interpret(f, *arrays)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=call.op_name)


def test_blocked_and_winograd_convolutions_get_shared_and_register_tiles_and_match_numpy(rand):
    """conv2d_weight_last's and Winograd's blocked layouts are tiled like any convolution (their register
    tiles at a block loop fused over several axes); nothing falls back to a thread per element."""
    need_opencl()
    img = G.var("img", shape=(2, 4, 6, 5))
    w3 = G.var("w3", shape=(16, 4, 3, 3))
    blocked = G.nn.conv2d_weight_last(img, G.transpose(G.reshape(w3, (2, 8, 4, 3, 3)), (0, 2, 3, 4, 1)), strides=2,
                                      padding=1)
    winograd = G.nn.winograd_conv2d(img, np.linspace(-1, 1, 6 * 4 * 9, dtype="float32").reshape(6, 4, 3, 3), 2,
                                    padding=(1, 1, 1, 2))
    for out in (blocked, winograd):
        f = G.Function([img, w3], out) if out is blocked else G.Function([img], out)
        arrays = [rand(p.tensor_type.shape, low=0.5, high=1.5) for p in f.params]
        exe = G.build(f, disabled_passes=["fuse_ops"], target="opencl")
        conv = exe.kernels[-1].kernel.source
        assert "__local float" in conv and re.search(r"\n\s+float \w+_local\[\d+\];", conv), conv
        np.testing.assert_allclose(exe(*arrays), G.interpret(f, *arrays), rtol=RTOL, atol=ATOL)


def test_auto_schedules_put_two_convolutions_in_a_row_in_one_kernel_and_match_numpy(rand):
    """conv -> relu -> conv -> bias -> relu: one group and one kernel with schedule='auto' (the first
    convolution per block of the second), two groups with the default schedules."""
    need_opencl()
    rng = np.random.default_rng(9)
    x = G.var("x", shape=(1, 4, 10, 12))
    w1, w2 = (G.const(rng.uniform(-0.5, 0.5, (4, 4, 3, 3)).astype("float32")) for _ in range(2))
    y = G.nn.relu(G.nn.bias_add(G.nn.conv2d(G.nn.relu(G.nn.conv2d(x, w1, padding=1)), w2, padding=1),
                                G.const(rng.uniform(-1, 1, 4).astype("float32"))))
    f = G.Function([x], y)
    exe = G.build(f, target="opencl", schedule="auto")
    assert [ops for _, ops in exe.fusion_report.groups] == [["nn.conv2d", "nn.relu", "nn.conv2d", "nn.bias_add",
                                                            "nn.relu"]]
    [group] = exe.kernels
    assert len(group.kernel.gpu.kernels) == 1 and "__local float" in group.kernel.source
    a = rand((1, 4, 10, 12), low=-1)
    np.testing.assert_allclose(exe(a), G.interpret(f, a), rtol=RTOL, atol=ATOL)
    assert len(G.build(f, target="opencl").fusion_report.groups) == 2
