"""torch is optional: importing tesched (and tesched.frontend) does not import it, and a frontend call
without it raises an ImportError naming ``pip install tesched[torch]``."""
import sys

import pytest

from tesched.frontend.lazy_torch import INSTALL_HINT, require_torch


def test_importing_tesched_and_its_frontend_does_not_import_torch(run_python):
    done = run_python("""
        import sys
        import tesched, tesched.graph, tesched.frontend
        tesched.frontend.supported_ops()
        print(sys.modules.get("torch") is not None)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_missing_torch_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # makes ``import torch`` raise ImportError
    with pytest.raises(ImportError, match=r"pip install tesched\[torch\]"):
        require_torch()
    from tesched.frontend import from_torch
    with pytest.raises(ImportError, match=r"tesched.frontend needs PyTorch"):
        from_torch(object(), ())
    assert INSTALL_HINT == "pip install tesched[torch]"
