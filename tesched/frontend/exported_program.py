"""``from_exported_program``: a ``torch.export.ExportedProgram`` becomes a :class:`tesched.graph.Function`.

The program's graph is walked once, in order. User inputs become graph variables with their names,
shapes and dtypes; parameters, buffers and lifted constants become named graph constants (so batch-norm
folding and weight pre-packing apply to them), except that with ``train=True`` the parameters become
variables too, named as in ``model.named_parameters()`` and placed after the inputs, for
``tesched.graph.gradient`` and ``tesched.graph.optim`` to differentiate and update. A training import also
takes the buffers the model updates in forward (a ``BatchNorm``'s running statistics) as variables after
the parameters, named as in ``model.named_buffers()``, and returns their new values after the user outputs
(the step has no hidden state: the caller feeds them back). Each ``call_function`` node is converted by its
entry in the op table (:mod:`.op_table`), its arguments passed by schema name with defaults filled in; ``getitem``
picks an output of a multi-output op; the outputs become the function's body (a tuple when several).

Every converted value is checked against the shape and dtype PyTorch recorded for the node, so a
conversion can never silently change a shape. A program with ops outside the table is first decomposed
to core ATen (``run_decompositions()``, keeping resampling whole: see :mod:`.decompose`). Unsupported ops
raise :class:`~.errors.UnsupportedOpError` naming the op, the module path (``layer3.1.conv2``) and the nearest
supported alternative; buffer updates (training mode, unless ``train=True``) and non-tensor outputs raise
:class:`~.errors.FrontendError`. A dimension exported as dynamic (``torch.export.Dim``) becomes a graph
:class:`~tesched.graph.types.Dim` of the same name and range (:mod:`.dynamic_dims`).
"""
from __future__ import annotations

import operator
import os
from typing import Any

from tesched.frontend.call import AtenCall, Unavailable
from tesched.frontend.dynamic_dims import DynamicDims
from tesched.frontend.decompose import core_aten
from tesched.frontend.errors import FrontendError, UnsupportedOpError, describe_module
from tesched.frontend.lazy_torch import require_torch
from tesched.frontend.op_table import REJECTED, converter_for, rejection
from tesched.graph.ir import Constant, Expr, Function, Tuple, Var
from tesched.graph.types import TensorType
from tesched.te.dtype import ALL_TYPES


def op_name(target: Any) -> str:
    """How the op table names a node's target: ``"aten.addmm.default"``, ``"higher_order.cond"``,
    ``"getitem"``, or the callable's name."""
    if target is operator.getitem:
        return "getitem"
    if hasattr(target, "_schema"):
        return str(target)
    torch = require_torch()
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    return getattr(target, "__name__", repr(target))


def _needs_decomposition(program: Any) -> bool:
    names = {op_name(n.target) for n in program.graph.nodes if n.op == "call_function"}
    return any(name != "getitem" and converter_for(name) is None and name not in REJECTED for name in names)


def _where(node: Any) -> tuple[str, str]:
    """The innermost module a node came from: ``(path, type name)``."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, kind = list(stack.values())[-1]
    return str(path), kind if isinstance(kind, str) else getattr(kind, "__qualname__", str(kind))


def _source_line(node: Any) -> str:
    """The innermost line of the model's code (not PyTorch's own) that made the node, with its file."""
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    files = [k for k, line in enumerate(trace) if line.strip().startswith("File ")]
    torch_dir = os.path.dirname(str(require_torch().__file__))
    own = [k for k in files if torch_dir not in trace[k]] or files
    if not own:
        return ""
    return " ".join(line.strip() for line in trace[own[-1]:own[-1] + 2])


def _not_in_table(node: Any, name: str) -> UnsupportedOpError:
    detail, alternative = rejection(name)
    path, kind = _where(node)
    return UnsupportedOpError(name, path, alternative, detail, kind, _source_line(node))


class _Importer:
    """Walks one program's graph; ``env`` maps each node to its value."""

    def __init__(self, program: Any, train: bool = False):
        self.torch = require_torch()
        self.program = program
        self.train = train
        self.env: dict[Any, Any] = {}
        self.inputs: list[Var] = []
        self.parameters: list[Var] = []
        self.buffers: list[Var] = []
        self.mutated = {spec.target for spec in program.graph_signature.output_specs
                        if spec.kind.name == "BUFFER_MUTATION"}
        self.specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
        self.dims = DynamicDims(program)

    # values -----------------------------------------------------------------------------------------
    def tensor_type(self, value: Any, what: str, strict: bool = True) -> TensorType | None:
        """The type of a (fake) tensor; an empty or unsupported one raises, or is ``None`` if not ``strict``
        (an output no converter computes, such as the empty statistics of an inference batch norm)."""
        if not isinstance(value, self.torch.Tensor):
            return None
        shape = tuple(self.dims.extent(d, what or "an output") for d in value.shape)
        dtype = str(value.dtype).replace("torch.", "")
        problem = f"is {dtype}; tesched imports {', '.join(ALL_TYPES)} (float32 first)" if dtype not in ALL_TYPES \
            else f"has an empty shape {shape}" if 0 in shape else ""
        if problem and strict:
            raise FrontendError(f"{what} {problem}")
        return None if problem else TensorType(shape, dtype)

    def output_types(self, node: Any) -> tuple[TensorType | None, ...]:
        """The types PyTorch recorded for the node's outputs (``None`` where not a supported tensor)."""
        val = node.meta.get("val")
        values = val if isinstance(val, (list, tuple)) else [val]
        where = f"the output of {op_name(node.target)} in {describe_module(*_where(node))}"
        return tuple(self.tensor_type(v, where, strict=False) for v in values)

    def constant(self, name: str, target: str) -> Constant:
        """Parameter, buffer or lifted constant ``target`` as a named graph constant."""
        state = self.program.state_dict
        tensor = state[target] if target in state else self.program.constants[target]
        self.tensor_type(tensor, f"parameter {target}")
        return Constant(tensor.detach().cpu().contiguous().numpy(), name=target)

    def argument(self, value: Any, consumer: str) -> Any:
        """An fx argument as the converters see it: nodes by their values, dtypes as names."""
        torch = self.torch
        if isinstance(value, torch.fx.Node):
            found = self.env[value]
            if isinstance(found, Unavailable):
                raise found.error
            return found.value if isinstance(found, _LazyConstant) else found
        if isinstance(value, (list, tuple)):
            return [self.argument(v, consumer) for v in value]
        if isinstance(value, torch.dtype):
            return str(value).replace("torch.", "")
        if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
            return str(value)
        if isinstance(value, torch.SymInt):
            return self.dims.extent(value, f"an argument of {consumer}")
        if isinstance(value, (torch.SymFloat, torch.SymBool)):
            raise FrontendError(f"a symbolic value {value} reaches {consumer}; tesched imports dynamic sizes, "
                                "not values computed from them")
        return value

    # nodes ------------------------------------------------------------------------------------------
    def placeholder(self, node: Any) -> None:
        """A user input becomes a variable; a parameter or buffer, a constant on first use."""
        spec = self.specs[node.name]
        kind = spec.kind.name
        if kind == "USER_INPUT":
            ty = self.tensor_type(node.meta.get("val"), f"input {node.name}")
            if ty is None:
                raise FrontendError(f"input {node.name} is not a tensor; tesched imports tensor inputs only")
            var = Var(node.name, ty)
            self.inputs.append(var)
            self.env[node] = var
        elif self.train and (kind == "PARAMETER" or kind == "BUFFER" and spec.target in self.mutated):
            ty = self.tensor_type(self.program.state_dict[spec.target], f"{kind.lower()} {spec.target}")
            assert ty is not None, "a strict tensor_type raises or returns a type"
            var = Var(spec.target, ty)
            (self.parameters if kind == "PARAMETER" else self.buffers).append(var)
            self.env[node] = var
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            self.env[node] = _LazyConstant(self, node.name, spec.target)
        else:
            raise FrontendError(f"input {node.name} is a {kind.lower()}; tesched imports tensors, parameters "
                                "and buffers only")

    def call(self, node: Any) -> None:
        """Convert one ``call_function`` node by its op table entry (``getitem`` picks an output)."""
        name = op_name(node.target)
        if name == "getitem":
            source, index = node.args
            self.env[node] = self.env[source][index]
            return
        if name == "aten.sym_size.int":             # a dynamic dimension's size, as a later view reads it
            self.env[node] = self.dims.extent(node.meta.get("val"), f"{name} in {describe_module(*_where(node))}")
            return
        path, kind = _where(node)
        converter = converter_for(name, self.train)
        if converter is None:
            raise _not_in_table(node, name)
        call = AtenCall(name, self.arguments(node, name), self.output_types(node), path, kind, _source_line(node))
        try:
            value = converter(call)
        except FrontendError:
            raise
        except (TypeError, ValueError, KeyError, IndexError) as err:
            raise call.unsupported(f"this use cannot be converted ({err})",
                                   "see tesched.frontend.supported_ops() for the supported forms") from err
        self.check(call, value)
        self.env[node] = value

    def arguments(self, node: Any, op: str) -> dict[str, Any]:
        """The node's arguments by schema name, defaults filled in."""
        schema = node.target._schema
        args: dict[str, Any] = {}
        for k, arg in enumerate(schema.arguments):
            if not arg.kwarg_only and k < len(node.args):
                value = node.args[k]
            elif arg.name in node.kwargs:
                value = node.kwargs[arg.name]
            else:
                value = arg.default_value if arg.has_default_value() else None
            args[arg.name] = self.argument(value, op)
        return args

    def check(self, call: AtenCall, value: Any) -> None:
        """The converted value has the types PyTorch recorded."""
        produced = value if isinstance(value, tuple) else (value,)
        for k, (got, want) in enumerate(zip(produced, call.outputs)):
            if isinstance(got, Expr) and want is not None and got.checked_type != want:
                raise FrontendError(f"{call.op} in {describe_module(call.module_path, call.module_type)}: output "
                                    f"{k} converted to {got.checked_type} but PyTorch computes {want} (a defect "
                                    "of the op table: please report it)")

    def output(self, node: Any) -> Expr:
        """The function's body: the user outputs, then (importing for training) the new values of the
        buffers the model updates, in the order of :attr:`buffers`. Without ``train``, a program that
        updates state is refused."""
        specs = self.program.graph_signature.output_specs
        allowed = ("USER_OUTPUT", "BUFFER_MUTATION") if self.train else ("USER_OUTPUT",)
        updated = [spec.target for spec in specs if spec.kind.name not in allowed]
        if updated:
            raise FrontendError(f"the model updates {', '.join(map(str, updated))} in forward (training-mode "
                                "statistics, or state kept between calls); tesched imports inference without "
                                "side effects: call model.eval() before exporting, or import a training step "
                                "with train=True")
        values = dict(zip((spec.target if spec.kind.name == "BUFFER_MUTATION" else None for spec in specs),
                          node.args[0]))
        user = [v for spec, v in zip(specs, node.args[0]) if spec.kind.name == "USER_OUTPUT"]
        results = [self.argument(v, "the output") for v in user]
        results += [self.argument(values[b.name], f"the update of {b.name}") for b in self.buffers]
        for k, r in enumerate(results):
            if not isinstance(r, Expr):
                raise FrontendError(f"output {k} of the model is a {type(r).__name__}; tesched imports tensor outputs")
        return results[0] if len(results) == 1 else Tuple(results)

    def refuse_control_flow(self) -> None:
        """Control flow is reported before the ops of its condition, which would hide the reason."""
        for node in self.program.graph.nodes:
            name = op_name(node.target) if node.op == "call_function" else ""
            if name.startswith("higher_order.") and converter_for(name) is None:
                raise _not_in_table(node, name)

    def function(self) -> Function:
        """The imported graph function."""
        self.refuse_control_flow()
        body: Expr | None = None
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                self.placeholder(node)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                body = self.output(node)
            elif node.op != "get_attr":
                raise FrontendError(f"node {node.name} is a {node.op}; an exported program holds placeholders, "
                                    "calls and one output")
        if body is None:
            raise FrontendError("the exported program has no output")
        return Function(self.inputs + self.parameters + self.buffers, body)


class _LazyConstant:
    """A parameter or buffer, converted to a graph constant on first use (once)."""

    def __init__(self, importer: _Importer, name: str, target: str):
        self.importer, self.name, self.target = importer, name, target
        self._value: Constant | None = None

    @property
    def value(self) -> Constant:
        """The constant (converted on first access)."""
        if self._value is None:
            self._value = self.importer.constant(self.name, self.target)
        return self._value


def from_exported_program(program: Any, train: bool = False) -> Function:
    """The graph function of a ``torch.export.ExportedProgram`` (see the module doc).

    Parameters
    ----------
    program : torch.export.ExportedProgram
        An exported model, best in core ATen (``torch.export.export(model, args).run_decompositions()``);
        a program with other ops is decomposed first.
    train : bool
        Make the parameters variables (after the inputs, named as in ``named_parameters()``) rather than
        constants, to differentiate the function with ``tesched.graph.gradient``; training-mode batch norms
        are imported with their batch statistics, and the buffers they update become variables after the
        parameters whose new values follow the user outputs (differentiate with ``has_aux=True``).

    Returns
    -------
    tesched.graph.Function
        Its parameters are the program's user inputs (names, shapes and dtypes kept); parameters and
        buffers are named constants (see ``train``); its body is the output (a tuple of the outputs, nested
        ones flattened in order, when there are several).

    Example
    -------
    >>> program = torch.export.export(model.eval(), (x,)).run_decompositions()   # doctest: +SKIP
    >>> fn = frontend.from_exported_program(program)                             # doctest: +SKIP
    """
    torch = require_torch()
    if not isinstance(program, torch.export.ExportedProgram):
        raise TypeError(f"from_exported_program: expected a torch.export.ExportedProgram, got "
                        f"{type(program).__name__} (use from_torch for an nn.Module)")
    if _needs_decomposition(program):
        program = core_aten(program)
    return _Importer(program, train).function()

