"""The op table: every supported op is exercised by a converter test, ``supported_ops`` lists the table,
and an op outside it is answered with a reason or the nearest supported op."""
import pytest

from tesched.frontend import supported_ops
from tesched.frontend.op_table import CONVERTERS, REJECTED, rejection

from . import (test_convert_arith, test_convert_attention, test_convert_logic, test_convert_lookup, test_convert_nn,
               test_convert_norm, test_convert_rearrange, test_convert_rnn, test_convert_shape, test_convert_vision)
from .helpers import exported, ops_of

ALL_CASES = (test_convert_arith.CASES + test_convert_nn.CASES + test_convert_rnn.CASES + test_convert_shape.CASES
             + test_convert_attention.CASES + test_convert_logic.CASES + test_convert_norm.CASES
             + test_convert_lookup.CASES + test_convert_vision.INTERPOLATE + test_convert_vision.TRANSPOSED
             + test_convert_rearrange.CASES)


@pytest.mark.slow
def test_every_supported_op_is_exercised_by_a_converter_test():
    seen = set().union(*(ops_of(exported(case)[1]) for case in ALL_CASES))
    assert sorted(set(CONVERTERS) - seen) == []


def test_supported_ops_lists_the_table_sorted():
    ops = supported_ops()
    assert ops == sorted(CONVERTERS) and "aten.convolution.default" in ops and "aten.lstm.input" in ops
    assert not set(ops) & set(REJECTED)


@pytest.mark.parametrize("op, detail, alternative", [
    ("aten._native_batch_norm_legit_functional.default", "training mode", "model.eval()"),
    ("higher_order.cond", "torch.cond", "straight-line"),
    ("aten.clamp.Tensor", "", "aten.clamp.default"),
    ("aten.avg_pool3d.default", "", "aten.avg_pool2d.default"),
    ("aten.fft_fft.default", "", "supported_ops() lists"),
])
def test_rejections_name_a_reason_or_the_nearest_op(op, detail, alternative):
    why, instead = rejection(op)
    assert detail in why and alternative in instead
