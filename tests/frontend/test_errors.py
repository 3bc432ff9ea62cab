"""The frontend's error classes and how they describe where an op came from (no torch needed)."""
import pytest

import tesched as ts
from tesched.frontend import FrontendError, UnsupportedOpError
from tesched.frontend.errors import describe_module


def test_unsupported_op_error_names_op_module_and_alternative():
    err = UnsupportedOpError("aten.bmm.default", "layer3.1.attn", "aten.mm.default", "batched products",
                             "torch.nn.modules.activation.MultiheadAttention", 'File "net.py", line 7, in forward')
    text = str(err)
    assert text.startswith("aten.bmm.default in module `layer3.1.attn` (MultiheadAttention) is not supported: "
                           "batched products. Nearest supported alternative: aten.mm.default")
    assert text.endswith('at File "net.py", line 7, in forward')
    assert (err.op, err.module_path, err.alternative, err.detail) == ("aten.bmm.default", "layer3.1.attn",
                                                                      "aten.mm.default", "batched products")


def test_an_op_missing_from_the_table_points_to_supported_ops():
    assert "supported_ops() lists what is" in str(UnsupportedOpError("aten.topk.default", "", "none"))


def test_errors_are_tesched_errors_and_value_errors():
    assert issubclass(UnsupportedOpError, FrontendError)
    assert issubclass(FrontendError, ts.TeschedError) and issubclass(FrontendError, ValueError)
    with pytest.raises(ValueError):
        raise UnsupportedOpError("aten.x.default", "", "y")


def test_describe_module():
    assert describe_module("features.3.conv.1", "Conv2d") == "module `features.3.conv.1` (Conv2d)"
    assert describe_module("", "torch.nn.modules.rnn.LSTM") == "the model's own forward (LSTM)"
