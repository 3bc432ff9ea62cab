"""The nodes of the loop IR that ``lower()`` returns (defined in :mod:`.node_types`, gathered from
:mod:`.exprs` and :mod:`.stmts`), with their text form installed: importing this module imports the
printer (:mod:`.printer`), which gives ``str()`` of statements and ``repr()`` of the IR's expressions.
Import the nodes from here; it knows nothing of isl or C.
"""
from __future__ import annotations

from tesched.ir import printer as _printer  # noqa: F401  (installs the text form of statements)
from tesched.ir.node_types import *  # noqa: F401,F403
from tesched.ir.node_types import __all__  # noqa: F401
