"""The program an exported graph runs, planned from a built executable: inputs, constants, intermediate
buffers, kernel calls in order, and the constants' layout.

:func:`plan` walks ``exe.function`` (the fused graph) with ``exe.kernels``: every input becomes an entry
argument, every constant a 64-byte-aligned slice of one blob, every fused group a kernel call writing a
result (the first result it is) or an intermediate buffer; results no kernel writes (an input or constant
returned as is, a value returned twice) are copied. Each kernel is generated again for the target under
a private name (``<name>_<group>``). :func:`layout` and :func:`side_file` give the constants' bytes as
embedded or as the side file ``<name>.constants`` (a checked header, then the blob). Graphs with
external C functions are refused. This module writes no entry point and compiles nothing.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Sequence

import numpy as np

from tesched.codegen.c import CSource, generate_c
from tesched.driver.compiler import reserved_identifiers
from tesched.driver.kernel import Kernel
from tesched.graph.annotation import STOP_FUSION
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem
from tesched.graph.types import TensorType
from tesched.graph.visit import post_order
from tesched.lower.pipeline import lower_for_target
from tesched.target import Target

EMBED_LIMIT = 64 << 20
"""Constants up to this many bytes are embedded in the library by default; more go to a side file."""

ALIGN = 64
SIDE_FILE_MAGIC = b"TSCONST1"
_SIDE_HEADER = struct.Struct("<8sQQ32s8x")    # magic, payload bytes, checksum, SHA-256 of the payload


class Group(Protocol):
    """A compiled fused group, as an executable lists it."""

    function: Function
    kernel: Kernel


class Built(Protocol):
    """What an export reads from an executable: its fused function, its groups, its external calls."""

    function: Function
    kernels: Sequence[Group]
    external_calls: Sequence[Any]


@dataclass(frozen=True)
class Value:
    """A tensor of the plan: where it lives (``"input"``, ``"output"``, ``"constant"`` or ``"buffer"``),
    its index there (a byte offset for a constant), its type and its name (for messages)."""

    place: str
    index: int
    type: TensorType
    name: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.type.shape, dtype=np.int64)) * np.dtype(self.type.dtype).itemsize


@dataclass(frozen=True)
class HeapBuffer:
    """A heap buffer of a kernel: its name, dtype and shape (None where it depends on the kernel's loops)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None


@dataclass(frozen=True)
class Step:
    """One kernel call: its C function, its arguments (the group's inputs, then its output), the group's
    name, and the kernel's heap buffers in the order of its error codes."""

    function: str
    args: tuple[Value, ...]
    group: str
    heap: tuple[HeapBuffer, ...]


@dataclass
class Plan:
    """The exported program: inputs, outputs, constants blob, intermediate buffers, kernel calls in order,
    copies into results no kernel writes (an input or constant returned as is, a result returned twice),
    and the kernels' C sources."""

    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    constants: bytearray = field(default_factory=bytearray)
    buffers: list[Value] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    copies: list[tuple[Value, Value]] = field(default_factory=list)
    kernels: list[CSource] = field(default_factory=list)


@dataclass(frozen=True)
class ConstantsLayout:
    """How the constants ship: in side ``file`` (its name) or embedded (None); the padded blob, its
    checksum (``ts_checksum``) and its SHA-256."""

    file: str | None
    blob: bytes
    checksum: int
    sha256: bytes


def plan(exe: Built, prefix: str, target: Target) -> Plan:
    """The program of ``exe``'s fused graph with every kernel generated for ``target``, its C functions
    named ``prefix_<group>``. Raises ``TypeError`` for a graph with external calls."""
    fn = exe.function
    if exe.external_calls:
        raise TypeError(f"export of a graph: it calls external C functions "
                        f"({', '.join(c.name for c in exe.external_calls)}), which an exported library cannot "
                        "carry; build the graph without partitioning it to export it")
    out = Plan()
    values: dict[int, Value] = {}
    for k, p in enumerate(fn.params):
        values[id(p)] = Value("input", k, p.tensor_type, p.name)
        out.inputs.append(values[id(p)])
    results = _results(fn.body)
    out.outputs = [Value("output", k, leaf.tensor_type, _output_name(k, len(results))) for k, leaf in enumerate(results)]
    kernel_of = {id(group.function): group.kernel for group in exe.kernels}
    generated: dict[int, tuple[CSource, tuple[HeapBuffer, ...]]] = {}
    reserved = reserved_identifiers(target) | {prefix}
    for node in post_order(fn.body):
        if isinstance(node, Constant):
            values[id(node)] = _constant(out, node)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            kernel = kernel_of[id(node.op)]
            if id(kernel) not in generated:
                finished = lower_for_target(kernel.lowered, target)
                src = generate_c(replace(finished, name=f"{prefix}_{node.op.name}"), reserved, target)
                reserved = reserved | {src.name}
                out.kernels.append(src)
                generated[id(kernel)] = (src, tuple(HeapBuffer(b.name, b.dtype, _constant_shape(b.shape))
                                                    for b in src.allocations))
            src, heap = generated[id(kernel)]
            values[id(node)] = _destination(out, node, results)
            args = tuple(_value(values, a, node.op.name) for a in node.args) + (values[id(node)],)
            out.steps.append(Step(src.name, args, node.op.name, heap))
    for result, leaf in zip(out.outputs, results):
        if id(leaf) not in values:
            raise TypeError(f"export of a graph: result {result.name} is a {type(leaf).__name__}, which the export "
                            "does not know how to compute")
        if values[id(leaf)] != result:
            out.copies.append((result, values[id(leaf)]))
    return out


def _source(node: Expr) -> Expr:
    """The node whose value ``node`` is: through stop_fusion annotations and fields of literal tuples."""
    while True:
        if isinstance(node, Call) and node.op is STOP_FUSION:
            node = node.args[0]
        elif isinstance(node, TupleGetItem) and isinstance(_source(node.tuple_value), Tuple):
            node = _source(node.tuple_value).fields[node.index]  # type: ignore[attr-defined]
        else:
            return node


def _value(values: dict[int, Value], node: Expr, group: str) -> Value:
    """The planned value of argument ``node`` of ``group``."""
    source = _source(node)
    if id(source) not in values:
        raise TypeError(f"export of a graph: group {group} reads a {type(source).__name__}, which the export does "
                        "not know how to compute")
    return values[id(source)]


def _results(body: Expr) -> list[Expr]:
    """The tensors a function returns, flattened from (nested) tuples, in order."""
    node = _source(body)
    return [leaf for f in node.fields for leaf in _results(f)] if isinstance(node, Tuple) else [node]


def _output_name(k: int, count: int) -> str:
    return "output" if count == 1 else f"output{k}"


def _constant_shape(shape: Sequence[object]) -> tuple[int, ...] | None:
    """``shape`` when every extent is an int, else None (it depends on the kernel's loops)."""
    return tuple(d for d in shape if isinstance(d, int)) if all(isinstance(d, int) for d in shape) else None


def _destination(out: Plan, node: Call, results: list[Expr]) -> Value:
    """Where group ``node`` writes: the first result it is, else a new intermediate buffer."""
    for k, leaf in enumerate(results):
        if leaf is node:
            return out.outputs[k]
    value = Value("buffer", len(out.buffers), node.tensor_type, node.op.name)  # type: ignore[union-attr]
    out.buffers.append(value)
    return value


def _constant(out: Plan, node: Constant) -> Value:
    """Append ``node``'s bytes to the blob at the next aligned offset."""
    out.constants.extend(bytes(-len(out.constants) % ALIGN))
    offset = len(out.constants)
    out.constants.extend(np.ascontiguousarray(node.data).tobytes())
    return Value("constant", offset, node.tensor_type, node.name or "constant")


def checksum(blob: bytes) -> int:
    """What ``ts_checksum`` (``tesched_export.h``) computes over ``blob`` (a multiple of 8 bytes): the sums
    of its 64-bit words, plain and weighted by position, mixed."""
    words = np.frombuffer(blob, "<u8")
    plain = int(words.sum(dtype=np.uint64))
    weighted = int((words * np.arange(1, len(words) + 1, dtype=np.uint64)).sum(dtype=np.uint64))
    return (plain ^ (weighted * 0x9E3779B97F4A7C15)) & (2**64 - 1)


def layout(blob: bytes, file: str | None) -> ConstantsLayout:
    """The constants ``blob`` padded to a whole number of :data:`ALIGN` bytes (at least one), shipped in
    side ``file`` or embedded (None)."""
    padded = blob + bytes(-len(blob) % ALIGN or (ALIGN if not blob else 0))
    return ConstantsLayout(file, padded, checksum(padded), hashlib.sha256(padded).digest())


def side_file(constants: ConstantsLayout) -> bytes:
    """The side file's bytes: a 64-byte header (magic ``TSCONST1``, payload size, checksum, SHA-256 of the
    payload) and the padded constants."""
    return _SIDE_HEADER.pack(SIDE_FILE_MAGIC, len(constants.blob), constants.checksum, constants.sha256) + \
        constants.blob
