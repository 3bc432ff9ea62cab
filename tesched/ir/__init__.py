"""The loop IR: nodes (:mod:`.nodes`), visitors (:mod:`.visitor`) and the pseudo-code printer
(:mod:`.printer`, installed as ``str()`` of statements when this package is imported)."""
from tesched.ir import printer as _printer  # noqa: F401  (installs the text form of statements)
