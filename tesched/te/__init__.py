"""Declarations: dtypes, expressions, tensors and their operations, scalar functions, intrinsic declarations.

The lowest layer users touch: it knows nothing of schedules, loops, isl or C. Importing it installs the
expression printer (:mod:`.printer`) that ``repr`` uses.
"""
from tesched.te import printer as _printer  # noqa: F401  (installs the text form of expressions)
