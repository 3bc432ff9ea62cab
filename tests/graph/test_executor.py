"""build and Executable: fused and unfused executables against references, kernels, inputs, tracing."""
import numpy as np
import pytest

from tesched import graph as G

from .helpers import ATOL, RTOL, lstm, lstm_reference, vgg_block, vgg_reference

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


@pytest.fixture(scope="module")
def vgg():
    f, params = vgg_block()
    return f, params, G.build(f, params=params), G.build(f, params=params, disabled_passes=["fuse_ops"])


def test_vgg_block_fused_and_unfused_match_the_reference(vgg, rand):
    _, params, fused, unfused = vgg
    x = rand((1, 4, 6, 6), low=-1)
    ref = vgg_reference(x, params)
    np.testing.assert_allclose(fused(x), ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(unfused(data=x), ref, rtol=RTOL, atol=ATOL)


def test_one_kernel_per_group_with_the_conv_inside_the_epilogue(vgg):
    _, _, fused, unfused = vgg
    assert [k.name for k in fused.kernels] == ["fused_nn_conv2d_add_nn_relu"]
    assert [k.name for k in unfused.kernels] == ["fused_nn_conv2d", "fused_add", "fused_nn_relu"]
    ir = str(fused.kernels[0].lowered)
    assert ir.index("produce relu") < ir.index("produce conv2d")  # conv produced in the relu's loops
    assert "int fused_nn_conv2d_add_nn_relu(" in fused.kernels[0].c_source
    assert fused.fusion_report.unfused == [] and unfused.fusion_report is None


def test_lstm_fused_and_unfused_give_pytorch_results(rand):
    f, params = lstm()
    x, h, c = rand((2, 3), low=-1), rand((2, 4), low=-1), rand((2, 4), low=-1)
    h_ref, c_ref = lstm_reference(x, h, c, params)
    for disabled, kernels in (((), 1), (("fuse_ops",), 17)):
        exe = G.build(f, params=params, disabled_passes=disabled)
        assert len(exe.kernels) == kernels
        h_next, c_next = exe(x, h, c)
        np.testing.assert_allclose(h_next, h_ref, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(c_next, c_ref, rtol=RTOL, atol=ATOL)


def test_rules_given_to_build_change_the_kernels(rand):
    f, params = vgg_block()
    exe = G.build(f, params=params, rules=G.FusionRules(never_fuse={"add"}))
    assert [k.name for k in exe.kernels] == ["fused_nn_conv2d", "fused_add", "fused_nn_relu"]
    x = rand((1, 4, 6, 6), low=-1)
    np.testing.assert_allclose(exe(x), vgg_reference(x, params), rtol=RTOL, atol=ATOL)


def test_results_are_fresh_arrays_and_intermediates_are_reused(vgg, rand):
    _, _, _, unfused = vgg
    x1, x2 = rand((1, 4, 6, 6), low=-1), rand((1, 4, 6, 6), low=-1)
    first = unfused(x1)
    kept = first.copy()
    second = unfused(x2)
    assert second is not first
    np.testing.assert_array_equal(first, kept)


def test_inputs_are_checked(vgg):
    _, _, fused, _ = vgg
    with pytest.raises(ValueError, match=r"input data: expected shape \(1, 4, 6, 6\)"):
        fused(np.zeros((1, 4, 6, 5), "float32"))
    with pytest.raises(TypeError, match="input data: expected dtype float32"):
        fused(np.zeros((1, 4, 6, 6)))
    with pytest.raises(TypeError, match="missing inputs: data"):
        fused()


def test_results_that_are_inputs_or_constants_are_copies():
    x = G.var("x", shape=(2,))
    c = G.const(np.arange(2, dtype="float32"))
    exe = G.build(G.Function([x], G.Tuple([x, c, G.nn.relu(x)])))
    xa = np.array([-1, 2], "float32")
    out_x, out_c, out_relu = exe(xa)
    assert out_x is not xa and not np.shares_memory(out_c, c.data)
    np.testing.assert_array_equal(out_relu, [0, 2])


def test_trace_prints_the_graph_after_each_pass(capsys):
    f, params = vgg_block()
    G.build(f, params=params, trace=True)
    printed = capsys.readouterr().out
    headers = [line for line in printed.splitlines() if line.startswith("# after")]
    assert headers == [f"# after {name}" for name in G.passes.DEFAULT_PASSES]


def test_benchmark_and_non_function_inputs(vgg, rand):
    _, _, fused, _ = vgg
    result = fused.benchmark(rand((1, 4, 6, 6)), repeat=3)
    assert result.repeat == 3 and result.min <= result.median
    with pytest.raises(TypeError, match="expected a graph Function"):
        G.build(G.var("x", shape=(2,)))


def test_nested_tuples_and_fields_of_tuples():
    x = G.var("x", shape=(2,))
    inner = G.Tuple([G.nn.relu(x), G.tanh(x)])
    f = G.Function([x], G.Tuple([G.TupleGetItem(inner, 1), inner]))
    exe = G.build(f, disabled_passes=["fold_constant"])
    xa = np.array([-1, 2], "float32")
    tanh, (relu, tanh_again) = exe(xa)
    np.testing.assert_allclose(tanh, np.tanh(xa), rtol=RTOL)
    np.testing.assert_array_equal(relu, [0, 2])
    np.testing.assert_array_equal(tanh, tanh_again)


def test_prepared_runs_reuse_their_result_arrays_and_read_inputs_in_place(rand):
    f, params = lstm()
    x, h, c = rand((2, 3), low=-1), rand((2, 4), low=-1), rand((2, 4), low=-1)
    for disabled in ((), ("fuse_ops",)):
        run = G.build(f, params=params, disabled_passes=disabled).prepare(x, h, c=c)
        first = run()
        for got, want in zip(first, lstm_reference(x, h, c, params)):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        x[...] = rand((2, 3), low=-1)
        second = run()
        assert all(a is b for a, b in zip(first, second))
        for got, want in zip(second, lstm_reference(x, h, c, params)):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_torch_tensors_in_give_torch_tensors_out(vgg, rand):
    torch = pytest.importorskip("torch")
    _, params, fused, _ = vgg
    x = rand((1, 4, 6, 6), low=-1)
    out = fused(torch.from_numpy(x))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), vgg_reference(x, params), rtol=RTOL, atol=ATOL)
    f, lstm_params = lstm()
    cell = G.build(f, params=lstm_params)
    xs = [rand((2, 3), low=-1), rand((2, 4), low=-1), rand((2, 4), low=-1)]
    h_next, c_next = cell(*map(torch.from_numpy, xs))
    assert isinstance(h_next, torch.Tensor) and isinstance(c_next, torch.Tensor)
    prepared = fused.prepare(data=torch.from_numpy(x))
    assert isinstance(prepared(), torch.Tensor)


def test_intermediate_buffers_share_memory_by_liveness(rand):
    x = G.var("x", shape=(64,))
    y = x
    for _ in range(6):
        y = G.tanh(G.nn.relu(y))
    exe = G.build(G.Function([x], y), disabled_passes=["fuse_ops"])
    plan = exe.memory_plan
    assert len(plan.buffers) == 11 and plan.peak_bytes == 2 * 256 and plan.unshared_bytes == 11 * 256
    xa = rand((64,), low=-1)
    want = xa.astype(np.float64)
    for _ in range(6):
        want = np.tanh(np.maximum(want, 0))
    np.testing.assert_allclose(exe(xa), want, rtol=RTOL, atol=ATOL)


def test_plain_calls_reuse_only_results_nobody_holds(rand):
    x = G.var("x", shape=(8,))
    exe = G.build(G.Function([x], G.exp(x)))
    xa = rand((8,))
    held = exe(xa)
    view = held[2:]
    del held
    outputs = [exe(xa) for _ in range(4)]
    assert not any(np.shares_memory(view, o) for o in outputs)
    for o in outputs:
        np.testing.assert_allclose(o, np.exp(xa), rtol=RTOL)


def test_constants_are_stored_aligned_to_a_cache_line(rand):
    """A constant weight NumPy placed 4 bytes past a cache line is copied to an aligned one (SIMD loads
    that straddle lines are slower); the kernel reads the copy and computes the same values."""
    from tesched.driver.call import address
    from tesched.graph.executor import aligned_constant
    from tesched.graph.memory import ALIGNMENT
    storage = np.empty(16 * 8 + ALIGNMENT // 4 + 1, np.float32)
    start = (-address(storage) % ALIGNMENT) // 4 + 1
    weight = storage[start:start + 16 * 8].reshape(16, 8)
    weight[...] = rand((16, 8), low=-1)
    assert address(weight) % ALIGNMENT == 4
    copy = aligned_constant(weight)
    assert address(copy) % ALIGNMENT == 0 and copy.flags.c_contiguous
    np.testing.assert_array_equal(copy, weight)
    assert aligned_constant(copy) is copy
    strided = aligned_constant(np.asfortranarray(copy))
    assert strided.flags.c_contiguous and address(strided) % ALIGNMENT == 0
    x = G.var("x", shape=(1, 8))
    exe = G.build(G.Function([x], G.tanh(G.nn.dense(x, G.const(weight)))))
    data = rand((1, 8), low=-1)
    np.testing.assert_allclose(exe(data), np.tanh(data @ weight.T), rtol=RTOL, atol=ATOL)
    assert all(address(a) % ALIGNMENT == 0 for a in exe._keep[1:-1])     # the arena, the constants, the sizes


def test_a_set_of_several_results_is_reused_only_when_none_of_them_is_held(rand):
    x = G.var("x", shape=(8,))
    exe = G.build(G.Function([x], G.Tuple([G.exp(x), G.tanh(x)])))
    xa = rand((8,))
    first, second = exe(xa)
    del first
    outputs = [exe(xa) for _ in range(3)]
    assert not any(np.shares_memory(second, o) for pair in outputs for o in pair)
    for exp, tanh in outputs:
        np.testing.assert_allclose(exp, np.exp(xa), rtol=RTOL)
        np.testing.assert_allclose(tanh, np.tanh(xa), rtol=RTOL, atol=ATOL)
    del outputs, second
    released = exe(xa)
    kept = released[0].__array_interface__["data"][0]
    del released
    assert exe(xa)[0].__array_interface__["data"][0] == kept     # a free set is reused: no allocation


def test_a_fused_group_takes_any_number_of_inputs(rand):
    """Thirty inputs fused into one kernel (once over the C call path's old limit of 24 words)."""
    xs = [G.var(f"x{k}", shape=(2, 3)) for k in range(30)]
    total = xs[0]
    for k, x in enumerate(xs[1:], start=1):
        total = G.add(total, G.multiply(x, G.const(np.float32(k + 1))))
    exe = G.build(G.Function(xs, G.tanh(total)))
    assert len(exe.kernels) == 1
    data = [rand((2, 3), low=-0.1, high=0.1) for _ in xs]
    expected = np.tanh(sum((d.astype(np.float64) * (k + 1) for k, d in enumerate(data)), np.zeros((2, 3))))
    np.testing.assert_allclose(exe(*data), expected, rtol=RTOL, atol=ATOL)


# dynamic dimensions -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dynamic_mlp():
    """An MLP on (batch, 16), batch in [1, 64], built once; its weights."""
    rng = np.random.default_rng(5)
    w1, b1 = rng.standard_normal((32, 16)).astype("f"), rng.standard_normal(32).astype("f")
    w2 = rng.standard_normal((8, 32)).astype("f")
    x = G.var("x", shape=(G.Dim("batch", 1, 64), 16))
    hidden = G.nn.relu(G.nn.bias_add(G.nn.dense(x, G.const(w1)), G.const(b1)))
    return G.build(G.Function([x], G.nn.softmax(G.nn.dense(hidden, G.const(w2))))), (w1, b1, w2)


def _mlp_reference(x, weights):
    w1, b1, w2 = (w.astype(np.float64) for w in weights)
    logits = np.maximum(x @ w1.T + b1, 0) @ w2.T
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_a_dynamic_batch_builds_once_and_runs_at_any_size_in_range(dynamic_mlp, rand, monkeypatch):
    from tesched.driver import build as build_module
    exe, weights = dynamic_mlp
    assert all([p.name for p in k.kernel.signature.params] == ["batch"] for k in exe.kernels)
    monkeypatch.setattr(build_module, "compile_module", lambda *a, **k: pytest.fail("compiled at call time"))
    for n in (1, 13, 64, 2):
        x = rand((n, 16), low=-1)
        np.testing.assert_allclose(exe(x), _mlp_reference(x, weights), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(exe(x=x), _mlp_reference(x, weights), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(exe.prepare(x)(), _mlp_reference(x, weights), rtol=1e-3, atol=1e-4)


def test_a_dynamic_size_outside_its_range_raises_naming_the_dimension(dynamic_mlp, rand):
    exe, _ = dynamic_mlp
    for n in (65, 0):
        with pytest.raises(ValueError, match=rf"dimension 'batch' = {n} is outside its declared range \[1, 64\]"):
            exe(np.zeros((n, 16), np.float32))
    with pytest.raises(ValueError, match=r"input x: expected shape \(batch, 16\), got \(3, 15\)"):
        exe(x=rand((3, 15)))


def test_a_dynamic_batch_conv_and_two_inputs_sharing_the_dim(rand):
    batch = G.Dim("n", 1, 5)
    x, y = G.var("x", shape=(batch, 3, 6, 6)), G.var("y", shape=(batch, 4, 6, 6))
    w = rand((4, 3, 3, 3), low=-1)
    exe = G.build(G.Function([x, y], G.nn.relu(G.add(G.nn.conv2d(x, G.const(w), padding=1), y))))
    for n in (1, 5, 3):
        a, b = rand((n, 3, 6, 6), low=-1), rand((n, 4, 6, 6), low=-1)
        padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
        conv = sum(np.einsum("nchw,kc->nkhw", padded[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
                   for i in range(3) for j in range(3))
        np.testing.assert_allclose(exe(a, b), np.maximum(conv + b, 0), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="input 1: axis 0 is dimension 'n' = 3, but an earlier input set it to 2"):
        exe(rand((2, 3, 6, 6)), rand((3, 4, 6, 6)))


def test_dynamic_inputs_refuse_export_and_other_schedules(dynamic_mlp, tmp_path):
    from tesched.errors import BuildError
    exe, _ = dynamic_mlp
    with pytest.raises(BuildError, match=r"input x has the dynamic shape Tensor\[\(batch, 16\), float32\]"):
        exe.export_library(tmp_path / "model.so")
    with pytest.raises(BuildError, match=r"input x has a dynamic shape .*not schedule='auto'"):
        G.build(exe.pass_history[0][1], schedule="auto")


def test_a_dynamic_batch_dense_padded_to_whole_panels_is_sliced_back(rand):
    """20 output columns are no whole number of SIMD vectors: the weight is padded and the product
    sliced back, along a dynamic row axis taken whole."""
    w = rand((20, 24), low=-1)
    x = G.var("x", shape=(G.Dim("rows", 1, 40), 24))
    exe = G.build(G.Function([x], G.nn.dense(x, G.const(w))))
    for n in (1, 23, 40):
        a = rand((n, 24), low=-1)
        np.testing.assert_allclose(exe(a), a @ w.T, rtol=1e-3, atol=1e-4)
