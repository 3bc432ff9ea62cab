"""tesched: a tensor-expression scheduling DSL on a polyhedral core (islpy), compiled to C through cffi.

Public API (TVM's legacy ``te`` names): ``placeholder``, ``compute``, ``reduce_axis``, ``var`` (sizes),
``param`` (runtime scalars, Halide's ``Param``), reducers
``sum``/``prod``/``max``/``min`` and ``comm_reducer``, scatters (``scatter``, ``scatter_add``),
recurrences (``scan``), scalar functions, ``create_schedule``, ``lower``, ``build``; automatic scheduling:
``auto_schedule``, ``tune``, ``explain_schedule`` and ``build(..., tuned=...)``; ``load_module`` loads a
kernel exported with ``Kernel.export_library`` back; ``gradient`` differentiates a pipeline.

``import tesched`` loads the DSL core (declaration, scheduling, lowering, the driver). The applications of
the compiler load on first use (PEP 562): ``auto_schedule``/``tune``/``explain_schedule`` the
autoscheduler, ``gradient`` the differentiator, ``save_tile_png`` and every ``to_html`` the viewer, and the
packages ``ts.nn``, ``ts.graph``, ``ts.intrin``.
"""
import importlib as _importlib
import os
from typing import TYPE_CHECKING
from typing import Any as _Any
from typing import Literal as _Literal
from typing import Sequence
from typing import overload as _overload

if TYPE_CHECKING:   # these modules load on first use (the documentation resolves the names: docs/conf.py)
    from tesched.driver.gpu import GpuKernel
    from tesched.driver.kernel import Kernel
    from tesched.lower.func import LoweredFunc

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
from tesched.schedule.kinds import ThreadAxis, thread_axis
from tesched.schedule.schedule import Schedule, Stage, create_schedule, set_region_inference
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
    cast,
    count_trailing_zeros,
    erf,
    exp,
    floor,
    fmod,
    if_then_else,
    lerp,
    log,
    log1p,
    log2,
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
from tesched.te.param import param
from tesched.te.extern import call_pure_extern
from tesched.te.extern_op import extern, extern_call
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
from tesched.te.inferred import compute
from tesched.te.tensor import IterVar, Tensor, placeholder, reduce_axis, var
from tesched.te.update import Func, update
from tesched.version import __version__
# the package tesched.lower loads before the function ``lower`` below replaces its name here; loaded later
# (with the pipeline, on the first call), it would rebind ``tesched.lower`` to itself
from tesched import lower as _lowering_package  # noqa: F401

_LAZY = {"LoweredFunc": "tesched.lower.func",
         "load_module": "tesched.driver.load", "get_num_threads": "tesched.driver.threads",
         "set_num_threads": "tesched.driver.threads",
         "auto_schedule": "tesched.autoschedule", "tune": "tesched.autoschedule",
         "explain_schedule": "tesched.autoschedule", "gradient": "tesched.autodiff",
         "save_tile_png": "tesched.viz", "Device": "tesched.driver.gpu"}
"""Public names whose modules load on first use (the lowering pipeline and islpy, the driver and cffi, the
applications of the compiler), and where each lives."""


def __dir__() -> list[str]:
    """The module's names, the ones that load on first use included (for ``dir()`` and documentation)."""
    return sorted(set(globals()) | set(_LAZY) | {"nn", "graph", "intrin"})


def __getattr__(name: str) -> _Any:
    """The names of :data:`_LAZY` and the packages ``nn``, ``graph``, ``intrin``, loaded on first use."""
    if name in ("nn", "graph", "intrin"):
        return _importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tesched' has no attribute {name!r}")


# as the driver's build: a GPU target named by its string gives a GpuKernel (see tesched.driver.build)
@_overload
def build(inputs: "Schedule | LoweredFunc", args: "Sequence[Tensor] | None",  # type: ignore[overload-overlap]
          target: _Literal["opencl", "cuda"], name: str = ..., profile: bool = ...,
          tuned: "str | os.PathLike | None" = ...) -> "GpuKernel": ...


@_overload
def build(inputs: "Schedule | LoweredFunc", args: "Sequence[Tensor] | None" = None,
          target: "Target | str | None" = None, name: str = ..., profile: bool = ...,
          tuned: "str | os.PathLike | None" = ...) -> "Kernel": ...


def build(inputs: "Schedule | LoweredFunc", args: "Sequence[Tensor] | None" = None,
          target: "Target | str | None" = None, name: str = "default_function", profile: bool = False,
          tuned: "str | os.PathLike | None" = None) -> "Kernel | GpuKernel":
    """Lower, compile and load a kernel (:func:`tesched.driver.build.build`); with ``tuned``, first apply
    the best record of that tuning database for this workload and machine to ``inputs``, which must be an
    unscheduled schedule (without one: a ``UserWarning``, and ``auto_schedule`` instead).

    Parameters
    ----------
    inputs, args, target, name, profile
        As for the driver's ``build``.
    tuned
        A tuning database written by ``tune``.

    Returns
    -------
    Kernel or GpuKernel
        The compiled kernel (a :class:`~tesched.driver.gpu.GpuKernel` for ``target="opencl"`` or ``"cuda"``).
    """
    from tesched.driver.build import build as driver_build    # the lowering pipeline loads with the first build
    if tuned is not None:
        if not isinstance(inputs, Schedule):
            raise TypeError("build(..., tuned=...) needs a schedule (from create_schedule), not a lowered function")
        from tesched.autoschedule.build import apply_tuned   # the tuning database loads when asked for
        apply_tuned(inputs, tuned, target)
    return driver_build(inputs, args, target, name, profile)


def lower(sch: Schedule, args: "Sequence[Tensor]", name: str = "main", debug: "bool | None" = None,
          simple_mode: bool = True) -> "LoweredFunc":
    """Lower a schedule to loop IR; ``print()`` the result to read it (:func:`tesched.lower.pipeline.lower`,
    whose pipeline loads with the first call).

    Parameters
    ----------
    sch : Schedule
        The schedule to lower.
    args : sequence of Tensor
        The function's arguments in call order: every input it reads and every output.
    name : str
        The function's name.
    debug : bool, optional
        Log every pass (default: ``TESCHED_DEBUG``).
    simple_mode : bool
        Accepted for compatibility with TVM's ``lower``; the result is always the readable form.

    Returns
    -------
    LoweredFunc
        The target-independent loop IR (``build`` finishes it for a target).
    """
    from tesched.lower.pipeline import lower as pipeline_lower
    return pipeline_lower(sch, args, name, debug, simple_mode)


def check_schedule(sch: Schedule) -> None:
    """Run the legality checks of ``lower`` (dependences included) on a schedule without generating code
    (:func:`tesched.lower.pipeline.check_schedule`, whose pipeline loads with the first call).

    Raises
    ------
    ScheduleError
        Naming the primitive, stage and instances of the first check that fails, as ``lower`` would.
    """
    from tesched.lower.pipeline import check_schedule as pipeline_check
    pipeline_check(sch)


def _realize_outputs(outputs: list) -> list:
    """Bounds inference before anything was lowered: load the lowering pipeline (which installs its own)."""
    from tesched.poly.regions import realize_outputs
    return realize_outputs(outputs)


set_region_inference(_realize_outputs)

__all__ = [
    "BoundsError", "BuildError", "boundary", "CIntrinsic", "Target", "__version__", "auto_schedule",
    "explain_schedule", "tune", "Expr", "TensorIntrin", "TensorizeError", "build", "decl_tensor_intrin",
    "get_num_threads", "set_num_threads", "IterVar", "LoweredFunc", "LoweringError", "Schedule", "ScheduleError", "Stage",
    "Tensor", "TeschedError", "abs", "all", "any", "ceil", "check_schedule", "compute", "const", "create_schedule",
    "dtypes", "exp", "floor", "if_then_else", "log", "lower", "max", "maximum", "min", "minimum",
    "placeholder", "reduce_axis", "save_tile_png", "sigmoid", "sqrt", "sum", "tanh", "var", "param", "call_pure_extern", "extern", "extern_call",
    "halving_add", "narrow", "rint", "rounding_halving_add", "rounding_shift_right", "saturate_cast", "widen",
    "load_module", "ModuleLoadError", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "clamp", "fmod",
    "power", "round", "select", "shift_left", "shift_right", "trunc", "prod", "comm_reducer", "CommReducer",
    "min_value", "max_value", "argmax", "argmin",
    "scatter", "scatter_add", "scan", "popcount", "count_leading_zeros", "count_trailing_zeros",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "gradient", "GradientError",
    "cast", "erf", "lerp", "log1p", "log2", "Func", "update",
    "ThreadAxis", "thread_axis", "Device",
]
