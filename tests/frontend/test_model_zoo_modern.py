"""The present-day zoo models run in PyTorch eager with the shapes their docstrings promise, and, at small
sizes, import into tesched and match eager: U-Net (interpreted), DenseNet and ResNeXt blocks and 2-layer GRU
and LSTM (compiled)."""
import pytest

from tesched import graph as G
from tesched.frontend import from_torch

from .helpers import TOLERANCE, max_relative_error, numpy_inputs, torch

modern = pytest.importorskip("tesched.frontend.model_zoo_modern",
                             reason="PyTorch is not installed (pip install tesched[torch])")

SHAPES = {"encoder_layer": (1, 128, 256), "encoder_stack4": (1, 128, 256), "gpt_block": (1, 128, 1000),
          "vit_tiny": (1, 1000), "mlp_mixer": (1, 100), "unet": (1, 2, 64, 64), "gru2": (1, 32, 128),
          "lstm2": (1, 32, 128), "dense_block": (1, 192, 28, 28), "resnext_block": (1, 256, 28, 28)}


@pytest.mark.parametrize("name", sorted(modern.MODERN))
def test_model_runs_in_eager_with_its_output_shape(name):
    torch.manual_seed(0)
    make, inputs = modern.MODERN[name]
    with torch.no_grad():
        out = make().eval()(*inputs())
    assert tuple(out.shape) == SHAPES[name] and bool(torch.isfinite(out).all())


def test_gpt_head_is_tied_to_the_embedding():
    model = modern.GPTBlock()
    assert model.head.weight is model.embed.weight


SMALL = {  # name -> (small model, inputs): the zoo's architectures at sizes that build in seconds
    "unet": (lambda: modern.UNet(3, 4, 2), lambda: (torch.rand(1, 3, 16, 16),)),
    "dense_block": (lambda: modern.DenseBlock(8, 4, 2), lambda: (torch.rand(1, 8, 8, 8),)),
    "resnext_block": (lambda: modern.ResNeXtBlock(32, 16, 4), lambda: (torch.rand(1, 32, 8, 8),)),
    "gru2": (lambda: modern.StackedRNN("gru", 8, 8), lambda: (torch.rand(1, 4, 8),)),
    "lstm2": (lambda: modern.StackedRNN("lstm", 8, 8), lambda: (torch.rand(1, 4, 8),)),
}


def imported(name, table=None):
    """The model ``name`` of ``table`` (default :data:`SMALL`) imported, its NumPy inputs, eager's result."""
    torch.manual_seed(0)
    make, inputs_of = (SMALL if table is None else table)[name]
    model, inputs = make().eval(), inputs_of()
    with torch.no_grad():
        want = model(*inputs)
    return from_torch(model, inputs), numpy_inputs(inputs), want


def test_unet_with_both_upsamplings_and_a_transposed_convolution_matches_eager():
    fn, arrays, want = imported("unet")
    text = str(fn)
    assert text.count("nn.upsample(") == 2 and "nn.conv2d(" in text
    assert max_relative_error(G.interpret(fn, *arrays), want) <= TOLERANCE


@pytest.mark.parametrize("name", ["resnext_block", "dense_block"])
def test_small_blocks_match_eager_compiled(name):
    fn, arrays, want = imported(name)
    got = G.build(fn)(*arrays)
    assert max_relative_error(got, want) <= TOLERANCE


SMALL_TRANSFORMERS = {
    "encoder_layer": (lambda: modern.EncoderLayer(32, 4, 64), lambda: (torch.rand(1, 16, 32),)),
    "encoder_stack": (lambda: modern.EncoderStack(2, 32, 4), lambda: (torch.rand(1, 16, 32),)),
    "gpt_block": (lambda: modern.GPTBlock(50, 16, 32, 4), lambda: (torch.randint(0, 50, (1, 16)),)),
    "vit_tiny": (lambda: modern.ViTTiny(32, 8, 32, 2, 2, 10), lambda: (torch.rand(1, 3, 32, 32),)),
    "mlp_mixer": (lambda: modern.MLPMixer(32, 8, 32, 2, 10), lambda: (torch.rand(1, 3, 32, 32),)),
}
"""The transformer architectures of the zoo at test sizes (the same code as the benchmark's)."""


@pytest.mark.parametrize("name", sorted(SMALL_TRANSFORMERS))
def test_transformers_import_and_match_eager(name):
    fn, arrays, want = imported(name, SMALL_TRANSFORMERS)
    assert max_relative_error(G.interpret(fn, *arrays), want) <= TOLERANCE
    optimized = str(G.optimize(fn))
    assert "nn.softmax(" not in optimized and ("nn.attention(" in optimized) == (name != "mlp_mixer")


def test_gpt_block_compiled_matches_eager():
    fn, arrays, want = imported("gpt_block", SMALL_TRANSFORMERS)
    assert max_relative_error(G.build(fn)(*arrays), want) <= TOLERANCE


@pytest.mark.parametrize("name", ["gru2", "lstm2"])
def test_stacked_recurrent_layers_match_eager_compiled(name):
    fn, arrays, want = imported(name)
    assert max_relative_error(G.build(fn)(*arrays), want) <= TOLERANCE
