"""tesched.graph: a small inference graph IR in Relay's style, its passes, and an executor.

Build a graph with ``var``/``const`` and the ops (``G.nn.conv2d``, ``G.add``, ...), wrap it in a
``Function``, bind parameters, and ``build`` it::

    from tesched import graph as G
    x = G.var("data", shape=(1, 64, 56, 56))
    w = G.var("weight", shape=(64, 64, 3, 3))
    f = G.Function([x, w], G.nn.relu(G.nn.conv2d(x, w, padding=1)))
    exe = G.build(f, params={"weight": w_np})
    out = exe(x_np)

``build`` runs ``passes.DEFAULT_PASSES`` (``simplify_inference``, ``fold_scale_axis``, ``fold_constant``,
``combine_constant_adds``, ``fuse_ops``) minus ``disabled_passes``, and compiles one kernel per fused group
(``exe.kernels``). ``FusionRules`` decide what fuses; ``explain_fusion`` says why each edge did not.
``interpret`` runs a graph with NumPy, for reference. ``partition`` hands the subgraphs that match
user patterns (``pattern("nn.conv2d", "add", "nn.relu")``) to functions of an ``ExternalLibrary``
(C source or a shared library, each function declared as an ``ExternalFunction``); ``build`` compiles the
rest as before. ``exe.export_library("model.so")`` compiles the whole graph into one C library (see
:mod:`.export`) and ``load_executable`` loads it back without a compiler. ``build(f, target="opencl")``
(or ``"cuda"``) gives a ``GpuExecutable`` whose kernels have the default GPU schedules. A shape entry
``Dim("batch", 1, 64)`` is a dynamic dimension: the executable is built once and runs at any size in range.
"""
from __future__ import annotations

import numpy as np

from tesched.graph import annotation, nn, optim, passes
from tesched.graph import text as _text  # noqa: F401  (installs the text form that str() prints)
from tesched.graph.build import build, optimize
from tesched.graph.chain_pattern import is_constant, is_op, pattern, wildcard
from tesched.graph.executor import CompiledGroup, Executable
from tesched.graph.gpu_executor import GpuExecutable, GpuGroup
from tesched.graph.external import ExternalFunction, ExternalFunctionError, ExternalLibrary
from tesched.graph.fusion_rules import FusionRules
from tesched.graph.gradient import gradient
from tesched.graph.interpret import interpret
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tesched.graph.load import LoadedExecutable, load_executable
from tesched.graph.op import Op, get_op
from tesched.graph.ops_elemwise import (
    abs,
    add,
    clip,
    divide,
    erf,
    exp,
    log,
    multiply,
    negative,
    rsqrt,
    sigmoid,
    sqrt,
    subtract,
    tanh,
)
from tesched.graph.ops_gather import gather
from tesched.graph.ops_logic import (
    all,
    any,
    cast,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
    where,
)
from tesched.graph.ops_reduce import max, mean, sum
from tesched.graph.ops_scan import cumsum
from tesched.graph.ops_transform import broadcast_to, concatenate, reshape, split, strided_slice, take, transpose
from tesched.graph.params import bind_params
from tesched.graph.partition import partition
from tesched.graph.passes import explain_fusion
from tesched.graph.types import Dim, FuncType, TensorType, TupleType
from tesched.nn.pattern import Pattern


def var(name: str, shape: tuple[int | Dim, ...] = (), dtype: str = "float32") -> Var:
    """A named input of ``shape`` (ints, or ``Dim("batch", 1, 64)`` for a dynamic dimension) and ``dtype``."""
    return Var(name, TensorType(tuple(shape), dtype))


def const(value: object, name: str | None = None, dtype: str | None = None) -> Constant:
    """A constant from a NumPy array or number (Python floats become float32)."""
    return Constant(np.asarray(value, dtype=dtype) if dtype is not None else value, name=name)


__all__ = [
    "Call", "CompiledGroup", "Constant", "Dim", "Executable", "Expr", "ExternalFunction", "ExternalFunctionError",
    "ExternalLibrary", "GpuExecutable", "GpuGroup", "FuncType", "Function", "FusionRules", "Op", "Pattern", "TensorType", "Tuple", "TupleGetItem",
    "TupleType", "Var", "abs", "add", "annotation", "bind_params", "broadcast_to", "build", "clip", "concatenate",
    "const", "cumsum", "divide", "erf", "exp", "explain_fusion", "get_op", "gradient", "interpret", "is_constant", "is_op",
    "LoadedExecutable", "load_executable", "log", "max", "mean", "multiply", "negative", "nn", "optim", "optimize", "partition",
    "passes", "pattern", "reshape", "rsqrt", "sigmoid", "split", "sqrt", "strided_slice", "subtract", "sum", "take",
    "tanh", "transpose", "var", "wildcard",
    "all", "any", "cast", "gather", "equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_not",
    "logical_or", "logical_xor", "not_equal", "where",
]
