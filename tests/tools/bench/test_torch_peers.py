"""The runtimes a model is timed against (eager, torch.compile, ONNX Runtime): each gives the model's output
on its inputs, or says why it is skipped."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install tesched[torch])")

from tesched.tools.bench.torch_peers import eager_peer, onnxruntime_peer, torch_compile_peer


def small_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()


def as_array(output):
    output = output[0] if isinstance(output, (list, tuple)) else output
    return output.detach().numpy() if hasattr(output, "detach") else np.asarray(output)


def expected(model, x):
    with torch.inference_mode():
        return model(x).numpy()


def test_eager_peer_runs_the_model_and_its_call_repeats_it():
    model, x = small_model(), torch.rand(4, 16)
    peer = eager_peer(model, (x,))
    assert peer.skipped == "" and peer.setup_seconds >= 0
    np.testing.assert_allclose(as_array(peer.output), expected(model, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_array(peer.call()), expected(model, x), rtol=1e-5, atol=1e-6)


def test_missing_onnxruntime_is_a_reason_not_an_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "onnxruntime", None)      # import onnxruntime now raises ImportError
    peer = onnxruntime_peer(small_model(), (torch.rand(4, 16),), threads=1)
    assert peer.call is None and "onnxruntime is not installed" in peer.skipped and "tesched[bench]" in peer.skipped


def test_a_failing_export_is_named_with_its_error(monkeypatch):
    for name in ("onnxruntime", "onnx", "onnxscript"):
        pytest.importorskip(name)

    def fails(*args, **kwargs):
        raise RuntimeError("cannot export this\nsecond line")

    monkeypatch.setattr(torch.onnx, "export", fails)
    peer = onnxruntime_peer(small_model(), (torch.rand(4, 16),), threads=1)
    assert peer.call is None and peer.skipped == "torch.onnx.export failed: RuntimeError: cannot export this"


def test_a_failing_compilation_is_named_with_its_error(monkeypatch):
    def broken_compile(model):
        def call(*inputs):
            raise RuntimeError("no C++ compiler")
        return call

    monkeypatch.setattr(torch, "compile", broken_compile)
    peer = torch_compile_peer(small_model(), (torch.rand(4, 16),))
    assert peer.call is None and peer.skipped == "torch.compile failed: RuntimeError: no C++ compiler"


@pytest.mark.slow
def test_onnxruntime_peer_matches_eager():
    pytest.importorskip("onnxruntime")
    model, x = small_model(), torch.rand(4, 16)
    peer = onnxruntime_peer(model, (x,), threads=1)
    assert peer.call is not None, peer.skipped
    np.testing.assert_allclose(as_array(peer.output), expected(model, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(as_array(peer.call()), expected(model, x), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_torch_compile_peer_matches_eager():
    model, x = small_model(), torch.rand(4, 16)
    peer = torch_compile_peer(model, (x,))
    assert peer.call is not None, peer.skipped
    np.testing.assert_allclose(as_array(peer.output), expected(model, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(as_array(peer.call()), expected(model, x), rtol=1e-4, atol=1e-5)
