"""Loop IR -> GPU kernels: the statement printer that writes OpenCL C or CUDA C (the spellings come from
:mod:`tesched.codegen.gpu_dialect`).

A lowered function is cut into kernels: the statements of its body outside every loop bound to a GPU
index (``Stage.bind``) are the host's (sequences, produce markers, whole intermediate tensors, which the
host allocates in device memory), and each maximal statement below them is one kernel, launched in
order (its geometry: :mod:`tesched.codegen.gpu_launch`). In a kernel, a loop bound to ``blockIdx.d``
becomes ``v = begin + group id d`` guarded by ``v < end``, and one bound to ``threadIdx.d`` runs from
``begin + local id d`` by steps of the launch's size along that index (each iteration runs even where a
loop has more than the launch covers).

Memory: a ``compute_at`` buffer allocated inside the block loops but outside the thread loops lives in
shared memory (``__local``/``__shared__``, declared at the kernel's top, of the footprint's constant box),
one allocated inside a thread loop in registers (a private array). A store to memory the threads share
runs only on the threads whose index is 0 along each thread index no loop around it is bound to (in a
block, outside the thread loops: on the group's first thread), and a barrier goes between two statements
when one writes shared memory the other accesses at another thread's element, and at the end of a serial
loop whose iterations do that (the test: :mod:`tesched.codegen.gpu_sync`).

A reduction loop bound to a thread index is a cross-thread reduction: each thread accumulates the
iterations it runs in a register, the block combines the partial results in shared memory (a tree, one
barrier per level), and its first thread combines the total into the element.

Inside a kernel, an unbound loop runs in every thread; ``unroll`` gives ``#pragma unroll``, ``vectorize``
gives the dialect's vector types where it has them, and an OpenMP ``parallel`` loop is refused.

It refuses, as :class:`~tesched.errors.ScheduleError` naming the stage and the loop: a loop left unbound
outside the kernel, a block loop inside a serial or thread loop, a shared buffer of symbolic size or one
over the target's shared-memory limit, more threads than the target allows, a cache stage computed
where its scope cannot live. It does not compile or run anything (:mod:`tesched.driver.gpu`) and knows
nothing of isl.
"""
from __future__ import annotations

import re
from dataclasses import replace

from tesched.arith.simplify import simplify
from tesched.codegen.c import CodeGen
from tesched.codegen.c_expr import c_type
from tesched.codegen.gpu_dialect import DIALECTS, GPU_DTYPES, Dialect, OpenCLExpr, prelude
from tesched.codegen.gpu_launch import GpuSource, Launch, launch_of, thread_sizes, trip_count
from tesched.codegen.gpu_private import NotPrivate, privatize
from tesched.codegen.gpu_reduce import combination, identity
from tesched.codegen.gpu_sync import Access, expressions, shared_accesses
from tesched.errors import BuildError, ScheduleError
from tesched.ir import nodes as ir
from tesched.ir.visitor import map_stmt, walk_stmts
from tesched.lower.func import LoweredFunc
from tesched.ir.kinds import LoopKind
from tesched.schedule.kinds import ThreadAxis
from tesched.target import Target
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Var
from tesched.te.visit import structural_key, walk
from tesched.transform.simplify_indices import loop_range


class ScalarOnly(BuildError):
    """The explicit SIMD code of a kernel uses a vector operation the dialect does not provide (the
    driver then builds it with scalar loops)."""


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
        launch = launch_of(self.names.fresh(f"{self.func.name}_kernel{len(self.kernels)}"), s, self.func.params)
        self.launch = launch
        self.threads = any(tag.startswith("thread") for tag in launch.extents)
        # no block loop (those of one iteration are not generated): the kernel is one block of threads
        self.one_block = self.threads and not any(tag.startswith("block") for tag in launch.extents)
        self.root_stage = self.producing or next((x.stage for x in walk_stmts(s)
                                                  if isinstance(x, (ir.Produce, ir.For)) and x.stage), "")
        self.thread_sizes = thread_sizes(launch, s, self.target)
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
            exact = len(sizes) == 1 and structural_key(sizes[0]) == structural_key(trip_count(s, self.func.params)) and all(
                isinstance(v, Var) and any(v is p for p in self.func.params)
                for v in walk(simplify(Binary(BinOp.SUB, s.end, s.begin, "int64"))) if isinstance(v, Var))
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
        combined = combination(stores[0]) if len(stores) == 1 else None
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
        self.emit(f"{ctype} {self.name(acc, acc.name)} = {self.expr(identity(op, dtype))};")
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
        pending: list[Access] = []
        for c in s.stmts:
            accesses = self._accesses(c)
            if any(a.conflicts(p) for a in accesses for p in pending):
                self.emit(self.dialect.barrier)
                pending = []
            pending += accesses
            self.visit(c)

    def _accesses(self, s: ir.Stmt) -> list[Access]:
        """The accesses of shared buffers in ``s``, keyed under the thread loops around them."""
        return shared_accesses(s, self.shared, self.tag_vars)

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
        why = ""
        if wanted == "local" and where == "shared":
            try:        # a register tile: each thread keeps its own elements of the block's region
                s, b, where = self._privatized(s)
            except NotPrivate as err:
                why = f" (not a register tile: {err})"
        if wanted in ("shared", "local") and wanted != where:
            fix = "a loop bound to blockIdx (or a serial loop inside it)" if wanted == "shared" else \
                "a loop bound to threadIdx (or a loop inside it), or bind its loops and its readers' to threads"
            raise ScheduleError(f"stage {stage} was made for {wanted} memory but is computed at loop {loop}, where "
                                f"it lives in {where} memory{why}: compute it at {fix}")
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

    def _privatized(self, s: ir.Allocate) -> tuple[ir.Allocate, ir.Buffer, str]:
        private = privatize(s, self.thread_sizes, self.exprs.ranges)
        return private, private.buffer, "local"

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
        if any(isinstance(e, ir.CheckedIndex) for node in walk_stmts(f.body) for x in expressions(node)
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
        return GpuSource(prelude(self.dialect, doubles) + "\n" + "\n".join(self.kernel_texts), self.dialect.name,
                         self.kernels, self.scratch)


def generate_gpu(func: LoweredFunc, target: Target) -> GpuSource:
    """The kernels of ``func`` (finished for ``target``) in ``target``'s GPU language."""
    return GpuCodeGen(func, target, DIALECTS[target.backend]).program()
