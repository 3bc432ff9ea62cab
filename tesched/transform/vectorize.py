"""Turn ``vectorized`` loops into explicit SIMD (GCC vector extensions).

A vectorized loop whose body is a list of stores is rewritten into vector statements: contiguous loads and
stores become vector loads/stores, loads a constant stride apart (transposes) strided vector loads, values
that do not change with the loop become broadcasts, arithmetic, min/max, comparisons and selects become
vector operations (a select whose condition does not change with the loop picks one vector; one whose
branches read memory is split at its condition first, see :mod:`.select_split`, or else reads them with
masked loads and blends). The trip count is split into full-width chunks (a loop over them when there are
many) and narrower tails; a trip count known only at run time runs its remainder in the scalar loop.
A computed-index read becomes a gather (:mod:`.gathers`), float32 ``exp`` the runtime's vector exp; the
rest (other calls, inner loops) keeps the scalar loop, marked ``#pragma omp simd`` for gcc.

Three passes share this module's decisions, in order: ``unswitch loops left scalar`` (:mod:`.unswitch`, on
loops :func:`vectorizes` refuses), ``dot products`` (:mod:`.dot_products`) and ``explicit SIMD``
(:func:`vectorize`), which keeps the select split (its parts see the ranges of the original loop's loops).

A body wrapped in ``let`` bindings (shared subexpressions, :mod:`tesched.ir.cse`) gets vector lets for
the bindings that change with the loop, scalar ones for the others. A vectorized reduction loop (``acc[i] = acc[i] + f(k)`` over ``k``) gets a vector of partial results
(one per lane) combined after the loop, so the sum is reassociated. Legality is not decided here: the
dependence check proved that a vectorized loop carries no dependence other than such an accumulation.
"""
from __future__ import annotations

from dataclasses import replace

from tesched.arith.linear import coefficient, constant_difference
from tesched.arith.interval import VarRanges
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.cse import wrap_lets
from tesched.ir.kinds import LoopKind
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Call, Cast, Const, Expr, Select, Unary, Var
from tesched.te.visit import substitute, walk
from tesched.transform.dot_products import vectorize_dot_product
from tesched.transform.gathers import gather_offset
from tesched.transform.masked_reads import inside_buffer
from tesched.transform.narrow_indices import narrow_comparisons
from tesched.transform.select_split import split_at_conditions
from tesched.transform.simplify_indices import RangeMutator, loop_range
from tesched.transform.tuple_reduction import tuple_update, vectorize_tuple_reduction, widest_value

_ARITH = ("add", "sub", "mul", "div", "min", "max", "bitand", "bitor", "bitxor")
_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
MAX_INLINE_CHUNKS = 4
_STRIDED = ("float32", "float64", "int32", "int64")   # element types with strided and masked loads in the header
_COMBINE = ("add", "max", "min", "mul")
_VECTOR_CALLS = {"float32": ("exp",)}     # math functions the runtime header has for 4, 8 and 16 lanes


def _identity(op: str, dtype: str) -> Const:
    if op in ("add", "mul"):
        return Const(0 if op == "add" else 1, dtype)
    if dt.is_float(dtype):
        return Const(float("-inf") if op == "max" else float("inf"), dtype)
    low, high = dt.value_range(dtype)
    return Const(low if op == "max" else high, dtype)


class CannotVectorize(Exception):
    pass


def _depends(e: Expr, var: Var) -> bool:
    return any(n is var for n in walk(e))


_MASKS = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def _mask_dtype(scalar: str, lanes: int) -> str:
    """The lane-wise comparison result of vectors of ``scalar``: signed integers of the values' size."""
    return ir.vector_dtype(_MASKS[dt.info(scalar).value_itemsize], lanes)


def _mask_for(mask: Expr, scalar: str) -> Expr:
    """``mask`` converted to the lanes' size of vectors of ``scalar`` (a -1/0 mask converts exactly)."""
    base, lanes = ir.split_dtype(mask.dtype)
    wanted = _mask_dtype(scalar, lanes)
    return mask if mask.dtype == wanted else ir.VCast(wanted, mask)


def _common_type(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """Integer vectors of different element types (an int64 loop ramp and an int32 bound) both as the
    wider type; anything else unchanged."""
    (ta, lanes), (tb, _) = ir.split_dtype(a.dtype), ir.split_dtype(b.dtype)
    if ta == tb or dt.is_float(ta) or dt.is_float(tb) or "bool" in (ta, tb):
        return a, b
    wide = ir.vector_dtype(ta if dt.itemsize(ta) >= dt.itemsize(tb) else tb, lanes)
    return (a if a.dtype == wide else ir.VCast(wide, a)), (b if b.dtype == wide else ir.VCast(wide, b))


def _index_ramp(e: Expr, var: Var) -> Expr | None:
    """``x`` when ``e`` is ``int32(x)`` for an integer ``x = var + c`` (a loop value as argmax's index):
    its lanes are an int32 ramp, computed without int64 vectors."""
    if isinstance(e, Cast) and e.dtype == "int32" and dt.is_int(e.value.dtype) and coefficient(e.value, var) == 1:
        return e.value
    return None


def value_bytes(e: Expr, var: Var) -> int:
    """The widest value (bytes per lane) the vector form of ``e`` computes: index arithmetic and
    subexpressions that do not change with ``var`` (broadcast whole) are not looked into."""
    own = dt.info(e.dtype).value_itemsize if e.dtype != "bool" else 1
    if isinstance(e, ir.Load) or not _depends(e, var) or _index_ramp(e, var) is not None:
        return own
    return max([own] + [value_bytes(c, var) for c in e.children()])


def _vector_divisor(e: Binary) -> int | None:
    """The divisor of a vector ``//`` or ``%``: a positive constant, a power of two (shift, mask) or of
    unsigned operands; None if ``e`` has no vector form."""
    if e.op not in (BinOp.FLOORDIV, BinOp.FLOORMOD) or not isinstance(e.b, Const) \
            or not isinstance(e.b.value, int) or e.b.value <= 0:
        return None
    return e.b.value if dt.is_unsigned(e.dtype) or e.b.value & (e.b.value - 1) == 0 else None


def _unwrap_lets(stmts: list) -> tuple[list[tuple[Var, Expr]], list]:
    """The ``let`` bindings around a loop body (see :mod:`tesched.ir.cse`) and the statements inside."""
    lets: list[tuple[Var, Expr]] = []
    if len(stmts) == 1 and isinstance(stmts[0], ir.LetStmt):
        s: ir.Stmt = stmts[0]
        while isinstance(s, ir.LetStmt):
            lets.append((s.var, s.value))
            s = s.body
        stmts = list(s.stmts) if isinstance(s, ir.Block) else [s]
    return lets, stmts


class LoopVectorizer:
    def __init__(self, loop: ir.For, vector_bytes: int, ranges: VarRanges | None = None):
        self.loop, self.var, self.vector_bytes = loop, loop.var, vector_bytes
        self.ranges = ranges or VarRanges()     # of the loops around, and of this loop's variable
        self.lets: list[tuple[Var, Expr]] = []
        self.vector_of: dict[int, ir.RegisterVar] = {}      # let variable -> its vector counterpart in this chunk
        self.mask: Expr | None = None     # the lanes a select's branch may read (inside that branch)
        self.stores: list[ir.Store] = []  # the body's stores (the elements they write may be read unmasked)

    def depends(self, e: Expr) -> bool:
        """Whether ``e`` changes with the loop (directly or through a vector ``let``)."""
        return any(n is self.var or id(n) in self.vector_of for n in walk(e))

    def expr(self, e: Expr, base: Expr, lanes: int) -> Expr:
        var = self.var
        if id(e) in self.vector_of:
            return self.vector_of[id(e)]
        if e is var:
            return ir.Ramp(base, lanes)
        if not self.depends(e) and e.dtype == "bool":     # a condition the same in every lane: a mask
            cond = substitute(e, {var: base})
            return ir.Broadcast(Select(cond, Const(-1, "int32"), Const(0, "int32")), lanes)
        if not self.depends(e):
            return ir.Broadcast(substitute(e, {var: base}), lanes)
        if isinstance(e, ir.Load):
            flat = ir.flat_index(e.buffer, e.indices)
            if any(id(n) in self.vector_of for n in walk(flat)):
                raise CannotVectorize(f"access to {e.buffer.name} is gathered (its index is a vector let)")
            step = coefficient(flat, var)
            if self.mask is not None:
                return self.masked_load(e, base, simplify(substitute(flat, {var: base})), step, lanes)
            if step == 0:
                return ir.Broadcast(substitute(e, {var: base}), lanes)
            if step == 1:
                return ir.VLoad(e.buffer, simplify(substitute(flat, {var: base})), lanes)
            offset = gather_offset(e, flat, lanes, self.ranges) if step is None else None
            if offset is not None:      # a lookup at a computed index: its int32 offsets, one per lane
                return ir.VGather(e.buffer, self.expr(offset, base, lanes), lanes)
            if step is not None and e.buffer.dtype in _STRIDED and e.buffer.scope is not ir.BufferScope.LOCAL:
                # a transposed read: lanes gathered ``step`` apart (local buffers stay in the
                # contiguous forms the register promotion understands)
                return ir.VLoadStrided(e.buffer, simplify(substitute(flat, {var: base})), Const(step, "int64"), lanes)
            raise CannotVectorize(f"access to {e.buffer.name} is not contiguous in the loop")
        if isinstance(e, Binary) and e.op in _ARITH:
            if e.op == BinOp.DIV and not dt.is_float(e.dtype):
                raise CannotVectorize("integer division")
            a, b = _common_type(self.expr(e.a, base, lanes), self.expr(e.b, base, lanes))
            return Binary(e.op, a, b, a.dtype)
        if isinstance(e, Binary) and (divisor := _vector_divisor(e)) is not None:
            a = self.expr(e.a, base, lanes)      # the divisor in the lanes' type (an int64 index's int32 constant)
            return Binary(e.op, a, ir.Broadcast(Const(divisor, ir.split_dtype(a.dtype)[0]), lanes), a.dtype)
        if isinstance(e, Binary) and e.op in _COMPARE:
            a, b = _common_type(self.expr(e.a, base, lanes), self.expr(e.b, base, lanes))
            if e.a.dtype == "bool" and b.dtype != a.dtype:   # masks of values of different widths
                b = ir.VCast(a.dtype, b)
            return Binary(e.op, a, b, _mask_dtype(ir.split_dtype(a.dtype)[0], lanes))
        if isinstance(e, Binary) and e.op in (BinOp.AND, BinOp.OR):
            a, b = self.expr(e.a, base, lanes), self.expr(e.b, base, lanes)
            b = ir.VCast(a.dtype, b) if b.dtype != a.dtype else b
            return Binary(e.op, a, b, a.dtype)
        if isinstance(e, Select) and not self.depends(e.cond):   # one condition for all lanes: C's ?:
            return Select(substitute(e.cond, {var: base}), self.expr(e.true_value, base, lanes),
                          self.expr(e.false_value, base, lanes))
        if isinstance(e, Select):  # both sides are computed in every lane: their reads are masked
            if any(isinstance(n, ir.CheckedIndex) for n in walk(e.true_value)) or \
                    any(isinstance(n, ir.CheckedIndex) for n in walk(e.false_value)):
                raise CannotVectorize("an index checked at run time under a condition: only the lanes that "
                                      "take the branch may check it")
            cond = self.expr(e.cond, base, lanes)
            zero = ir.Broadcast(Const(0, ir.split_dtype(cond.dtype)[0]), lanes)
            t = self.masked(e.true_value, base, lanes, cond)
            f = self.masked(e.false_value, base, lanes, Binary(BinOp.EQ, cond, zero, cond.dtype))
            return Select(_mask_for(cond, e.dtype), t, f)
        if isinstance(e, Binary) and e.op in (BinOp.SHL, BinOp.SHR) and isinstance(e.b, Const) \
                and 0 <= int(e.b.value) < dt.info(e.dtype).bits:   # other amounts: NumPy's rule, scalar
            a = self.expr(e.a, base, lanes)
            return Binary(e.op, a, ir.Broadcast(e.b, lanes), a.dtype)
        if isinstance(e, Call) and e.name in _VECTOR_CALLS.get(e.dtype, ()) and lanes in (4, 8, 16):
            return Call(e.name, [self.expr(a, base, lanes) for a in e.args], ir.vector_dtype(e.dtype, lanes))
        if isinstance(e, Unary) and e.op in ("neg", "bitnot"):
            return Unary(e.op, self.expr(e.a, base, lanes))
        if isinstance(e, Unary) and e.op == "not":     # conditions are lane masks of all ones or zeros
            return Unary("bitnot", self.expr(e.a, base, lanes))
        index = _index_ramp(e, var)
        if index is not None:     # argmax's index: int32 lanes, wrapping as each lane's conversion would
            return ir.Ramp(Cast("int32", simplify(substitute(index, {var: base}))), lanes)
        if isinstance(e, Cast) and (e.dtype, e.value.dtype) == ("float16", "float64"):
            raise CannotVectorize("float64 to float16 is rounded once, by the scalar code")
        if isinstance(e, Cast) and "bool" not in (e.dtype, e.value.dtype):
            return ir.VCast(ir.vector_dtype(e.dtype, lanes), self.expr(e.value, base, lanes))
        raise CannotVectorize(f"{type(e).__name__} {getattr(e, 'op', getattr(e, 'name', ''))} has no vector form")

    def masked(self, e: Expr, base: Expr, lanes: int, mask: Expr) -> Expr:
        """The vector form of ``e`` reading memory only in the lanes of ``mask`` (and of enclosing masks)."""
        if not any(isinstance(n, ir.Load) for n in walk(e)):
            return self.expr(e, base, lanes)
        outer = self.mask
        if outer is not None:
            mask = Binary(BinOp.AND, outer, mask if mask.dtype == outer.dtype else ir.VCast(outer.dtype, mask), outer.dtype)
        self.mask = mask
        try:
            return self.expr(e, base, lanes)
        finally:
            self.mask = outer

    def stored(self, e: ir.Load) -> bool:
        """Whether the loop body stores to the element ``e`` reads (an accumulator), in every iteration."""
        flat = ir.flat_index(e.buffer, e.indices)
        return any(s.buffer is e.buffer and constant_difference(ir.flat_index(s.buffer, s.indices), flat) == 0
                   for s in self.stores)

    def masked_load(self, e: ir.Load, base: Expr, index: Expr, step: int | None, lanes: int) -> Expr:
        """A read under a mask (of any buffer; see :mod:`.masked_reads`): a plain vector load when every
        lane's read is inside the buffer anyway, or when the body stores to the element it reads."""
        if inside_buffer(e, self.ranges) or self.stored(e):
            self.mask, mask = None, self.mask
            try:
                return self.expr(e, base, lanes)
            finally:
                self.mask = mask
        if step != 1 or e.buffer.dtype not in _STRIDED:
            raise CannotVectorize(f"a read of {e.buffer.name} under a select's condition that is not a "
                                  f"contiguous read of 32- or 64-bit elements")
        assert self.mask is not None
        return ir.VLoadMasked(e.buffer, index, _mask_for(self.mask, e.buffer.dtype), lanes)

    def store(self, s: ir.Store, base: Expr, lanes: int) -> ir.Stmt:
        flat = ir.flat_index(s.buffer, s.indices)
        if lanes == 1:
            return ir.Store(s.buffer, tuple(substitute(i, {self.var: base}) for i in s.indices),
                            substitute(s.value, {self.var: base}))
        if coefficient(flat, self.var) != 1:
            raise CannotVectorize(f"store to {s.buffer.name} is not contiguous in the loop")
        value = self.expr(s.value, base, lanes)
        if ir.split_dtype(value.dtype)[0] != s.buffer.dtype:
            # the scalar store converts to the buffer's type (an int64 loop ramp stored into int32)
            value = ir.VCast(ir.vector_dtype(s.buffer.dtype, lanes), value)
        return ir.VStore(s.buffer, simplify(substitute(flat, {self.var: base})), value)

    def chunk(self, stores: list[ir.Store], base: Expr, lanes: int) -> list[ir.Stmt]:
        if not self.lets:
            return [self.store(s, base, lanes) for s in stores]
        self.vector_of = {}
        bindings: list[tuple[Var, Expr]] = []
        for v, value in self.lets:      # a let that changes with the loop becomes a vector let
            if lanes > 1 and self.depends(value):
                vector_value = self.expr(value, base, lanes)    # a condition's is a mask of integers
                vector = ir.RegisterVar(v.name, vector_value.dtype)
                bindings.append((vector, vector_value))
                self.vector_of[id(v)] = vector
            else:
                bindings.append((v, substitute(value, {self.var: base})))
        body = ir.seq([self.store(s, base, lanes) for s in stores])
        self.vector_of = {}
        return [wrap_lets(bindings, body)]

    def run(self) -> ir.Stmt | None:
        loop = self.loop
        self.lets, body = _unwrap_lets(list(loop.body.stmts) if isinstance(loop.body, ir.Block) else [loop.body])
        stores = [s for s in body if isinstance(s, ir.Store)]
        self.stores = stores
        if loop.step != 1 or not body or len(stores) != len(body):
            return None
        if loop.reduction:
            return self.tuple_reduction(stores) if self.lets else self.reduction(stores)
        stores = [replace(s, value=narrow_comparisons(s.value, self.ranges)) for s in stores]
        self.lets = [(v, narrow_comparisons(value, self.ranges)) for v, value in self.lets]
        values = [s.value for s in stores] + [value for _, value in self.lets]
        widest = max([dt.info(s.buffer.dtype).value_itemsize for s in stores] + [value_bytes(v, self.var) for v in values])
        width = self.vector_bytes // widest
        trips = constant_difference(loop.end, loop.begin)
        runtime = trips is None
        if runtime:
            trips = loop.extent_hint
        try:
            if runtime and trips is None:
                return self.plan_runtime(stores, width)
            if not trips:
                return None
            code = self.plan(stores, trips, width)
        except CannotVectorize:
            return None
        if not runtime:
            return code
        full = Binary(BinOp.EQ, Binary(BinOp.SUB, loop.end, loop.begin, "int64"), Const(trips, "int64"), "bool")
        return ir.IfThenElse(full, code, loop)

    def reduction(self, body: list) -> ir.Stmt | None:
        """``acc[i] = acc[i] op f(v)`` over the loop: a vector of partial results, combined at the end."""
        if len(body) != 1:
            return None
        store = body[0]
        value = store.value
        flat = ir.flat_index(store.buffer, store.indices)
        if (not isinstance(value, Binary) or value.op not in _COMBINE or coefficient(flat, self.var) != 0
                or not isinstance(value.a, ir.Load) or value.a.buffer is not store.buffer
                or constant_difference(ir.flat_index(value.a.buffer, value.a.indices), flat) != 0):
            return None
        op, term = value.op, value.b
        if any(isinstance(n, ir.Load) and n.buffer is store.buffer for n in walk(term)):
            return None
        trips = constant_difference(self.loop.end, self.loop.begin)
        runtime = trips is None
        if runtime:
            trips = self.loop.extent_hint
        width = self.vector_bytes // max(dt.info(store.buffer.dtype).value_itemsize, value_bytes(term, self.var))
        if trips is None or trips < width:
            return None
        full = trips // width
        acc = ir.RegisterVar(f"{self.var.name}.acc", ir.vector_dtype(store.buffer.dtype, width))
        identity = _identity(op, store.buffer.dtype)
        chunk_var = ir.LoopVar(f"{self.var.name}.v")
        base = simplify(Binary(BinOp.ADD, self.loop.begin, Binary(BinOp.MUL, chunk_var, Const(width, "int64"), "int64"), "int64"))
        try:
            step = ir.Assign(acc, Binary(op, acc, self.expr(term, base, width), acc.dtype))
        except CannotVectorize:
            return None
        current = ir.Load(store.buffer, store.indices)
        total = Binary(op, current, ir.HReduce(op, acc), store.buffer.dtype)
        parts: list[ir.Stmt] = [ir.Assign(acc, ir.Broadcast(identity, width)),
                                ir.For(chunk_var, Const(0, "int64"), Const(full, "int64"), LoopKind.SERIAL, step),
                                ir.Store(store.buffer, store.indices, total)]
        tail = ir.For(self.var, simplify(Binary(BinOp.ADD, self.loop.begin, Const(full * width, "int64"), "int64")),
                      self.loop.end, LoopKind.SERIAL, store, reduction=True)
        if full * width < trips:
            parts.append(tail)
        code = ir.Registers([acc], ir.seq(parts))
        if not runtime:
            return code
        whole = Binary(BinOp.EQ, Binary(BinOp.SUB, self.loop.end, self.loop.begin, "int64"), Const(trips, "int64"), "bool")
        return ir.IfThenElse(whole, code, self.loop)

    def tuple_reduction(self, stores: list[ir.Store]) -> ir.Stmt | None:
        """A tuple reduction's update (argmax): vectors of partial results (:mod:`.tuple_reduction`)."""
        update = tuple_update(self.lets, stores, self.var)
        if update is None:
            return None
        widest = max([widest_value(update)] + [value_bytes(v, self.var) for _, v in update.inputs])
        try:
            return vectorize_tuple_reduction(self, update, self.vector_bytes // widest)
        except CannotVectorize:
            return None

    def plan_runtime(self, stores: list[ir.Store], width: int) -> ir.Stmt:
        """A trip count known at run time only: full vectors in a loop, then the scalar loop for the rest."""
        begin, end = self.loop.begin, self.loop.end
        chunks = simplify(Binary(BinOp.FLOORDIV, Binary(BinOp.SUB, end, begin, "int64"), Const(width, "int64"), "int64"))
        chunk_var = ir.LoopVar(f"{self.var.name}.v")
        base = simplify(Binary(BinOp.ADD, begin, Binary(BinOp.MUL, chunk_var, Const(width, "int64"), "int64"), "int64"))
        vector = ir.For(chunk_var, Const(0, "int64"), chunks, LoopKind.SERIAL, ir.seq(self.chunk(stores, base, width)))
        rest_begin = simplify(Binary(BinOp.ADD, begin, Binary(BinOp.MUL, chunks, Const(width, "int64"), "int64"), "int64"))
        rest = replace(self.loop, begin=rest_begin, kind=LoopKind.SERIAL, extent_hint=None)
        return ir.seq([vector, rest])

    def plan(self, stores: list[ir.Store], trips: int, width: int) -> ir.Stmt:
        begin = self.loop.begin
        out: list[ir.Stmt] = []
        full = trips // width
        if full > MAX_INLINE_CHUNKS:
            chunk_var = ir.LoopVar(f"{self.var.name}.v")
            base = simplify(Binary(BinOp.ADD, begin, Binary(BinOp.MUL, chunk_var, Const(width, "int64"), "int64"), "int64"))
            out.append(ir.For(chunk_var, Const(0, "int64"), Const(full, "int64"), LoopKind.SERIAL,
                              ir.seq(self.chunk(stores, base, width))))
        else:
            for k in range(full):
                out += self.chunk(stores, simplify(Binary(BinOp.ADD, begin, Const(k * width, "int64"), "int64")), width)
        offset = full * width
        lanes = width // 2
        # tails narrower than a full vector: halves and quarters, never under 16 bytes (the runtime
        # header's narrowest vector types)
        min_lanes = max(2, width // 4, width * 16 // self.vector_bytes)
        while offset < trips:
            while lanes >= min_lanes and trips - offset < lanes:
                lanes //= 2
            n = lanes if lanes >= min_lanes else 1
            out += self.chunk(stores, simplify(Binary(BinOp.ADD, begin, Const(offset, "int64"), "int64")), n)
            offset += n
        return ir.seq(out)


def vectorize(stmt: ir.Stmt, vector_bytes: int) -> ir.Stmt:
    """The ``explicit SIMD`` pass: every vectorizable ``vectorized`` loop of ``stmt`` in explicit SIMD, split
    at its guarded selects' conditions first where it can be (:mod:`.select_split`). The passes before it
    moved out the conditions of the loops it cannot take (:mod:`.unswitch`) and took the dot products
    (:mod:`.dot_products`). A target without SIMD (``vector_bytes`` 0, portable C) keeps every loop scalar."""
    if vector_bytes <= 0:
        return stmt
    return _Vectorize(vector_bytes).visit(stmt)


def vectorizes(loop: ir.For, vector_bytes: int, features: frozenset[str], ranges: VarRanges) -> bool:
    """Whether the dot-product or the explicit SIMD pass rewrites ``loop`` (a ``vectorized`` loop, under
    ``ranges`` of the loops around it): the question the unswitching pass asks before moving a condition."""
    return (vectorize_dot_product(loop, vector_bytes, features) is not None or split_at_conditions(loop) is not None
            or LoopVectorizer(loop, vector_bytes, loop_range(loop, ranges)).run() is not None)


class _Vectorize(RangeMutator):
    def __init__(self, vector_bytes: int):
        super().__init__(VarRanges())
        self.vector_bytes = vector_bytes

    def visit_For(self, s: ir.For) -> ir.Stmt:
        if s.kind is LoopKind.VECTORIZED:
            ranges = loop_range(s, self.ranges)
            done = _vectorize_parts(s, self.vector_bytes, ranges) or LoopVectorizer(s, self.vector_bytes, ranges).run()
            if done is not None:
                return done
        return super().visit_For(s)


def _vectorize_parts(loop: ir.For, vector_bytes: int, ranges: VarRanges) -> ir.Stmt | None:
    """``loop`` split where its guarded selects' conditions change (:mod:`.select_split`), each part
    vectorized (or left scalar when it cannot be)."""
    split = split_at_conditions(loop)
    if split is None:
        return None
    bindings, parts = split
    return wrap_lets(bindings, ir.seq([LoopVectorizer(part, vector_bytes, loop_range(part, ranges)).run() or part
                                      for part in parts]))
