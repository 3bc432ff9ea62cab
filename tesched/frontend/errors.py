"""The errors of the PyTorch frontend: :class:`FrontendError` for a model or program that cannot be imported
as a whole (training mode, dynamic shapes, data-dependent control flow, an unsupported dtype), and its
subclass :class:`UnsupportedOpError` for one ATen op the op table does not convert.

Both are :class:`tesched.TeschedError` and ``ValueError``. Messages name the op, the module it came from
(the path of ``named_modules()``, e.g. ``layer3.1.conv2``) and what to do instead.
"""
from __future__ import annotations

from tesched.errors import TeschedError


class FrontendError(TeschedError, ValueError):
    """A PyTorch model or exported program that tesched cannot import; the message says why."""


def describe_module(module_path: str, module_type: str = "") -> str:
    """``module `layer3.1.conv2` (Conv2d)``, or ``the model's own forward`` for the top level."""
    kind = f" ({module_type.rsplit('.', 1)[-1]})" if module_type else ""
    return f"module `{module_path}`{kind}" if module_path else f"the model's own forward{kind}"


class UnsupportedOpError(FrontendError):
    """An ATen op (or one use of it) that :mod:`tesched.frontend` does not convert.

    Attributes: ``op`` (``"aten.bmm.default"``), ``module_path`` (``"layer3.1.conv2"``, empty for the top
    level), ``alternative`` (the nearest supported op or rewrite) and ``detail`` (what about this use is
    unsupported, if the op is supported otherwise).
    """

    def __init__(self, op: str, module_path: str, alternative: str, detail: str = "", module_type: str = "",
                 source_line: str = ""):
        self.op, self.module_path, self.alternative, self.detail = op, module_path, alternative, detail
        reason = f": {detail}" if detail else " (tesched.frontend.supported_ops() lists what is)"
        where = f"\n  at {source_line}" if source_line else ""
        super().__init__(f"{op} in {describe_module(module_path, module_type)} is not supported{reason}. "
                         f"Nearest supported alternative: {alternative}{where}")
