"""Loop IR -> GPU kernels: OpenCL C or CUDA C from one printer and a table of the two dialects.

A lowered function is cut into kernels: the statements of its body outside every loop bound to a GPU
index (``Stage.bind``) are the host's (sequences, produce markers, whole intermediate tensors, which the
host allocates in device memory), and each maximal statement below them is one kernel, launched in
order. In a kernel, a loop bound to ``blockIdx.d`` becomes ``v = begin + group id d`` guarded by
``v < end``, and one bound to ``threadIdx.d`` runs from ``begin + local id d`` by steps of the launch's
size along that index (each iteration runs even where a loop has more than the launch covers); the
launch geometry along each index
is the largest trip count of the loops bound to it: an expression of the size parameters, or the
constant bound the lowering knows (:class:`Launch`, evaluated by the host when it runs).

Memory: a ``compute_at`` buffer allocated inside the block loops but outside the thread loops lives in
shared memory (``__local``/``__shared__``, declared at the kernel's top, of the footprint's constant box),
one allocated inside a thread loop in registers (a private array). A store to memory the threads share runs only on
the threads whose index is 0 along each thread index no loop around it is bound to (in a block, outside
the thread loops: on the group's first thread), and a barrier goes between two
statements when one writes shared memory the other accesses at another element offset (another thread's
element), and at the end of a serial loop whose iterations do that. Offsets are compared with each loop
bound to a thread index written as ``begin + index``: equal offsets are the same thread's element (the
dependence check has refused thread loops whose iterations share an element). Other loop variables make
offsets differ, so the test is conservative: it may place a barrier a finer (isl) analysis would not.

A reduction loop bound to a thread index is a cross-thread reduction: each thread accumulates the
iterations it runs in a register, the block combines the partial results in shared memory (a tree, one
barrier per level), and its first thread combines the total into the element.

Inside a kernel, an unbound loop runs in every thread; ``unroll`` gives ``#pragma unroll``, ``vectorize``
is a plain loop (no float4 yet), and an OpenMP ``parallel`` loop is refused.

It refuses, as :class:`~tesched.errors.ScheduleError` naming the stage and the loop: a loop left unbound
outside the kernel, a block loop inside a serial or thread loop, a shared buffer of symbolic size or one
over the target's shared-memory limit, more threads than the target allows, a cache stage computed
where its scope cannot live. It does not compile or run anything (:mod:`tesched.driver.gpu`) and knows
nothing of isl.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable

from tesched.arith.simplify import simplify
from tesched.codegen.c import CodeGen
from tesched.codegen.c_expr import CExpr, c_type
from tesched.errors import BuildError, ScheduleError
from tesched.ir import nodes as ir
from tesched.ir.visitor import child_fields, map_stmt, walk_stmts
from tesched.lower.func import LoweredFunc
from tesched.schedule.kinds import LoopKind, ThreadAxis
from tesched.target import Target
from tesched.te import dtype as dt
from tesched.te.expr import Binary, Const, Expr, Var
from tesched.te.visit import structural_key, substitute, walk
from tesched.transform.simplify_indices import loop_range

GPU_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")

# the C type names the expression printer writes, for each dialect
_OPENCL_TYPES = """typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define INT64_C(x) x##L
#define TS_FN static inline
"""
_CUDA_TYPES = """typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(x) x##LL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define TS_FN static __device__ __forceinline__
"""
# OpenCL C spells the single-precision functions without the f suffix (they are overloaded)
_OPENCL_FLOAT_FUNCTIONS = "".join(
    f"#define {fn}f {fn}\n" for fn in ("exp", "log", "log2", "log1p", "erf", "sqrt", "tanh", "floor", "ceil", "fabs",
                                       "rint", "trunc", "pow", "fmod", "sin", "cos", "tan", "asin", "acos", "atan",
                                       "sinh", "cosh", "atan2"))

# the helpers of the runtime header a scalar expression may call, with the same semantics
_HELPERS = """TS_FN int64_t ts_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
TS_FN int64_t ts_floormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TS_FN int64_t ts_fmod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
#define TS_MINMAX(T, S) \\
  TS_FN T ts_min_##S(T a, T b) { return (a < b || a != a) ? a : b; } \\
  TS_FN T ts_max_##S(T a, T b) { return (a > b || a != a) ? a : b; }
TS_MINMAX(float, f32)
TS_MINMAX(int32_t, i32)
TS_MINMAX(int64_t, i64)
TS_MINMAX(int8_t, bool)
TS_FN int32_t ts_abs_i32(int32_t a) { return a < 0 ? -a : a; }
TS_FN int64_t ts_abs_i64(int64_t a) { return a < 0 ? -a : a; }
TS_FN float ts_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
"""
_DOUBLE_HELPERS = """TS_MINMAX(double, f64)
TS_FN double ts_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
"""


_OPENCL_VECTOR_TYPES = {"f32": "float", "f64": "double", "i8": "char", "u8": "uchar", "i16": "short", "u16": "ushort",
                        "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong"}
_LANES = (2, 4, 8, 16)
_COMPONENTS = "0123456789abcdef"


def _opencl_vectors() -> tuple[str, frozenset[str]]:
    """OpenCL C for the vector helpers the expression printer calls (``ts_vload_f32x4`` ...), with the
    names it defines: the runtime header's semantics over OpenCL's built-in vector types."""
    lines, names = [], set()
    for suffix, scalar in _OPENCL_VECTOR_TYPES.items():
        for n in _LANES:
            v, t = f"{suffix}x{n}", f"{scalar}{n}"
            lanes = [f"(v).s{_COMPONENTS[k]}" for k in range(n)]
            nan = " || isnan(a)" if suffix.startswith("f") else ""
            lines += [f"typedef {t} ts_{v};",
                      f"#define ts_vload_{v}(p) vload{n}(0, p)",
                      f"#define ts_vstore_{v}(p, x) vstore{n}(x, 0, p)",
                      f"#define ts_vbcast_{v}(x) (({t})(x))",
                      f"#define ts_vsel_{v}(c, a, b) select(b, a, c)",
                      f"#define ts_vmin_{v}(a, b) select(b, a, (a) < (b){nan})",
                      f"#define ts_vmax_{v}(a, b) select(b, a, (a) > (b){nan})",
                      f"#define ts_hadd_{v}(v) ({' + '.join(lanes)})",
                      f"#define ts_hmul_{v}(v) ({' * '.join(lanes)})"]
            names |= {f"ts_{h}_{v}" for h in ("vload", "vstore", "vbcast", "vsel", "vmin", "vmax", "hadd", "hmul")}
            if not suffix.startswith("f"):
                ramp = ", ".join(str(k) for k in range(n))
                lines.append(f"#define ts_vramp_{v}(b) (({t})(b) + ({t})({ramp}))")
                names.add(f"ts_vramp_{v}")
    return "\n".join(lines) + "\n", frozenset(names)


_OPENCL_VECTOR_PRELUDE, OPENCL_VECTOR_HELPERS = _opencl_vectors()


@dataclass(frozen=True)
class Dialect:
    """How one GPU language spells what the kernels need."""

    name: str
    kernel: str                 # what precedes a kernel's name in its definition
    pointer: str                # qualifier of a buffer argument's elements
    restrict: str
    shared: str                 # qualifier of a shared-memory array
    barrier: str
    index: dict[str, str]       # GPU index tag -> its expression; blockDim/threadDim.d: the launch's sizes
    prelude: str
    double_prelude: str         # what float64 needs first
    vector_helpers: frozenset[str] = frozenset()   # the vector helpers its prelude defines (none: scalar code)


OPENCL = Dialect("opencl", "__kernel void", "__global ", "restrict", "__local ", "barrier(CLK_LOCAL_MEM_FENCE);",
                 {f"{k}.{d}": f"get_{fn}({i})" for k, fn in (("blockIdx", "group_id"), ("threadIdx", "local_id"),
                                                            ("blockDim", "num_groups"), ("threadDim", "local_size"))
                  for i, d in enumerate("xyz")},
                 _OPENCL_TYPES + _OPENCL_FLOAT_FUNCTIONS + _OPENCL_VECTOR_PRELUDE,
                 "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n", OPENCL_VECTOR_HELPERS)
CUDA = Dialect("cuda", 'extern "C" __global__ void', "", "__restrict__", "__shared__ ", "__syncthreads();",
               {**{f"{k}.{d}": f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz"},
                **{f"blockDim.{d}": f"gridDim.{d}" for d in "xyz"}, **{f"threadDim.{d}": f"blockDim.{d}" for d in "xyz"}},
               _CUDA_TYPES, "")
DIALECTS = {"opencl": OPENCL, "cuda": CUDA}


@dataclass
class Launch:
    """One kernel and its launch geometry: per GPU index tag, the trip counts of the loops bound to it
    (ints or expressions of the size parameters); the launch takes the largest."""

    name: str
    extents: dict[str, list[Expr]] = field(default_factory=dict)
    shared_bytes: int = 0

    def geometry(self, evaluate: Callable[[Expr], int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """``(blocks, threads)`` along x, y, z, given the value of a size expression."""
        def size(tag: str) -> int:
            return max([max(evaluate(e), 1) for e in self.extents.get(tag, [])], default=1)
        return (tuple(size(f"blockIdx.{d}") for d in "xyz"),      # type: ignore[return-value]
                tuple(size(f"threadIdx.{d}") for d in "xyz"))


@dataclass
class GpuSource:
    """Generated GPU code: its ``source``, its dialect, the kernels in launch order and the intermediate
    tensors the host allocates in device memory (``scratch``)."""

    source: str
    dialect: str
    kernels: list[Launch]
    scratch: list[ir.Buffer]


class ScalarOnly(BuildError):
    """The explicit SIMD code of a kernel uses a vector operation the dialect does not provide (the
    driver then builds it with scalar loops)."""


class _Access:
    """One access of a shared buffer: the buffer, whether it writes, and the key of its indices (with each
    loop bound to a GPU thread index written as ``begin + index``, so that two loops over the same range
    bound to the same index give equal keys: an element at equal keys is the same thread's)."""

    def __init__(self, buffer: ir.Buffer, write: bool, indices: tuple, threads: dict[Var, Expr]):
        self.buffer, self.write = buffer, write
        self.key = structural_key(simplify(substitute(ir.flat_index(buffer, indices), threads)))

    def conflicts(self, other: "_Access") -> bool:
        """Whether another thread may touch this one's element between the two (a barrier is needed)."""
        return self.buffer is other.buffer and (self.write or other.write) and self.key != other.key


class OpenCLExpr(CExpr):
    """OpenCL C spellings of the vector expressions GCC's extensions write otherwise."""

    def visit_VCast(self, e: ir.VCast) -> str:
        base, lanes = ir.split_dtype(e.dtype)
        return f"convert_{_OPENCL_VECTOR_TYPES[dt.info(base).suffix]}{lanes}({self.text(e.value)})"

    def visit_Lane(self, e: ir.Lane) -> str:
        return f"({self.text(e.value)}).s{_COMPONENTS[e.index]}"


class GpuCodeGen(CodeGen):
    """Kernels of a lowered function in one dialect: ``program()`` returns its :class:`GpuSource`."""

    def __init__(self, func: LoweredFunc, target: Target, dialect: Dialect):
        super().__init__(func, frozenset(), target)
        self.dialect = dialect
        if dialect.vector_helpers:
            self.exprs = OpenCLExpr(self.names, self.status)
        self.scratch: list[ir.Buffer] = []
        self.kernels: list[Launch] = []
        self.shared_lines: list[str] = []
        self.shared: set[int] = set()          # ids of the buffers in shared memory
        self.private: set[int] = set()         # ids of the buffers in registers
        self.enclosing: list[ir.For] = []
        self.threads = False                   # whether the kernel being written has threads
        self.launch = Launch("")               # the kernel being written
        self.one_block = False                 # whether it has threads but no block loop
        self.root_stage = ""                   # the stage the kernel produces (its others are computed inside)
        self.producing = ""                    # the stage whose produce block the host is in
        self.kernel_texts: list[str] = []
        self._shared_bytes = 0                 # shared memory of the kernel being written
        self.tag_vars: dict[str, Var] = {}     # a GPU thread index as a variable (keys of shared accesses)
        self.thread_sizes: dict[str, int] = {}  # threads per block along each index, in the kernel being written
        self.scopes = {id(sm.buffer): (sm.name, sm.stage.memory_scope) for sm in func.model.stages
                       if getattr(sm, "buffer", None) is not None}

    # host side ------------------------------------------------------------------------------------
    def host(self, s: ir.Stmt) -> None:
        """Walk the statements the host runs; each other statement is a kernel."""
        if isinstance(s, ir.Block):
            for c in s.stmts:
                self.host(c)
        elif isinstance(s, ir.Produce):
            self.producing = s.stage
            self.host(s.body)
        elif isinstance(s, ir.Allocate) and s.buffer.scope is ir.BufferScope.GLOBAL:
            self.scratch.append(s.buffer)
            self.host(s.body)
        else:
            self.kernel(s)

    def kernel(self, s: ir.Stmt) -> None:
        launch = Launch(self.names.fresh(f"{self.func.name}_kernel{len(self.kernels)}"))
        self.launch = launch
        for loop in walk_stmts(s):
            if isinstance(loop, ir.For) and loop.thread:
                launch.extents.setdefault(loop.thread, []).append(self._trip_count(loop))
        self.threads = any(tag.startswith("thread") for tag in launch.extents)
        # no block loop (those of one iteration are not generated): the kernel is one block of threads
        self.one_block = self.threads and not any(tag.startswith("block") for tag in launch.extents)
        self.root_stage = self.producing or next((x.stage for x in walk_stmts(s)
                                                  if isinstance(x, (ir.Produce, ir.For)) and x.stage), "")
        self._check_threads(launch, s)
        self.lines, self.shared_lines, self.enclosing = [], [], []
        self.indent = 1
        self.visit(s)
        body = self.lines
        params = [f"{self.dialect.pointer}{dt.C_TYPES[b.dtype]} *{self.dialect.restrict} {self.name(b, b.name)}"
                  for b in self.func.args + tuple(self.scratch)]
        params += [f"int64_t {self.name(p, p.name)}" for p in self.func.params]
        params += [f"{dt.C_TYPES[p.dtype]} {self.name(p, p.name)}" for p in self.func.scalars]
        launch.shared_bytes = self._shared_bytes
        self.kernel_texts.append("\n".join([f"{self.dialect.kernel} {launch.name}({', '.join(params)}) {{"]
                                           + self.shared_lines + body + ["}", ""]))
        self.kernels.append(launch)
        self._shared_bytes = 0

    def _trip_count(self, loop: ir.For) -> Expr:
        trips = simplify(Binary("sub", loop.end, loop.begin, "int64"))
        params = {id(p) for p in self.func.params}
        if all(id(v) in params for v in walk(trips) if isinstance(v, Var)):
            return trips
        if loop.extent_hint is not None:
            return Const(loop.extent_hint, "int64")
        raise ScheduleError(f"loop {loop.var.name} of stage {loop.stage} is bound to {loop.thread}, but its trip count "
                            f"{trips!r} depends on the loops around it and has no constant bound: split it by a "
                            "constant factor and bind the inner loop")

    def _check_threads(self, launch: Launch, s: ir.Stmt) -> None:
        constant = 1
        for d in "xyz":
            sizes = launch.extents.get(f"threadIdx.{d}", [])
            if any(not isinstance(e, Const) for e in sizes):
                raise ScheduleError(f"{launch.name}: the loops bound to threadIdx.{d} have a symbolic trip count "
                                    "(a block's size must be known when compiling): split them by a constant factor")
            self.thread_sizes[f"threadIdx.{d}"] = max([int(e.value) for e in sizes if isinstance(e, Const)], default=1)
            constant *= self.thread_sizes[f"threadIdx.{d}"]
        if constant > self.target.gpu_max_threads:
            loops = ", ".join(f"{tag}: {max(int(e.value) for e in es if isinstance(e, Const))}"
                              for tag, es in launch.extents.items() if tag.startswith("thread"))
            stages = ", ".join(dict.fromkeys(f.stage for f in walk_stmts(s) if isinstance(f, ir.For) and f.thread))
            raise ScheduleError(f"{launch.name} (stages {stages}): {constant} threads per block ({loops}) "
                                f"but {self.target.name} allows {self.target.gpu_max_threads}; use smaller thread "
                                "tiles")

    # kernels --------------------------------------------------------------------------------------
    @property
    def _scope(self) -> str:
        """``grid`` outside every bound loop, ``block`` inside block loops only (or anywhere outside thread
        loops in a kernel of one block), ``thread`` in a thread loop."""
        kinds = [f.kind for f in self.enclosing]
        if LoopKind.GPU_THREAD in kinds:
            return "thread"
        return "block" if LoopKind.GPU_BLOCK in kinds or self.one_block else "grid"

    def visit_For(self, s: ir.For) -> None:
        if not s.thread:
            outside = not any(f.kind.bound for f in self.enclosing)
            if self._scope == "grid" or (outside and not s.reduction and s.stage == self.root_stage):
                raise ScheduleError(
                    f"loop {s.var.name} of stage {s.stage} is left unbound outside the GPU kernel: bind it "
                    f"(s[{s.stage}].bind({s.var.name}, ts.thread_axis('blockIdx.x'))) or bind a loop around it")
            if s.kind is LoopKind.PARALLEL:
                raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is parallel (OpenMP threads) inside a GPU "
                                    "kernel: bind it to a GPU index instead")
            if s.kind is LoopKind.UNROLLED or any(k == "unroll" for k, _ in s.pragmas):
                count = next((int(v) for k, v in s.pragmas if k == "unroll"), s.extent_hint or 0)
                self.emit(f"#pragma unroll {count}" if count else "#pragma unroll")
            self.enclosing.append(s)
            super().visit_For(replace(s, kind=LoopKind.SERIAL, pragmas=()))
            self.enclosing.pop()
            if self._scope == "block" and self._inner_conflicts(s.body):
                self.lines.insert(len(self.lines) - 1, "  " * (self.indent + 1) + self.dialect.barrier)
            return
        axis = ThreadAxis(s.thread)
        same = next((f for f in self.enclosing if f.thread == s.thread), None)
        if same is not None:
            raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is bound to {s.thread} inside loop "
                                f"{same.var.name} of stage {same.stage}, bound to the same index: bind it to another")
        if axis.kind is LoopKind.GPU_BLOCK and any(f.kind is not LoopKind.GPU_BLOCK for f in self.enclosing):
            outer = next(f for f in self.enclosing if f.kind is not LoopKind.GPU_BLOCK)
            raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is bound to {s.thread} inside loop "
                                f"{outer.var.name} of stage {outer.stage}, which is not a block loop: loops bound "
                                "to blockIdx must be outermost")
        if axis.kind is LoopKind.GPU_THREAD and self._scope == "block" and self._inner_conflicts(s):
            raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is bound to {s.thread}, but inside it threads "
                                "read shared memory that other threads of it write (no barrier can go inside a "
                                "thread loop): compute the shared stage at a block loop outside it")
        if s.reduction:
            self._cross_thread_reduction(s)
            return
        self._bound_loop(s)

    def _bound_loop(self, s: ir.For) -> None:
        v = self.name(s.var, s.var.name)
        index = f"(int64_t){self.dialect.index[s.thread]}"
        begin = simplify(s.begin, self.exprs.ranges)
        start = index if isinstance(begin, Const) and begin.value == 0 else f"{self.expr(begin)} + {index}"
        self.enclosing.append(s)
        if s.kind is LoopKind.GPU_BLOCK:
            # the launch covers every iteration (its size is the largest trip count): a block runs one, and
            # where the launch is exactly this loop's trip count, with no guard either, so that barriers
            # inside are in straight code (pocl 3.0 crashes on barriers under a guard around thread loops)
            sizes = self.launch.extents[s.thread]
            exact = len(sizes) == 1 and structural_key(sizes[0]) == structural_key(self._trip_count(s)) and all(
                isinstance(v, Var) and any(v is p for p in self.func.params)
                for v in walk(simplify(Binary("sub", s.end, s.begin, "int64"))) if isinstance(v, Var))
            self.emit("{")
            self.emit(f"const int64_t {v} = {start};", 1)
            self.emit("{" if exact else f"if ({v} < {self.expr(s.end)}) {{", 1)
            self.indent += 1
            self.nested(s.body, loop_range(s, self.exprs.ranges))
            self.indent -= 1
            self.emit("}", 1)
            self.emit("}")
        else:
            # a stride of the launch's size: every iteration runs even where the launch is smaller than the loop
            step = self.dialect.index[s.thread.replace("Idx", "Dim")]
            self.emit(f"for (int64_t {v} = {start}; {v} < {self.expr(s.end)}; {v} += {step}) {{")
            self.nested(s.body, loop_range(s, self.exprs.ranges))
            self.emit("}")
        self.enclosing.pop()

    def _cross_thread_reduction(self, s: ir.For) -> None:
        """A reduction loop bound to a thread index: each thread accumulates the iterations it runs in a
        register, the block combines the partial results in shared memory (a tree: one barrier per level),
        and its first thread combines the total into the element."""
        others = [tag for tag, n in self.thread_sizes.items() if n > 1 and tag != s.thread]
        inside = next((f for f in self.enclosing if f.kind is LoopKind.GPU_THREAD), None)
        if inside is not None or others:
            where = f"it is inside loop {inside.var.name}, bound to {inside.thread}" if inside is not None else \
                f"the kernel also runs threads along {', '.join(others)}"
            raise ScheduleError(f"loop {s.var.name} of stage {s.stage} is a reduction bound to {s.thread}: a cross-thread "
                                f"reduction needs every thread of the block, but {where}")
        stores = [x for x in walk_stmts(s.body) if isinstance(x, ir.Store)]
        combined = _combination(stores[0]) if len(stores) == 1 else None
        if combined is None:
            raise BuildError(f"loop {s.var.name} of stage {s.stage} is a reduction bound to {s.thread}, but its body is "
                             "not one update element = element (+, *, max, min) value: no cross-thread reduction")
        update, (op, value) = stores[0], combined
        dtype = update.buffer.dtype
        acc, a, b = (Var(f"{s.stage}_{what}", dtype) for what in ("partial", "left", "right"))
        body = map_stmt(s.body, on_stmt=lambda x: ir.Assign(acc, Binary(op, acc, value, dtype)) if x is update else None)
        size, ctype = self.thread_sizes[s.thread], c_type(dtype)
        red, tid = self.names.fresh(f"{s.stage}_partials"), f"(int64_t){self.dialect.index[s.thread]}"
        self._declare_shared(f"{ctype} {red}[{size}];", size * dt.itemsize(dtype), s.stage, s.var.name)
        barrier, level = self.dialect.barrier, self.names.fresh("level")
        self.emit("{")
        self.indent += 1
        self.emit(f"{ctype} {self.name(acc, acc.name)} = {self.expr(_identity(op, dtype))};")
        self._bound_loop(replace(s, body=body, reduction=False))
        self.emit(f"{red}[{tid}] = {self.name(acc, acc.name)};")
        self.emit(barrier)
        self.emit(f"for (int64_t {level} = 1; {level} < {size}; {level} *= 2) {{")
        self.emit(f"if ({tid} % (2 * {level}) == 0 && {tid} + {level} < {size}) {{", 1)
        self.emit(f"const {ctype} {self.name(a, a.name)} = {red}[{tid}], {self.name(b, b.name)} = "
                  f"{red}[{tid} + {level}];", 2)
        self.emit(f"{red}[{tid}] = {self.expr(Binary(op, a, b, dtype))};", 2)
        self.emit("}", 1)
        self.emit(barrier, 1)
        self.emit("}")
        self.emit(f"{self.name(acc, acc.name)} = {red}[0];")
        self.visit(ir.Store(update.buffer, update.indices, Binary(op, ir.Load(update.buffer, update.indices), acc,
                                                                  dtype)))
        self.emit(barrier)      # the partial results' memory is reused by the next reduction
        self.indent -= 1
        self.emit("}")

    def visit_Block(self, s: ir.Block) -> None:
        if self._scope != "block":
            super().visit_Block(s)
            return
        pending: list[_Access] = []
        for c in s.stmts:
            accesses = self._accesses(c)
            if any(a.conflicts(p) for a in accesses for p in pending):
                self.emit(self.dialect.barrier)
                pending = []
            pending += accesses
            self.visit(c)

    def _accesses(self, s: ir.Stmt, threads: dict[Var, Expr] | None = None) -> list[_Access]:
        """The accesses of shared buffers in ``s``, keyed under the thread loops around them."""
        threads = {} if threads is None else threads
        if isinstance(s, ir.For) and s.thread.startswith("thread"):
            index = self.tag_vars.setdefault(s.thread, Var(s.thread, "int64"))
            threads = {**threads, s.var: simplify(Binary("add", substitute(s.begin, threads), index, "int64"))}
        elif isinstance(s, ir.LetStmt) and threads:     # a value of the thread loops' variables
            threads = {**threads, s.var: substitute(s.value, threads)}
        out = []
        if isinstance(s, ir.Store) and id(s.buffer) in self.shared:
            out.append(_Access(s.buffer, True, s.indices, threads))
        for e in _expressions(s):
            out += [_Access(r.buffer, False, r.indices, threads) for r in walk(e)
                    if isinstance(r, ir.Load) and id(r.buffer) in self.shared]
        for _, value in child_fields(s):
            for child in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(child, ir.Stmt):
                    out += self._accesses(child, threads)
        return out

    def _inner_conflicts(self, s: ir.Stmt) -> bool:
        accesses = self._accesses(s)
        return any(a.conflicts(b) for a in accesses for b in accesses)

    def visit_Store(self, s: ir.Store) -> None:
        if s.atomic:
            raise BuildError(f"{self.func.name}: atomic updates (a scatter's) are not supported by GPU targets yet")
        bound = {f.thread for f in self.enclosing if f.kind is LoopKind.GPU_THREAD}
        idle = [tag for tag, n in self.thread_sizes.items() if n > 1 and tag not in bound]
        if idle and id(s.buffer) not in self.private:
            # threads along an index no loop around this store is bound to would write it again
            first = " && ".join(f"{self.dialect.index[tag]} == 0" for tag in idle)
            self.emit(f"if ({first}) {{")
            self.indent += 1
            super().visit_Store(s)
            self.indent -= 1
            self.emit("}")
            return
        super().visit_Store(s)

    def visit_Allocate(self, s: ir.Allocate) -> None:
        b = s.buffer
        stage, wanted = self.scopes.get(id(b), (b.name, None))
        if b.scope is not ir.BufferScope.LOCAL:
            raise BuildError(f"{self.func.name}: the whole tensor {b.name} is allocated inside a kernel")
        where = "shared" if self._scope == "block" else "local"
        loop = self.enclosing[-1].var.name if self.enclosing else "the kernel"
        if wanted in ("shared", "local") and wanted != where:
            fix = "a loop bound to blockIdx (or a serial loop inside it)" if wanted == "shared" else \
                "a loop bound to threadIdx (or a loop inside it)"
            raise ScheduleError(f"stage {stage} was made for {wanted} memory but is computed at loop {loop}, where "
                                f"it lives in {where} memory: compute it at {fix}")
        sizes = b.constant_shape()
        if sizes is None:
            raise ScheduleError(f"stage {stage} is computed at loop {loop} in {where} memory, but its region "
                                f"{b.shape} has no constant size: give its readers' loops constant extents")
        count = max(b.element_count() or 1, 1)
        ctype, name = dt.C_TYPES[b.dtype], self.name(b, b.name)
        self.emit("{")
        for off in b.offsets:
            if isinstance(off, ir.OriginVar):
                self.emit(f"int64_t {self.name(off, off.name)} = 0;", 1)
        if where == "shared":
            self.shared.add(id(b))
            self._declare_shared(f"{ctype} {name}[{count}];", count * dt.itemsize(b.dtype), stage, loop)
        else:
            self.private.add(id(b))
            self.emit(f"{ctype} {name}[{count}];", 1)
        self.nested(s.body)
        self.emit("}")

    def _declare_shared(self, declaration: str, nbytes: int, stage: str, loop: str) -> None:
        """Declare an array in shared memory at the kernel's top, within the target's limit."""
        self._shared_bytes += nbytes
        if self._shared_bytes > self.target.gpu_shared_bytes:
            raise ScheduleError(f"stage {stage} computed at loop {loop} needs {nbytes} bytes of shared memory "
                                f"({self._shared_bytes} in its kernel) but {self.target.name} has "
                                f"{self.target.gpu_shared_bytes}: use smaller block tiles")
        self.shared_lines.append(f"  {self.dialect.shared}{declaration}")

    def visit_Prefetch(self, s: ir.Prefetch) -> None:
        """A cache prefetch hint has no GPU counterpart here: dropped."""

    def visit_IntrinsicCall(self, s: ir.IntrinsicCall) -> None:
        raise BuildError(f"{self.func.name}: tensor intrinsic {s.intrin.name} is CPU C; GPU targets cannot call it")

    def visit_Timer(self, s: ir.Timer) -> None:
        raise BuildError(f"{self.func.name}: profile=True is for CPU targets")

    # program --------------------------------------------------------------------------------------
    def program(self) -> GpuSource:
        f = self.func
        for b in f.args:
            if b.dtype not in GPU_DTYPES:
                raise BuildError(f"{f.name}: argument {b.name} is {b.dtype}; GPU targets take {', '.join(GPU_DTYPES)}")
        if any(isinstance(e, ir.CheckedIndex) for node in walk_stmts(f.body) for x in _expressions(node)
               for e in walk(x)):
            raise BuildError(f"{f.name}: a data-dependent index needs a run-time check, which GPU targets do not "
                             "have yet")
        self.host(f.body)
        text = "".join(self.kernel_texts)
        unknown = sorted(set(re.findall(r"\bts_(?:v|h)\w+", text)) - self.dialect.vector_helpers)
        if unknown:
            raise ScalarOnly(f"{f.name}: the vector code uses {', '.join(unknown)}, which {self.dialect.name} "
                             "kernels do not have")
        doubles = any(b.dtype == "float64" for b in f.args + tuple(self.scratch)) or "double" in text
        prelude = (self.dialect.double_prelude if doubles else "") + self.dialect.prelude + _HELPERS + \
            (_DOUBLE_HELPERS if doubles else "")
        return GpuSource(prelude + "\n" + "\n".join(self.kernel_texts), self.dialect.name, self.kernels, self.scratch)


def _combination(update: ir.Store) -> tuple[str, Expr] | None:
    """``(op, value)`` when ``update`` is ``element = element op value`` (or ``value op element``) with op one
    of add, mul, max, min, and the element not read in ``value``."""
    e = update.value
    if not isinstance(e, Binary) or e.op not in ("add", "mul", "max", "min"):
        return None
    target = structural_key(ir.flat_index(update.buffer, update.indices))

    def is_element(x: Expr) -> bool:
        return isinstance(x, ir.Load) and x.buffer is update.buffer and \
            structural_key(ir.flat_index(x.buffer, x.indices)) == target

    for mine, value in ((e.a, e.b), (e.b, e.a)):
        if is_element(mine) and not any(isinstance(r, ir.Load) and r.buffer is update.buffer for r in walk(value)):
            return e.op, value
    return None


def _identity(op: str, dtype: str) -> Const:
    """The value that ``op`` leaves unchanged, in ``dtype``."""
    if op in ("add", "mul"):
        return Const(0 if op == "add" else 1, dtype)
    low, high = (-math.inf, math.inf) if dt.is_float(dtype) else dt.value_range(dtype)
    return Const(low if op == "max" else high, dtype)


def _expressions(s: ir.Stmt) -> list[Expr]:
    """The expressions a statement holds directly (not those of the statements inside it)."""
    out: list[Expr] = []
    for value in vars(s).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        out += [x for x in items if isinstance(x, Expr)]
    return out


def generate_gpu(func: LoweredFunc, target: Target) -> GpuSource:
    """The kernels of ``func`` (finished for ``target``) in ``target``'s GPU language."""
    return GpuCodeGen(func, target, DIALECTS[target.backend]).program()
