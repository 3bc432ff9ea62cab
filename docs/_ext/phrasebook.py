"""The phrasebook: TVM ``te`` and Halide concepts, one row each, with tesched's spelling.

Each :class:`Row` names the tesched objects its spelling uses (``uses``, which must exist) or, for a
concept tesched lacks, the names it would have (``missing``, which must not exist yet):
``tests/test_docs.py`` resolves both, so a row cannot claim a name that is not there, and a row saying
"not supported yet" fails the test the day the feature lands, asking for the row to be rewritten.
"""
from __future__ import annotations

from dataclasses import dataclass

NOT_YET = "not supported yet"


@dataclass(frozen=True)
class Row:
    """One concept: how TVM and Halide spell it, how tesched does (None: not supported), and why."""

    concept: str
    tvm: str
    halide: str
    tesched: str | None
    note: str = ""
    uses: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    planned: bool = True            # False: not supported by design (no "yet")

    def tesched_text(self) -> str:
        """The tesched cell: the spelling, or *not supported*."""
        if self.tesched is None:
            return f"*{NOT_YET}*" if self.missing and self.planned else "*not supported*"
        return self.tesched


ROWS: tuple[Row, ...] = (
    # declaring the computation
    Row("input tensor", "``te.placeholder((n, m), name='A')``", "``ImageParam(Float(32), 2)``",
        "``ts.placeholder((n, m), name='A', dtype='float32')``", "shapes are ints or ``ts.var`` symbols",
        uses=("tesched.placeholder",)),
    Row("symbolic size", "``te.var('n')``", "``Param<int>`` used as an extent, an input's ``width()``",
        "``ts.var('n')``", "a symbolic extent becomes a kernel parameter; a built kernel reads it from the "
        "arrays' shapes", uses=("tesched.var",)),
    Row("runtime scalar parameter", "``te.var('alpha', 'float32')`` in ``tvm.build``'s arguments",
        "``Param<float> sigma``, ``sigma.set(2.0f)``", "``ts.param('sigma', 'float32')``",
        "a value passed at each call, after the arrays or by keyword (``f(a, b, sigma=2.0)``), so changing it "
        "compiles nothing; listing it in ``build``'s arguments fixes its position; bool, integer and float "
        "dtypes; not in shapes or loop extents (those are ``ts.var``)", uses=("tesched.param",)),
    Row("computed tensor", "``te.compute(shape, lambda i, j: ...)``", "``Func f; f(x, y) = ...``",
        "``ts.compute(shape, lambda i, j: ..., name='B')``",
        "pure definitions only: Halide's update definitions (``f(x) += ...``) are written as a new stage",
        uses=("tesched.compute",)),
    Row("reduction domain", "``te.reduce_axis((0, n))``", "``RDom r(0, n)``", "``ts.reduce_axis((0, n), name='k')``",
        "bounds may use the compute's own axes (``reduce_axis((0, i + 1))``: a triangular domain, exact in isl); "
        "``where=`` on the reducer plays Halide's ``RDom::where``",
        uses=("tesched.reduce_axis",)),
    Row("reduction", "``te.sum(expr, axis=k)``, ``te.max``, ``te.min``", "``sum(expr)``, ``maximum(...)``, "
        "``minimum(...)``, ``product(...)`` over an RDom", "``ts.sum(expr, axis=k)``, ``ts.max``, ``ts.min``, "
        "``ts.prod``", "every reducer takes ``init=``; a reduction inside a larger expression (Halide's inline "
        "reductions) becomes a stage of its own, ``<name>.sum0``", uses=("tesched.sum", "tesched.max", "tesched.min", "tesched.prod")),
    Row("user-defined reducer", "``te.comm_reducer(combine, identity)``", "an update definition",
        "``ts.comm_reducer(combine, identity)``", "tuple reductions too (argmax, argmin: a compute with two "
        "outputs); ``combine`` must be commutative and associative", uses=("tesched.comm_reducer",)),
    Row("argmax / argmin", "``topi.argmax`` or a ``comm_reducer``", "inline ``argmax(r, expr)``",
        "``I, V = ts.compute((m,), lambda i: ts.argmax(A[i, k], axis=k))``",
        "index and value are two outputs of one stage; ties and NaN as ``np.argmax`` under every schedule",
        uses=("tesched.argmax", "tesched.argmin")),
    Row("multi-output compute", "``te.compute(shape, lambda i: (a, b))``", "a ``Tuple`` ``Func``",
        "``A, B = ts.compute(shape, lambda i: (a, b))``", "one stage: ``s[A] is s[B]``; either output may be "
        "a build argument", uses=("tesched.compute",)),
    Row("select", "``te.if_then_else(c, a, b)``", "``select(c, a, b)``", "``ts.select(c, a, b)`` (= ``ts.if_then_else``)",
        "only the chosen side is evaluated; ``ts.all`` / ``ts.any`` combine conditions",
        uses=("tesched.select", "tesched.if_then_else", "tesched.all", "tesched.any")),
    Row("math and bit functions", "``te.power``, ``te.round``, ``te.trunc``, ``te.fmod``, ``bitwise_and`` ...",
        "``pow``, ``round``, ``trunc``, ``clamp``, ``&``, ``<<`` ...",
        "``ts.power`` (``**``), ``ts.round``, ``ts.trunc``, ``ts.fmod``, ``ts.clamp``, ``&``, ``|``, ``^``, "
        "``~``, ``<<``, ``>>`` and ``ts.bitwise_and`` ..., ``ts.popcount``, ``ts.count_leading_zeros``",
        "bit operations on integers only (NumPy's shifts)",
        uses=("tesched.power", "tesched.round", "tesched.trunc", "tesched.fmod", "tesched.clamp",
              "tesched.bitwise_and", "tesched.shift_left", "tesched.popcount", "tesched.count_leading_zeros")),
    Row("lerp, log2, log1p, erf, cast", "``x.astype(dtype)``, ``te.log2``, ``te.log1p``, ``te.erf``",
        "``lerp(a, b, w)``, ``log(x) / log(2)``, ``erf(x)``, ``cast<T>(x)``",
        "``ts.lerp(a, b, w)``, ``ts.log2``, ``ts.log1p``, ``ts.erf``, ``ts.cast(dtype, x)``",
        "``lerp`` of floating endpoints only (Halide's fixed-point integer ``lerp`` is not provided)",
        uses=("tesched.lerp", "tesched.log2", "tesched.log1p", "tesched.erf", "tesched.cast")),
    Row("call of a C function", "``tir.call_pure_extern('float32', 'f', x)``",
        "``Expr::call_pure_extern``, ``HalideExtern_2``", "``ts.call_pure_extern('float32', 'f', x, source=C)``",
        "``source`` (C text, best ``static inline``: gcc inlines and vectorizes it) is compiled into each "
        "kernel; without it, a ``math.h`` function; the function must be pure; CPU targets only",
        uses=("tesched.call_pure_extern",)),
    Row("stage computed by a C function", "``te.extern(shape, [A], lambda ins, outs: "
        "tvm.tir.call_packed('f', ins[0], outs[0]))``", "``g.define_extern(\"f\", {A}, Float(32), 1)``",
        "``ts.extern(shape, [A], fname='f', source=C)``, or ``ts.extern(shape, [A], lambda ins, outs: "
        "ts.extern_call('f', ins[0], outs[0], n, source=C))``",
        "one call fills the whole output from whole, dense row-major inputs: ``f(const T *in..., T *out, "
        "int64_t sizes...)`` by default; the stage is computed at the root and its loops cannot be scheduled "
        "(its readers can); the C text is compiled into the kernel; CPU targets only",
        uses=("tesched.extern", "tesched.extern_call")),
    Row("gather (data-dependent index)", "``A[I[i]]``", "``A(clamp(I(i), 0, n - 1))``", "``A[I[i]]``",
        "an index read from a tensor is checked when the kernel runs: out of the box it raises "
        "``BoundsError``; clamp it (``ts.clamp``) to read the edge instead", uses=("tesched.clamp", "tesched.BoundsError")),
    Row("scatter (data-dependent store)", "no counterpart", "``f(I(r)) += v`` over an RDom",
        "``ts.scatter(shape, index, value, axis=r)``, ``ts.scatter_add``", "sum, max or min at computed "
        "indices, checked against the shape when the kernel runs", uses=("tesched.scatter", "tesched.scatter_add")),
    Row("recurrence / scan", "``te.scan(init, update, state)``", "an update definition over an RDom",
        "``ts.scan(init, update, state)``", "along axis 0; ``update`` may read only earlier steps (the "
        "dependence check refuses others); several states as lists (``ts.scan([c0, h0], [c1, h1], [c, h])``)",
        uses=("tesched.scan",)),
    Row("boundary condition", "``te.if_then_else`` on the index (or ``topi.nn.pad``)",
        "``BoundaryConditions::constant_exterior``, ``repeat_edge``, ``repeat_image``, ``mirror_image``, "
        "``mirror_interior``",
        "``ts.boundary.constant_exterior(A, 0)``, ``repeat_edge(A)``, ``repeat_image(A)``, ``mirror_image(A)``, "
        "``mirror_interior(A)``",
        "reads are clamped into the box, so ``compute_at`` footprints stay exact",
        uses=("tesched.boundary.constant_exterior", "tesched.boundary.repeat_edge",
              "tesched.boundary.repeat_image", "tesched.boundary.mirror_image",
              "tesched.boundary.mirror_interior")),
    # scheduling
    Row("schedule", "``te.create_schedule(C.op)``", "the Func's own schedule", "``s = ts.create_schedule(C.op)``",
        uses=("tesched.create_schedule",)),
    Row("split", "``s[C].split(i, factor=8)`` or ``nparts=``", "``f.split(x, xo, xi, 8)``",
        "``s[C].split(i, factor=8)`` or ``nparts=``",
        "a factor that does not divide the extent leaves a guarded tail (Halide's ``GuardWithIf``)",
        uses=("tesched.Stage.split",)),
    Row("tile", "``s[C].tile(i, j, 8, 8)``", "``f.tile(x, y, xo, yo, xi, yi, 8, 8)``", "``s[C].tile(i, j, 8, 8)``",
        uses=("tesched.Stage.tile",)),
    Row("reorder", "``s[C].reorder(j, i)``", "``f.reorder(y, x)`` (innermost first)", "``s[C].reorder(j, i)``",
        "outermost first, as in TVM", uses=("tesched.Stage.reorder",)),
    Row("fuse", "``s[C].fuse(i, j)``", "``f.fuse(x, y, xy)``", "``s[C].fuse(i, j)``",
        "over a symbolic inner extent too: one loop with ``i = fused // n``, ``j = fused % n`` when it is parallel, "
        "vectorized or split", uses=("tesched.Stage.fuse",)),
    Row("vectorize", "``s[C].vectorize(j)``", "``f.vectorize(x, 8)``", "``s[C].vectorize(j)``",
        "explicit SIMD for the target's vector width; split first to choose the lane count",
        uses=("tesched.Stage.vectorize",)),
    Row("unroll", "``s[C].unroll(j)``", "``f.unroll(x, 4)``", "``s[C].unroll(j)``", "split first to choose the count",
        uses=("tesched.Stage.unroll",)),
    Row("parallel", "``s[C].parallel(i)``", "``f.parallel(y)``", "``s[C].parallel(i)``",
        "OpenMP threads; ``ts.set_num_threads`` or ``TESCHED_NUM_THREADS`` sets how many",
        uses=("tesched.Stage.parallel", "tesched.set_num_threads")),
    Row("GPU thread binding", "``s[C].bind(i, te.thread_axis('threadIdx.x'))``", "``f.gpu_threads(x)``",
        "``s[C].bind(i, ts.thread_axis('threadIdx.x'))``", "a bound loop runs in order on a CPU target",
        uses=("tesched.Stage.bind", "tesched.thread_axis")),
    Row("GPU tiles", "``split`` + ``bind`` four times", "``f.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)``",
        "``s[C].gpu_tile(i, j, 8, 8)``", "returns the four loops; ``j`` gives blockIdx.x and threadIdx.x",
        uses=("tesched.Stage.gpu_tile",)),
    Row("GPU shared memory", "``AA = s.cache_read(A, 'shared', [C])``, ``s[AA].compute_at(s[C], ko)``",
        "``g.compute_at(f, xo)`` inside the block loops (``store_in(MemoryType::GPUShared)``)",
        "``s.cache_read(A, 'shared', [C])`` or any stage ``compute_at`` a block loop",
        "its exact footprint box in __local/__shared__ memory; barriers only where another thread reads",
        uses=("tesched.Schedule.cache_read", "tesched.Stage.compute_at")),
    Row("cross-thread reduction", "``s[B].bind(ki, te.thread_axis('threadIdx.x'))`` on a reduce axis",
        "``rfactor`` then ``gpu_threads``", "``s[B].bind(ki, ts.thread_axis('threadIdx.x'))`` on a reduce axis",
        "a tree in shared memory, one barrier per level", uses=("tesched.Stage.bind",)),
    Row("GPU target", "``tvm.build(s, args, target='cuda')``", "``Target('host-cuda')`` / ``host-opencl``",
        "``ts.build(s, args, target='opencl')`` or ``'cuda'``",
        "OpenCL through pyopencl (pocl on a CPU), CUDA C compiled by NVRTC; ``pip install tesched[gpu]``",
        uses=("tesched.build",)),
    Row("compute at", "``s[B].compute_at(s[C], j)``", "``g.compute_at(f, x)``", "``s[B].compute_at(s[C], j)``",
        "the region of B computed per iteration is the exact (isl) footprint of C's loop body: halos included",
        uses=("tesched.Stage.compute_at",)),
    Row("inline", "``s[B].compute_inline()``", "the default (``g.compute_inline()``)", "``s[B].compute_inline()``",
        "not for reductions (use ``compute_at``)", uses=("tesched.Stage.compute_inline",)),
    Row("compute at root", "``s[B].compute_root()``", "``g.compute_root()``", "``s[B].compute_root()``",
        "the default in tesched and TVM", uses=("tesched.Stage.compute_root",)),
    Row("store at (storage hoisted above compute)", "no counterpart", "``g.store_at(f, y).compute_at(f, x)``",
        "``s[B].store_at(s[C], i)`` (or ``store_root()``) with ``s[B].compute_at(s[C], j)``",
        "a sliding window: each iteration between the two computes only what earlier ones did not (isl set "
        "difference), so those loops must be serial; the buffer is folded modulo a power of two where isl "
        "proves the window bounded", uses=("tesched.Stage.store_at", "tesched.Stage.store_root")),
    Row("bound an extent", "no counterpart", "``f.bound(x, 0, 64)``, ``f.bound_extent(x, 64)``",
        "``s[B].bound(x, 0, 64)``, ``s[B].bound_extent(x, 64)``",
        "the region realized along that axis; a reader or an output needing more is refused",
        uses=("tesched.Stage.bound", "tesched.Stage.bound_extent")),
    Row("specialize", "no counterpart", "``f.specialize(w % 16 == 0)``", "``s[C].specialize(n % 16 == 0)``",
        "the stage's loop nest is generated twice and the kernel picks one at run time; conditions on size "
        "variables only, the stage computed at the root", uses=("tesched.Stage.specialize",)),
    Row("prefetch", "``s[C].prefetch(A, i, 1)``", "``f.prefetch(A, x, x, 1)``", "``s[C].prefetch(A, i, 1)``",
        "one ``__builtin_prefetch`` per cache line of the exact region the next iteration reads, never past "
        "the loop's end", uses=("tesched.Stage.prefetch",)),
    Row("pragma", "``s[C].pragma(i, 'unroll_explicit', False)``", "no counterpart",
        "``s[C].pragma(i, 'unroll', 4)``, ``'ivdep'``, ``'unroll_explicit'``",
        "only these three; ``ivdep`` is refused on a loop that carries a dependence",
        uses=("tesched.Stage.pragma",)),
    Row("storage alignment", "``s[B].storage_align(i, 16, 4)``", "``f.align_storage(x, 16)``",
        "``s[B].storage_align(s[B].op.axis[0], 16, 4)``",
        "TVM's rule: the stride of that dimension becomes the next ``16 k + 4``; buffers tesched allocates "
        "(intermediates, ``compute_at`` buffers of constant shape), not kernel arguments",
        uses=("tesched.Stage.storage_align",)),
    Row("read cache", "``s.cache_read(A, 'local', [C])``", "``A.in(f)``",
        "``s.cache_read(A, 'local', [C])`` (also ``'packed'``)",
        "a copy of the region the readers need, placed with ``compute_at``", uses=("tesched.Schedule.cache_read",)),
    Row("write cache", "``s.cache_write(C, 'local')``", "an update-free intermediate Func",
        "``s.cache_write(C, 'local')``", "accumulate a tile in a local buffer (registers after unrolling); the "
        "outputs of a multi-output compute go together: ``s.cache_write([C1, C2], 'local')``",
        uses=("tesched.Schedule.cache_write",)),
    Row("rfactor", "``s.rfactor(C, ko)``", "``f.update().rfactor(r.x, u)``", "``s.rfactor(C, ko)``",
        "parallelize a reduction over partial results; of a tuple reduction (argmax) it returns the list of "
        "partial tensors, as TVM", uses=("tesched.Schedule.rfactor",)),
    Row("tensorize", "``s[C].tensorize(ii, te.decl_tensor_intrin(...))``", "no counterpart (``define_extern`` stages)",
        "``s[C].tensorize(ii, ts.decl_tensor_intrin(op, ts.CIntrinsic(...)))``",
        "the intrinsic is C source; ``tesched.intrin`` has GEMM micro-kernels",
        uses=("tesched.Stage.tensorize", "tesched.decl_tensor_intrin", "tesched.CIntrinsic")),
    # compiling and running
    Row("lower", "``tvm.lower(s, [A, B, C])``", "``f.print_loop_nest()``", "``print(ts.lower(s, [A, B, C]))``",
        "``TESCHED_DEBUG=1`` logs every pass", uses=("tesched.lower",)),
    Row("build and call", "``tvm.build(s, args)``; ``f(a, b, c)`` on ``tvm.nd`` arrays",
        "``f.realize({n, m})`` / ``compile_jit``", "``k = ts.build(s, args)``; ``k(a, b, c)`` on NumPy arrays",
        "outputs may be omitted: they are allocated and returned", uses=("tesched.build",)),
    Row("ahead-of-time library", "``lib.export_library('f.so')``; ``tvm.runtime.load_module``",
        "``compile_to_static_library``", "``k.export_library('f.so')``; ``ts.load_module('f.so')``",
        "a C header beside it; callable from C", uses=("tesched.driver.kernel.Kernel.export_library",
                                                        "tesched.load_module")),
    Row("automatic scheduling", "``auto_scheduler`` / ``meta_schedule``", "``Adams2019``, ``Mullapudi2016``",
        "``ts.auto_schedule(outs)`` (analytical), ``ts.tune(...)`` (measured search)",
        "``ts.explain_schedule`` says why each decision was made",
        uses=("tesched.auto_schedule", "tesched.tune", "tesched.explain_schedule")),
    Row("operator library", "``topi``", "no counterpart", "``tesched.nn``", "operators with default schedules",
        uses=("tesched.nn.conv2d", "tesched.nn.dense")),
    Row("graph IR and fusion", "Relay (``relay.build``)", "no counterpart", "``tesched.graph`` (``G.build``)",
        "Relay's op names and fusion passes", uses=("tesched.graph.build",)),
    Row("frontend", "``relay.frontend.from_pytorch``", "no counterpart (C++ generators)",
        "``tesched.frontend.from_torch(model, inputs)``", "through ``torch.export``; ONNX and TensorFlow: not supported",
        uses=("tesched.frontend.from_torch",)),
    Row("automatic differentiation", "``te.gradient``, ``relay.transform.gradient``",
        "``propagate_adjoints``", "``ts.gradient(out, inputs)``, ``G.gradient(f, wrt)``",
        "graph adjoints derived from each op's declaration; ``G.optim.sgd`` / ``adam`` make a training step",
        uses=("tesched.gradient", "tesched.graph.gradient", "tesched.graph.optim.sgd", "tesched.graph.optim.adam")),
)
