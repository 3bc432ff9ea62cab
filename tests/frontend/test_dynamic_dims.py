"""Programs exported with ``torch.export.Dim``: built once, run at sizes across the declared range (1, a
prime, the maximum) against eager PyTorch; out-of-range sizes and sizes computed from a dim are refused
by name."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install tesched[torch])")
hypothesis = pytest.importorskip("hypothesis")

from tesched import graph as G
from tesched.frontend import from_exported_program
from tesched.frontend.errors import FrontendError
from tesched.graph.types import Dim

RTOL, ATOL = 1e-3, 1e-4
nn = torch.nn


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.b(torch.relu(self.a(x))), -1)


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.down(torch.relu(self.bn(self.conv(x)))))
        return self.fc(torch.flatten(y, 1))


def _build(model, example, dims):
    torch.manual_seed(0)
    model = model.eval()
    program = torch.export.export(model, (example,), dynamic_shapes={"x": dims})
    return model, from_exported_program(program)


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model, fn = _build(_MLP(), torch.randn(4, 16), {0: torch.export.Dim("batch", min=1, max=64)})
    return model, fn, G.build(fn)


def _check(model, exe, x):
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(exe(x.numpy()), expected, rtol=RTOL, atol=ATOL)


def test_a_dynamic_batch_mlp_imports_with_its_name_and_range_and_runs_at_any_size(mlp):
    model, fn, exe = mlp
    assert fn.params[0].checked_type.extents == (Dim("batch", 1, 64), 16)
    kernels = len(exe.kernels)
    for n in (1, 31, 64):
        _check(model, exe, torch.randn(n, 16))
    assert len(exe.kernels) == kernels and all(
        [p.name for p in k.kernel.signature.params] == ["batch"] for k in exe.kernels)
    with pytest.raises(ValueError, match=r"dimension 'batch' = 70 is outside its declared range \[1, 64\]"):
        exe(np.zeros((70, 16), np.float32))


@hypothesis.settings(max_examples=15, deadline=None)
@hypothesis.given(n=hypothesis.strategies.integers(1, 64))
def test_any_batch_in_range_matches_eager(mlp, n):
    model, _, exe = mlp
    _check(model, exe, torch.randn(n, 16))


def test_a_dynamic_batch_cnn_builds_once():
    torch.manual_seed(0)
    model, fn = _build(_CNN(), torch.randn(2, 3, 8, 8), {0: torch.export.Dim("n", min=1, max=8)})
    exe = G.build(fn)
    for n in (1, 7, 8):
        _check(model, exe, torch.randn(n, 3, 8, 8))


def test_a_dynamic_sequence_encoder_layer_builds_once():
    from tesched.frontend.model_zoo_modern import EncoderLayer
    torch.manual_seed(0)
    model, fn = _build(EncoderLayer(dim=32, heads=2, hidden=64), torch.randn(1, 16, 32),
                       {1: torch.export.Dim("seq", min=1, max=48)})
    exe = G.build(fn)
    assert exe.external_calls == [] and any("attention" in k.name for k in exe.kernels)
    for n in (1, 13, 48):
        _check(model, exe, torch.randn(1, n, 32))
    with pytest.raises(ValueError, match=r"dimension 'seq' = 49 is outside its declared range \[1, 48\]"):
        exe(np.zeros((1, 49, 32), np.float32))


class _Merge(nn.Module):
    def forward(self, x):
        return x.reshape(-1) * 2


def test_a_size_computed_from_a_dim_is_refused_naming_the_op_and_the_dim():
    program = torch.export.export(_Merge(), (torch.randn(4, 3),),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=16)}})
    with pytest.raises(FrontendError, match=r"aten\.(view|reshape).* has a size 3\*batch computed from the dynamic "
                                            r"dimension\(s\) batch"):
        from_exported_program(program)
