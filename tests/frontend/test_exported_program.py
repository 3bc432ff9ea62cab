"""``from_exported_program``: names, shapes and constants of the imported function, the type check of every
conversion, and the errors for what cannot be imported (training mode, control flow, unbounded dynamic shapes)."""
import numpy as np
import pytest

from tesched import graph as G
from tesched.frontend import FrontendError, UnsupportedOpError, from_exported_program, op_table

from .helpers import Lambda, rand, torch

nn = torch.nn


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.register_buffer("offset", torch.arange(3.0))

    def forward(self, tokens, mask):
        return self.proj(tokens) + self.offset, mask * 2


def export(model, *inputs, decompose=True):
    program = torch.export.export(model, inputs)
    return program.run_decompositions() if decompose else program


def test_inputs_keep_names_shapes_and_order_and_parameters_become_named_constants():
    fn = from_exported_program(export(TwoInputs().eval(), rand(2, 4), rand(5)))
    assert [(p.name, p.checked_type.shape) for p in fn.params] == [("tokens", (2, 4)), ("mask", (5,))]
    text = str(fn)
    for name in ("proj.weight", "proj.bias", "offset"):
        assert f"= {name}: " in text
    assert isinstance(fn.body, G.Tuple) and len(fn.body) == 2


def test_an_undecomposed_program_is_decomposed_first():
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Flatten(), nn.Linear(12, 2)).eval()
    x = rand(1, 2, 4, 4)
    fn = from_exported_program(export(model, x, decompose=False))
    with torch.no_grad():
        np.testing.assert_allclose(G.interpret(fn, x.numpy()), model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_every_conversion_is_checked_against_the_types_pytorch_recorded(monkeypatch):
    monkeypatch.setitem(op_table.CONVERTERS, "aten.relu.default", lambda call: G.sum(call.tensor("self")))
    with pytest.raises(FrontendError, match=r"aten.relu.default in module `1` \(ReLU\): output 0 converted to "
                                            r"Tensor\[\(\), float32\] but PyTorch computes Tensor\[\(2, 3\), float32\]"):
        from_exported_program(export(nn.Sequential(nn.Identity(), nn.ReLU()), rand(2, 3)))


def test_a_converter_failure_becomes_an_unsupported_op_error(monkeypatch):
    def failing(call):
        raise ValueError("no such layout")
    monkeypatch.setitem(op_table.CONVERTERS, "aten.tanh.default", failing)
    with pytest.raises(UnsupportedOpError, match=r"aten.tanh.default .*this use cannot be converted \(no such layout\)"):
        from_exported_program(export(nn.Tanh(), rand(3)))


def test_training_mode_batch_norm_is_refused_by_name():
    model = nn.Sequential(nn.Conv2d(2, 2, 1), nn.Sequential(nn.BatchNorm2d(2))).train()
    with pytest.raises(UnsupportedOpError, match=r"in module `1.0` \(BatchNorm2d\) is not supported: batch norm in "
                                                 r"training mode .*model.eval\(\)"):
        from_exported_program(export(model, rand(2, 2, 3, 3)))


def test_training_mode_dropout_is_refused():
    with pytest.raises(UnsupportedOpError, match=r"dropout in training mode .*model.eval\(\)"):
        from_exported_program(export(nn.Dropout(0.5).train(), rand(4)))


def test_a_model_that_updates_a_buffer_is_refused():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls.add_(1)
            return x * 2

    with pytest.raises(FrontendError, match=r"updates calls in forward"):
        from_exported_program(export(Counter(), rand(3)))


def test_torch_cond_is_data_dependent_control_flow():
    model = Lambda(lambda x: torch.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, (x,)))
    with pytest.raises(UnsupportedOpError, match=r"higher_order.cond .*torch.cond.*straight-line graphs"):
        from_exported_program(export(model, rand(3)))


def test_an_output_that_is_not_computed_is_refused_when_used():
    model = Lambda(lambda x: nn.functional.max_pool2d(x, 2, return_indices=True))
    with pytest.raises(UnsupportedOpError, match=r"max_pool2d_with_indices.* its indices output is not computed"):
        from_exported_program(export(model, rand(1, 1, 4, 4)))


def test_unbounded_dims_and_unsupported_dtypes_are_refused():
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(nn.ReLU(), (rand(3, 4),), dynamic_shapes=({0: batch},))
    with pytest.raises(FrontendError, match=r"dimension 'batch' \(input input\) has no upper bound"):
        from_exported_program(program)
    with pytest.raises(FrontendError, match="input args_0 is complex64"):
        from_exported_program(export(Lambda(lambda x: x * 2), rand(3).to(torch.complex64)))


def test_only_exported_programs_are_accepted():
    with pytest.raises(TypeError, match=r"expected a torch.export.ExportedProgram, got ReLU \(use from_torch"):
        from_exported_program(nn.ReLU())
