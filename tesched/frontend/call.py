"""What a converter of the op table sees: :class:`AtenCall`, one call of an ATen op with its arguments by
schema name (defaults filled in, graph expressions in place of tensors) and the types PyTorch inferred for
its outputs; and :class:`Unavailable`, an output of a call that tesched does not compute (the indices of
a max pool, the saved statistics of a norm), which raises only if something reads it.

Converters return a graph expression, or a tuple of them (and :class:`Unavailable`) for an op with several
outputs. This module knows no torch and no particular op.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tesched.frontend.errors import UnsupportedOpError
from tesched.graph.ir import Expr
from tesched.graph.types import TensorType


@dataclass(frozen=True)
class Unavailable:
    """An output that is not computed: ``what`` it is, the op that made it and what to use instead."""

    what: str
    error: UnsupportedOpError


@dataclass(frozen=True)
class AtenCall:
    """One call of ATen op ``op`` (``"aten.convolution.default"``) from module ``module_path``."""

    op: str
    args: Mapping[str, Any]
    outputs: tuple[TensorType | None, ...] = ()
    module_path: str = ""
    module_type: str = ""
    source_line: str = field(default="", compare=False)

    def __getitem__(self, name: str) -> Any:
        return self.args[name]

    @property
    def out(self) -> TensorType:
        """The type PyTorch inferred for the (first) output."""
        ty = self.outputs[0] if self.outputs else None
        if ty is None:
            raise self.unsupported("PyTorch recorded no tensor type for its output", "a model exported with "
                                   "torch.export.export")
        return ty

    def tensor(self, name: str) -> Expr:
        """Argument ``name``, which must be a tensor."""
        value = self.args[name]
        if not isinstance(value, Expr):
            raise self.unsupported(f"argument {name} is {type(value).__name__}, expected a tensor",
                                   "a tensor argument")
        return value

    def unsupported(self, detail: str, alternative: str) -> UnsupportedOpError:
        """The error for a use of this op that is not supported (raise it)."""
        return UnsupportedOpError(self.op, self.module_path, alternative, detail, self.module_type, self.source_line)

    def unavailable(self, what: str, alternative: str) -> Unavailable:
        """An output of this call that is not computed; reading it raises."""
        return Unavailable(what, self.unsupported(f"its {what} output is not computed", alternative))
