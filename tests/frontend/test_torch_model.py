"""``from_torch``: the inputs it accepts, and the explanation when torch.export cannot trace a model."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.frontend import FrontendError, from_torch

from .helpers import Lambda, rand, torch


def test_a_tensor_a_list_or_numpy_arrays_as_example_inputs():
    model = Lambda(lambda x, y: x * y + 1)
    x, y = rand(2, 3), rand(3)
    for inputs in ((x, y), [x, y], (x.numpy(), y.numpy())):
        fn = from_torch(model, inputs)
        np.testing.assert_allclose(G.interpret(fn, x.numpy(), y.numpy()), (x * y + 1).numpy(), rtol=1e-6)
    assert from_torch(torch.nn.ReLU(), x).params[0].checked_type.shape == (2, 3)


def test_bad_arguments_raise_type_errors():
    with pytest.raises(TypeError, match=r"expected a torch.nn.Module, got function"):
        from_torch(lambda x: x, (rand(2),))
    with pytest.raises(TypeError, match=r"example input 1 is a str"):
        from_torch(torch.nn.ReLU(), (rand(2), "x"))


def test_data_dependent_control_flow_is_explained():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(FrontendError, match=r"could not trace Branchy: it has data-dependent control flow .*"
                                            r"straight-line graphs") as info:
        from_torch(Branchy(), (rand(3),))
    assert info.value.__cause__ is not None   # PyTorch's own error stays attached


def test_other_tracing_failures_name_the_model():
    class NotTraceable(torch.nn.Module):
        def forward(self, x):
            return x.numpy()

    with pytest.raises(FrontendError, match=r"torch.export could not trace NotTraceable: "):
        from_torch(NotTraceable(), (rand(3),))
