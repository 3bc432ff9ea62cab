"""tesched: a tensor-expression scheduling DSL on a polyhedral core (islpy), compiled to C through cffi.

Public API (TVM's legacy ``te`` names): ``placeholder``, ``compute``, ``reduce_axis``, ``var``, reducers
``sum``/``prod``/``max``/``min`` and ``comm_reducer``, scatters (``scatter``, ``scatter_add``),
recurrences (``scan``), scalar functions, ``create_schedule``, ``lower``, ``build``; automatic scheduling:
``auto_schedule``, ``tune``, ``explain_schedule`` and ``build(..., tuned=...)``; ``load_module`` loads a
kernel exported with ``Kernel.export_library`` back.
"""
from tesched.autodiff import gradient
from tesched.autoschedule import auto_schedule, build, explain_schedule, tune
from tesched.driver.load import load_module
from tesched.driver.threads import get_num_threads, set_num_threads
from tesched.errors import (
    BoundsError,
    BuildError,
    GradientError,
    LoweringError,
    ModuleLoadError,
    ScheduleError,
    TensorizeError,
    TeschedError,
)
from tesched.lower.func import LoweredFunc
from tesched.lower.pipeline import lower
from tesched.schedule.kinds import ThreadAxis, thread_axis
from tesched.schedule.schedule import Schedule, Stage, create_schedule
from tesched.target import Target
from tesched.te import boundary
from tesched.te.dtype import ALL_TYPES as dtypes
from tesched.te.expr import Expr, const
from tesched.te.functions import (
    abs,
    acos,
    all,
    any,
    asin,
    atan,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clamp,
    cos,
    cosh,
    count_leading_zeros,
    count_trailing_zeros,
    exp,
    floor,
    fmod,
    if_then_else,
    log,
    max,
    maximum,
    min,
    minimum,
    popcount,
    power,
    prod,
    rint,
    round,
    select,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    sum,
    tan,
    tanh,
    trunc,
)
from tesched.te.narrow import (
    halving_add,
    narrow,
    rounding_halving_add,
    rounding_shift_right,
    saturate_cast,
    widen,
)
from tesched.te.reducer import CommReducer, argmax, argmin, comm_reducer, max_value, min_value
from tesched.te.intrinsic import CIntrinsic, TensorIntrin, decl_tensor_intrin
from tesched.te.scan import scan
from tesched.te.scatter import scatter, scatter_add
from tesched.te.tensor import IterVar, Tensor, compute, placeholder, reduce_axis, var
from tesched.version import __version__
from tesched.viz import save_tile_png  # registers the writer behind every to_html


def __getattr__(name: str):
    """``ts.nn`` and ``ts.graph`` load on first use (they are larger than the core)."""
    if name in ("nn", "graph", "intrin"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tesched' has no attribute {name!r}")

__all__ = [
    "BoundsError", "BuildError", "boundary", "CIntrinsic", "Target", "__version__", "auto_schedule",
    "explain_schedule", "tune", "Expr", "TensorIntrin", "TensorizeError", "build", "decl_tensor_intrin",
    "get_num_threads", "set_num_threads", "IterVar", "LoweredFunc", "LoweringError", "Schedule", "ScheduleError", "Stage",
    "Tensor", "TeschedError", "abs", "all", "any", "ceil", "compute", "const", "create_schedule",
    "dtypes", "exp", "floor", "if_then_else", "log", "lower", "max", "maximum", "min", "minimum",
    "placeholder", "reduce_axis", "save_tile_png", "sigmoid", "sqrt", "sum", "tanh", "var",
    "halving_add", "narrow", "rint", "rounding_halving_add", "rounding_shift_right", "saturate_cast", "widen",
    "load_module", "ModuleLoadError", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "clamp", "fmod",
    "power", "round", "select", "shift_left", "shift_right", "trunc", "prod", "comm_reducer", "CommReducer",
    "min_value", "max_value", "argmax", "argmin",
    "scatter", "scatter_add", "scan", "popcount", "count_leading_zeros", "count_trailing_zeros",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "gradient", "GradientError",
    "ThreadAxis", "thread_axis",
]
