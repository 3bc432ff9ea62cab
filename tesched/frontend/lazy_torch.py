"""Import PyTorch on demand: tesched never imports torch until a frontend function needs it, and a missing
torch raises an ``ImportError`` that names the install command."""
from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install tesched[torch]"


def require_torch() -> ModuleType:
    """The ``torch`` module, or an ``ImportError`` naming ``pip install tesched[torch]``."""
    try:
        import torch
    except ImportError as err:
        raise ImportError(f"tesched.frontend needs PyTorch to import models: {INSTALL_HINT}") from err
    return torch
