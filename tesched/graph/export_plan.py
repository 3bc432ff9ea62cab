"""The program an exported graph runs, planned from a built executable: inputs, constants, intermediate
buffers, kernel calls in order, and the constants' layout.

:func:`plan` walks ``exe.function`` (the fused graph) with ``exe.kernels``: every input becomes an entry
argument, every constant a 64-byte-aligned slice of one blob, every fused group a kernel call (or a call
of an external function given as C source, compiled into the library) writing its
outputs (one, or a tuple) into intermediate buffers, except that the first result a buffer holds is
written straight into the entry's output argument; a group without a kernel that only reshapes its input
is a view of the same bytes. Results no kernel writes (an input or constant returned as is, a value
returned twice) are copied. Each kernel is generated again for the target under
a private name (``<name>_<group>``). :func:`layout` and :func:`side_file` give the constants' bytes as
embedded or as the side file ``<name>.constants`` (a checked header, then the blob). External functions
in a shared object are refused. This module writes no entry point and compiles nothing.
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
from tesched.graph.dataflow import fold_values, is_view
from tesched.graph.external_compile import translation_unit
from tesched.graph.external_op import ExternalCall
from tesched.graph.ir import Call, Constant, Function
from tesched.graph.types import TensorType, TupleType
from tesched.lower.pipeline import lower_for_target
from tesched.target import Target
from tesched.te import dtype as dt

EMBED_LIMIT = 64 << 20
"""Constants up to this many bytes are embedded in the library by default; more go to a side file."""

ALIGN = 64
SIDE_FILE_MAGIC = b"TSCONST1"
_SIDE_HEADER = struct.Struct("<8sQQ32s8x")    # magic, payload bytes, checksum, SHA-256 of the payload


class Group(Protocol):
    """A compiled fused group, as an executable lists it."""

    @property
    def function(self) -> Function: ...
    @property
    def kernel(self) -> Kernel: ...


class Built(Protocol):
    """What an export reads from an executable: its fused function, its groups, its external calls."""

    @property
    def function(self) -> Function: ...
    @property
    def kernels(self) -> Sequence[Group]: ...
    @property
    def external_calls(self) -> Sequence[Any]: ...


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
        return int(np.prod(self.type.shape, dtype=np.int64)) * dt.DTYPES[self.type.dtype].itemsize


@dataclass(frozen=True)
class HeapBuffer:
    """A heap buffer of a kernel: its name, dtype and shape (None where it depends on the kernel's loops)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None


@dataclass(frozen=True)
class Step:
    """One call: its C function, its arguments (the group's inputs, then its outputs), the group's name,
    the kernel's heap buffers in the order of its error codes, and for an external function the sizes it
    takes after the arrays (it returns no status)."""

    function: str
    args: tuple[Value, ...]
    group: str
    heap: tuple[HeapBuffer, ...]
    sizes: tuple[int, ...] | None = None


@dataclass
class Plan:
    """The exported program: inputs, outputs, constants blob, intermediate buffers, calls in order, copies
    into results no kernel writes (an input or constant returned as is, a result returned twice), the
    kernels' C sources, and the external libraries' sources and function declarations."""

    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    constants: bytearray = field(default_factory=bytearray)
    buffers: list[Value] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    copies: list[tuple[Value, Value]] = field(default_factory=list)
    kernels: list[CSource] = field(default_factory=list)
    external_sources: list[str] = field(default_factory=list)
    external_declarations: list[str] = field(default_factory=list)


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
    named ``prefix_<group>``. External functions given as C source are compiled into the library; a
    graph calling one from a shared object raises ``TypeError``."""
    fn = exe.function
    out = Plan()
    out.inputs = [Value("input", k, p.tensor_type, p.name) for k, p in enumerate(fn.params)]
    kernels = _Kernels(exe, prefix, target, out)
    result = fold_values(fn, lambda k, p: out.inputs[k], lambda node: _constant(out, node), kernels.call, "export")
    _assign_results(out, _leaves(result))
    return out


class _Kernels:
    """The kernel steps of a plan: each group's kernel generated once for the target, each call a step
    writing new intermediate buffers (a group that only reshapes its input is a view, not a step)."""

    def __init__(self, exe: Built, prefix: str, target: Target, out: Plan):
        self.kernel_of = {id(group.function): group.kernel for group in exe.kernels}
        self.external_of = {id(call.function): call for call in exe.external_calls}
        self.libraries: set[int] = set()
        self.prefix, self.target, self.out = prefix, target, out
        self.generated: dict[int, tuple[CSource, tuple[HeapBuffer, ...]]] = {}
        self.reserved = reserved_identifiers(target) | {prefix}

    def source(self, kernel: Kernel, group: str) -> tuple[CSource, tuple[HeapBuffer, ...]]:
        if id(kernel) not in self.generated:
            if kernel.lowered is None:
                raise TypeError(f"export of a graph: the kernel of group {group} has no loop IR to compile again")
            finished = lower_for_target(kernel.lowered, self.target)
            src = generate_c(replace(finished, name=f"{self.prefix}_{group}"), self.reserved, self.target)
            self.reserved = self.reserved | {src.name}
            self.out.kernels.append(src)
            self.generated[id(kernel)] = (src, tuple(HeapBuffer(b.name, b.dtype, _constant_shape(b.shape))
                                                     for b in src.allocations))
        return self.generated[id(kernel)]

    def call(self, node: Call, args: list[Any]) -> Any:
        group = node.op
        assert isinstance(group, Function), "a call of a fused group"
        if any(not isinstance(a, Value) for a in args):
            raise TypeError(f"export of a graph: group {group.name} takes a tuple argument")
        outputs = tuple(Value("buffer", len(self.out.buffers) + k, t, group.name)
                        for k, t in enumerate(node.tensor_types()))
        if id(group) in self.external_of:
            call = self.external_of[id(group)]
            self.external(call)
            inputs = tuple(args[k] for k in call.arg_positions)
            step = Step(call.kernel.function.name, inputs + outputs, group.name, (), tuple(call.kernel.sizes))
        elif id(group) in self.kernel_of:
            src, heap = self.source(self.kernel_of[id(group)], group.name)
            step = Step(src.name, tuple(args) + outputs, group.name, heap)
        elif is_view(group):
            return replace(args[0], type=node.tensor_type)
        else:
            raise TypeError(f"export of a graph: group {group.name} has no compiled kernel")
        self.out.buffers.extend(outputs)
        self.out.steps.append(step)
        return outputs if isinstance(node.checked_type, TupleType) else outputs[0]

    def external(self, call: ExternalCall) -> None:
        """Add the source of the external library ``call`` calls (once) and its functions' prototypes."""
        library, group = call.library, call.function
        if id(library) in self.libraries:
            return
        if library.source is None or library.compile_flags:
            how = f"the shared object {library.path}" if library.source is None else \
                f"source with compile flags {' '.join(library.compile_flags)}"
            raise TypeError(f"export of a graph: group {group.name} calls an external library given as {how}; "
                            "an exported library can carry external functions given as plain C source only")
        self.libraries.add(id(library))
        prototypes = [f"{f.prototype()};" for f in library.functions.values()]
        self.out.external_sources.append(translation_unit(library.source, prototypes))
        self.out.external_declarations += prototypes


def _leaves(structure: Any) -> list[Value]:
    return [leaf for s in structure for leaf in _leaves(s)] if isinstance(structure, tuple) else [structure]


def _assign_results(out: Plan, leaves: list[Value]) -> None:
    """Make each result the output argument it is returned in: a kernel writes the first result it
    computes straight into its output; every other result is copied there after the kernels ran."""
    out.outputs = [Value("output", k, leaf.type, "output" if len(leaves) == 1 else f"output{k}")
                   for k, leaf in enumerate(leaves)]
    written: dict[int, Value] = {}     # buffer index -> the output that replaces it
    for result, leaf in zip(out.outputs, leaves):
        if leaf.place == "buffer" and leaf.index not in written:
            written[leaf.index] = result
    kept = [b for b in out.buffers if b.index not in written]
    renumber = {b.index: k for k, b in enumerate(kept)}

    def moved(v: Value) -> Value:
        if v.place != "buffer":
            return v
        if v.index in written:
            return replace(written[v.index], type=v.type)
        return replace(v, index=renumber[v.index])

    out.buffers = [moved(b) for b in kept]
    out.steps = [replace(s, args=tuple(moved(a) for a in s.args)) for s in out.steps]
    out.copies = [(result, moved(leaf)) for result, leaf in zip(out.outputs, leaves) if moved(leaf) != result]


def _constant_shape(shape: Sequence[object]) -> tuple[int, ...] | None:
    """``shape`` when every extent is an int, else None (it depends on the kernel's loops)."""
    return tuple(d for d in shape if isinstance(d, int)) if all(isinstance(d, int) for d in shape) else None


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
