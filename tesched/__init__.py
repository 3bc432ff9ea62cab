"""tesched: a tensor-expression scheduling DSL on a polyhedral core (islpy), compiled to C through cffi.

Public API (TVM's legacy ``te`` names): ``placeholder``, ``compute``, ``reduce_axis``, ``var``, reducers
``sum``/``max``/``min``, scalar functions, ``create_schedule``, ``lower``, ``build``.
"""
from .builder import build
from .dtype import ALL_TYPES as dtypes
from .errors import BuildError, LoweringError, ScheduleError, TensorizeError, TeschedError
from .expr import Expr, const
from .functions import (abs, all, any, ceil, exp, floor, if_then_else, log, max, maximum, min, minimum,
                        sigmoid, sqrt, sum, tanh)
from .lower import LoweredFunc, lower
from .schedule import Schedule, Stage, create_schedule
from .target import get_num_threads, set_num_threads
from .tensor import IterVar, Tensor, compute, placeholder, reduce_axis, var
from .tensorize import CIntrinsic, TensorIntrin, decl_tensor_intrin

__version__ = "0.1.0"


def __getattr__(name: str):
    """``ts.nn`` and ``ts.graph`` load on first use (they are larger than the core)."""
    if name in ("nn", "graph", "intrin"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tesched' has no attribute {name!r}")

__all__ = [
    "BuildError", "CIntrinsic", "Expr", "TensorIntrin", "TensorizeError", "build", "decl_tensor_intrin",
    "get_num_threads", "set_num_threads", "IterVar", "LoweredFunc", "LoweringError", "Schedule", "ScheduleError", "Stage",
    "Tensor", "TeschedError", "abs", "all", "any", "ceil", "compute", "const", "create_schedule",
    "dtypes", "exp", "floor", "if_then_else", "log", "lower", "max", "maximum", "min", "minimum",
    "placeholder", "reduce_axis", "sigmoid", "sqrt", "sum", "tanh", "var",
]
