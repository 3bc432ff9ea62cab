"""The Relay-style text form of graphs."""
import numpy as np

import tesched as ts
from tesched import graph as G
from targets import AVX512

from .helpers import vgg_block


def test_calls_print_with_relay_names_attributes_and_types():
    f, _ = vgg_block(channels=3, out_channels=4, size=5)
    text = str(f)
    assert text.startswith("fn (%data: Tensor[(1, 3, 5, 5), float32], %conv1_weight: Tensor[(4, 3, 3, 3), float32]")
    assert ("  %0 = nn.conv2d(%data, %conv1_weight, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)"
            " /* ty=Tensor[(1, 4, 5, 5), float32] */;") in text
    assert "%1 = nn.bias_add(%0, %conv1_bias, axis=1)" in text
    assert "%2 = nn.batch_norm(%1, %bn_gamma, %bn_beta, %bn_mean, %bn_var, epsilon=1e-05f, axis=1)" in text
    assert text.rstrip().endswith("nn.relu(%2) /* ty=Tensor[(1, 4, 5, 5), float32] */\n}")


def test_constants_print_as_meta_references_with_a_legend():
    x = G.var("x", shape=(2, 3))
    f = G.Function([x], G.multiply(G.add(x, G.const(np.ones(3, "float32"), name="shift")), 2.0))
    text = str(f)
    assert "// meta[Constant][0] = shift: Tensor[(3), float32]" in text
    assert "%0 = add(%x, meta[Constant][0])" in text
    assert "multiply(%0, 2f)" in text


def test_fused_functions_print_as_definitions_called_by_name():
    f, params = vgg_block(channels=3, out_channels=4, size=5)
    with ts.Target(AVX512):                    # the layouts chosen for 16 float lanes
        fused = G.optimize(f, params)
    text = str(fused)
    assert "def @fused_nn_conv2d_add_nn_relu(%p0: Tensor[(1, 3, 5, 5), float32]" in text
    assert "@fused_nn_conv2d_add_nn_relu(%data, meta[Constant][0], meta[Constant][1])" in text


def test_tuples_and_fields():
    x = G.var("x", shape=(2,))
    t = G.Tuple([G.nn.relu(x), x])
    text = str(G.Function([x], G.Tuple([G.TupleGetItem(t, 0)])))
    assert "%1 = (%0, %x);" in text and "%2 = %1.0;" in text and text.rstrip().endswith("(%2,)\n}")
