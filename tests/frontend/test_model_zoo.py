"""The models of the frontend's issue, imported, compiled and compared with PyTorch at small input sizes:
WeeNet fused and unfused, ResNet-18, MobileNetV2, SqueezeNet 1.1 (torchvision's architectures), an
LSTM(128, 128) over a sequence, an LSTM cell and a transformer-style MLP block. ``benchmarks/torch_models.py`` runs them
at their real sizes."""
import pytest

from tesched import graph as G
from tesched.frontend import from_torch

from .helpers import TOLERANCE, max_relative_error, numpy_inputs, rand, torch

zoo = pytest.importorskip("tesched.frontend.model_zoo", reason="PyTorch is not installed (pip install tesched[torch])")


def import_and_compare(model, inputs, **build_options):
    """Import ``model``, build it, check it against PyTorch; returns the executable."""
    torch.manual_seed(0)
    model.eval()
    fn = from_torch(model, inputs)
    exe = G.build(fn, **build_options)
    with torch.no_grad():
        want = model(*inputs)
    error = max_relative_error(exe(*numpy_inputs(inputs)), want)
    assert error <= TOLERANCE, f"max error {error:.2e} of the output scale"
    return exe


@pytest.mark.parametrize("make, count", [(zoo.resnet18, 11_689_512), (zoo.mobilenet_v2, 3_504_872),
                                         (zoo.squeezenet1_1, 1_235_496)], ids=["resnet18", "mobilenet_v2",
                                                                               "squeezenet1_1"])
def test_architectures_have_torchvisions_parameter_counts(make, count):
    assert sum(p.numel() for p in make().parameters()) == count


def test_weenet_fused_is_one_kernel_and_unfused_three():
    model = zoo.randomize_batch_norm(zoo.WeeNet(64))
    x = (rand(1, 64, 8, 8),)
    fused = import_and_compare(model, x)
    unfused = import_and_compare(model, x, disabled_passes=["fuse_ops", "fold_constant"])
    assert len(fused.kernels) == 1 and len(unfused.kernels) == 3


@pytest.mark.slow
@pytest.mark.parametrize("make, size", [(zoo.resnet18, 32), (zoo.mobilenet_v2, 32), (zoo.squeezenet1_1, 35)],
                         ids=["resnet18", "mobilenet_v2", "squeezenet1_1"])
def test_vision_models_match_pytorch(make, size):
    torch.manual_seed(0)
    import_and_compare(zoo.randomize_batch_norm(make()), (rand(1, 3, size, size),))


def test_lstm_over_a_sequence_matches_pytorch():
    torch.manual_seed(0)
    import_and_compare(torch.nn.LSTM(128, 128), (rand(4, 1, 128),))   # 16 steps in the benchmark


def test_lstm_cell_matches_pytorch():
    torch.manual_seed(0)
    import_and_compare(zoo.LSTMCellStep(128, 128), (rand(1, 128), rand(1, 128), rand(1, 128)))


def test_mlp_block_matches_pytorch():
    torch.manual_seed(0)
    import_and_compare(zoo.MLPBlock(32, 128), (rand(1, 8, 32),))
