"""The kernel the executor runs for a fused group that is one ``nn.attention``: the online-softmax C kernel of
:mod:`.attention_source`, specialised to the group's shapes, scale, mask and bias broadcast, compiled once
per specialisation (and cached on disk with the other kernels), and called as an external function.

:func:`compile_attention_group` returns ``None`` for any other group, and for an attention whose shapes are
not all ints or whose dtype is not float32: those keep the kernel of the op's tensor-expression declaration
(:func:`tesched.nn.attention.attention`, a two-pass softmax per row), which also defines the op for
``interpret`` and for users of ``tesched.nn``.
"""
from __future__ import annotations

import hashlib

from tesched.graph.attention_source import AttentionShape, attention_source
from tesched.graph.external import ExternalFunction, ExternalKernel, ExternalLibrary
from tesched.graph.external_op import ExternalCall
from tesched.graph.ir import Call, Function
from tesched.graph.types import TensorType
from tesched.intrin.isa import select_isa

_LIBRARIES: dict[AttentionShape, tuple[ExternalLibrary, ExternalFunction]] = {}


def bias_strides(shape: tuple[int, ...], batch: int, rows: int, keys: int) -> tuple[int, int, int]:
    """The element strides along ``(batch, rows, keys)`` of a C-contiguous bias of ``shape`` broadcast to
    ``(batch, rows, keys)`` (0 along an axis of extent 1 or missing)."""
    padded = (1,) * (3 - len(shape)) + tuple(shape)
    strides, step = [], 1
    for extent, full in zip(reversed(padded), (keys, rows, batch)):
        strides.append(step if extent == full and extent != 1 else 0)
        step *= extent
    return strides[2], strides[1], strides[0]


def attention_shape(call: Call) -> AttentionShape | None:
    """What the kernel of ``call`` (an ``nn.attention``) is specialised to; ``None`` when the C kernel does not
    serve it (a dtype other than float32, a dimension that is not an int)."""
    types = [a.tensor_type for a in call.args]
    if any(t.dtype != "float32" for t in types) or \
            any(t.is_dynamic for t in types + [call.tensor_type]):
        return None
    (batch, rows, depth), (_, _, keys), (_, _, value_depth) = (t.shape for t in types[:3])
    strides = bias_strides(types[3].shape, batch, rows, keys) if len(types) == 4 else None
    return AttentionShape(batch, rows, keys, depth, value_depth, float(call.attrs["scale"]), call.attrs["causal"],
                          strides, select_isa())


def _library(shape: AttentionShape, types: list[TensorType], out: TensorType) -> tuple[ExternalLibrary,
                                                                                       ExternalFunction]:
    if shape not in _LIBRARIES:
        name = "tesched_attention_" + hashlib.sha256(repr(shape).encode()).hexdigest()[:16]
        function = ExternalFunction(name, tuple(t.shape for t in types), out.shape, "float32")
        _LIBRARIES[shape] = ExternalLibrary([function], source=attention_source(name, shape)), function
    return _LIBRARIES[shape]


def compile_attention_group(fn: Function) -> ExternalCall | None:
    """The external call running primitive function ``fn`` when it is one ``nn.attention`` of the C kernel's
    reach (see the module doc), else ``None``."""
    body = fn.body
    if not (isinstance(body, Call) and not isinstance(body.op, Function) and body.op_name == "nn.attention"
            and all(any(a is p for p in fn.params) for a in body.args)):
        return None
    shape = attention_shape(body)
    if shape is None:
        return None
    types = [a.tensor_type for a in body.args]
    library, function = _library(shape, types, body.tensor_type)
    positions = tuple(next(k for k, p in enumerate(fn.params) if p is a) for a in body.args)
    kernel = ExternalKernel(library, function, types, body.tensor_type)
    return ExternalCall("nn.attention", fn, kernel, positions, library)
