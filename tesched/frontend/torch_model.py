"""``from_torch``: an ``nn.Module`` and example inputs become a :class:`tesched.graph.Function`, through
``torch.export.export(model, inputs).run_decompositions()`` (core ATen, resampling kept whole: see
:mod:`.decompose`) and :func:`.from_exported_program`.

A model ``torch.export`` cannot trace raises :class:`~.errors.FrontendError` that says why, in particular for
data-dependent control flow (an ``if`` on a tensor's value). The model is traced in the mode it is in:
import a model in ``eval()`` mode (training-mode batch norm and dropout are refused by name). With
``train=True`` the model's parameters become inputs of the function (after the model's own), so that a
model that returns its loss can be differentiated (``tesched.graph.gradient``) and trained
(``tesched.graph.optim``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tesched.frontend.decompose import core_aten
from tesched.frontend.errors import FrontendError
from tesched.frontend.exported_program import from_exported_program
from tesched.frontend.lazy_torch import require_torch
from tesched.graph.ir import Function


def _explain(model: Any, err: Exception) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else type(err).__name__
    name = type(model).__name__
    if "DataDependent" in type(err).__name__ or "data-dependent" in str(err):
        return (f"torch.export could not trace {name}: it has data-dependent control flow (a branch or loop on a "
                f"tensor's value, or .item()), and tesched imports straight-line graphs; compute both branches and "
                f"combine them arithmetically, or branch outside the model. PyTorch said: {first}")
    return f"torch.export could not trace {name}: {type(err).__name__}: {first}"


def from_torch(model: Any, example_inputs: Sequence[Any] | Any, train: bool = False) -> Function:
    """The graph function of ``model`` traced on ``example_inputs``.

    Parameters
    ----------
    model : torch.nn.Module
        The model, usually in ``eval()`` mode.
    example_inputs : tuple of torch.Tensor (or NumPy arrays), or one tensor
        Inputs of the shapes and dtypes the imported function will take (shapes are static).
    train : bool
        Import the parameters as variables named as in ``model.named_parameters()``, after the inputs: the
        function to differentiate when the model returns its loss. A model in training mode keeps its
        batch statistics; the buffers it updates (running statistics) become variables after the
        parameters, and their new values follow the loss in the output: pass ``has_aux=True`` to
        ``G.gradient`` or ``G.optim``. Other buffers stay constants.

    Returns
    -------
    tesched.graph.Function
        One parameter per input (named as in ``forward``), parameters and buffers as named constants
        (parameters as variables with ``train=True``).

    Example
    -------
    >>> fn = frontend.from_torch(model.eval(), (torch.rand(1, 64, 128, 128),))   # doctest: +SKIP
    >>> exe = ts.graph.build(fn)                                                   # doctest: +SKIP
    """
    torch = require_torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"from_torch: expected a torch.nn.Module, got {type(model).__name__} (use "
                        "from_exported_program for an exported program)")
    items = [example_inputs] if not isinstance(example_inputs, (tuple, list)) else list(example_inputs)
    inputs = tuple(torch.from_numpy(v) if type(v).__module__ == "numpy" else v for v in items)
    for k, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"from_torch: example input {k} is a {type(value).__name__}; expected a tensor")
    try:
        program = torch.export.export(model, inputs)
    except Exception as err:  # torch.export raises many kinds; each is explained and chained
        raise FrontendError(_explain(model, err)) from err
    return from_exported_program(core_aten(program), train)
