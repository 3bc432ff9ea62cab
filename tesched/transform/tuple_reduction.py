"""Explicit SIMD for a vectorized reduction loop of a tuple reduction (``ts.argmax``, a ``comm_reducer`` of
several values).

The update of a tuple reduction (see ``tesched.poly.emit``) binds the reduced values of one iteration
(one :class:`~tesched.ir.nodes.ReduceInput` per component), then combines the accumulators with them in
``let`` bindings that read nothing else, then stores every component. Over a vectorized loop this becomes:

1. one vector of partial results per component, its lanes the values of the loop's first ``width``
   iterations (no identity is needed); two such sets (the first ``2 * width`` iterations) when the loop
   is long enough, so that the combinations of consecutive chunks do not wait for each other;
2. for each further chunk of ``width`` iterations, the reducer's combination lane by lane (the partial
   results and the chunk's values in the places of the accumulators and the reduced values), the sets
   taking turns;
3. the sets combined lane by lane, then the lanes combined in order into one partial result, with the
   same combination;
4. the accumulators combined with it, as one iteration of the scalar update would;
5. the iterations after the last full chunk, by the scalar loop.

Every iteration is combined once, in another order than the loop's: the reducer must be commutative and
associative, as ``rfactor`` requires. ``ts.argmax``/``ts.argmin`` are (ties go to the smaller index, NaN
to the first NaN), so they give NumPy's answer. Anything else in the loop body keeps the scalar loop. This
module plans the chunks; the vector form of each expression is the vectorizer's
(:class:`tesched.transform.vectorize.LoopVectorizer`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from tesched.arith.linear import constant_difference
from tesched.arith.simplify import simplify
from tesched.ir import nodes as ir
from tesched.ir.cse import wrap_lets
from tesched.ir.kinds import LoopKind
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.te.visit import rewrite, substitute, walk


class VectorForms(Protocol):
    """What this module asks of the loop vectorizer: the loop, and the vector form of an expression
    (``vector_of`` maps variables to the vector values standing for them)."""

    loop: ir.For
    vector_of: dict[int, ir.RegisterVar]

    def expr(self, e: Expr, base: Expr, lanes: int) -> Expr: ...


@dataclass
class TupleUpdate:
    """The parts of a tuple reduction's update: the reduced values (bound to ``inputs``, one per
    component, in the order of ``stores``), the combination's bindings (accumulator loads replaced by
    ``accumulators``), and the stores of the combined values."""

    inputs: list[tuple[ir.ReduceInput, Expr]]
    combination: list[tuple[Var, Expr]]
    stores: list[ir.Store]
    accumulators: list[Var]
    combined: list[Var]


def _accumulator_of(e: Expr, stores: list[ir.Store]) -> int | None:
    if not isinstance(e, ir.Load):
        return None
    for k, s in enumerate(stores):
        if e.buffer is s.buffer and constant_difference(ir.flat_index(e.buffer, e.indices),
                                                        ir.flat_index(s.buffer, s.indices)) == 0:
            return k
    return None


def tuple_update(lets: list[tuple[Var, Expr]], stores: list[ir.Store], var: Var) -> TupleUpdate | None:
    """The parts of the loop body ``lets`` + ``stores`` when it is a tuple reduction's update over the loop
    variable ``var`` in the form above, else None."""
    buffers = [s.buffer for s in stores]
    if len({id(b) for b in buffers}) != len(stores) or any(n is var for s in stores for i in s.indices for n in walk(i)):
        return None
    inputs = {id(v.buffer): (v, value) for v, value in lets if isinstance(v, ir.ReduceInput)}
    if sorted(inputs) != sorted(map(id, buffers)) or len(inputs) != sum(isinstance(v, ir.ReduceInput) for v, _ in lets):
        return None
    for _, value in inputs.values():
        if any(isinstance(n, ir.Load) and id(n.buffer) in inputs for n in walk(value)):
            return None
    order = [isinstance(v, ir.ReduceInput) for v, _ in lets]
    if order != sorted(order, reverse=True):
        return None     # the reduced values are bound first: they cannot read the combination
    accumulators = [Var(f"{b.name}.acc", b.dtype) for b in buffers]
    combination: list[tuple[Var, Expr]] = []
    for v, value in lets[len(inputs):]:
        if any(n is var or isinstance(n, ir.CheckedIndex) or (isinstance(n, ir.Load) and _accumulator_of(n, stores) is None)
               for n in walk(value)):
            return None     # the combination reads only the accumulators and the reduced values
        combination.append((v, rewrite(value, lambda e: (None if (k := _accumulator_of(e, stores)) is None
                                                          else accumulators[k]))))
    combined = [s.value for s in stores]
    names = {id(v) for v, _ in combination}
    if not all(isinstance(c, Var) and id(c) in names for c in combined):
        return None
    return TupleUpdate([inputs[id(b)] for b in buffers], combination, stores, accumulators,
                       [c for c in combined if isinstance(c, Var)])


def _combine(update: TupleUpdate, accumulators: list[Expr], values: list[Expr]) -> tuple[list[tuple[Var, Expr]], list[Expr]]:
    """Scalar bindings of the combination of ``accumulators`` with ``values`` (one per component), under
    fresh names, and the variables holding the combined components."""
    mapping: dict[Var, Expr] = dict(zip(update.accumulators, accumulators))
    mapping.update({v: x for (v, _), x in zip(update.inputs, values)})
    bindings: list[tuple[Var, Expr]] = []
    for v, value in update.combination:
        fresh = Var(v.name, v.dtype)
        bindings.append((fresh, substitute(value, mapping)))
        mapping[v] = fresh
    return bindings, [mapping[c] for c in update.combined]


SETS = 2    # independent sets of partial vectors: each chunk's combination waits for the previous one's


def vectorize_tuple_reduction(vec: VectorForms, update: TupleUpdate, width: int) -> ir.Stmt | None:
    """The loop of ``vec`` as SIMD partial results of ``width`` lanes (see the module docstring), or None
    when it has fewer than ``width`` iterations. With at least ``SETS * width`` iterations, ``SETS``
    independent sets of partial vectors take turns (so that consecutive combinations overlap) and are
    combined lane by lane after the loop."""
    loop = vec.loop
    trips = constant_difference(loop.end, loop.begin)
    if width < 2 or (trips is not None and trips < width):
        return None
    sets = SETS if trips is None or trips >= SETS * width else 1
    step = sets * width
    name = loop.var.name
    groups = simplify(Binary(BinOp.FLOORDIV, Binary(BinOp.SUB, loop.end, loop.begin, "int64"), Const(step, "int64"), "int64"))
    partials = [[ir.RegisterVar(f"{name}.lanes{k}" + (f"_{j}" if j else ""), ir.vector_dtype(s.buffer.dtype, width))
                 for k, s in enumerate(update.stores)] for j in range(sets)]
    totals = [ir.RegisterVar(f"{name}.total{k}", s.buffer.dtype) for k, s in enumerate(update.stores)]

    def chunk(into: list[ir.RegisterVar], base: Expr | None, given: list[ir.RegisterVar] | None = None) -> ir.Stmt:
        """``into`` set to the values of the chunk at ``base`` (or to ``given``), combined with ``into``
        unless they are its first values (``base`` and ``given`` both set)."""
        vec.vector_of = {id(a): p for a, p in zip(update.accumulators, into)}
        first = base is not None and given is not None
        bindings: list[tuple[Var, Expr]] = []
        if given is not None:
            vec.vector_of.update({id(v): g for (v, _), g in zip(update.inputs, given)})
        for v, value in (update.inputs if base is not None else []) + ([] if first else update.combination):
            vector = vec.expr(value, base if base is not None else loop.begin, width)
            register = ir.RegisterVar(v.name, vector.dtype)
            bindings.append((register, vector))
            vec.vector_of[id(v)] = register
        results = [v for v, _ in update.inputs] if first else update.combined
        assigns = ir.seq([ir.Assign(p, vec.vector_of[id(r)]) for p, r in zip(into, results)])
        vec.vector_of = {}
        return wrap_lets(bindings, assigns)

    def at(group: Expr, j: int) -> Expr:
        offset = Binary(BinOp.ADD, Binary(BinOp.MUL, group, Const(step, "int64"), "int64"), Const(j * width, "int64"), "int64")
        return simplify(Binary(BinOp.ADD, loop.begin, offset, "int64"))

    group_var = ir.LoopVar(f"{name}.v")
    zero = Const(0, "int64")
    parts: list[ir.Stmt] = [chunk(partials[j], at(zero, j), partials[j]) for j in range(sets)]
    parts.append(ir.For(group_var, Const(1, "int64"), groups, LoopKind.SERIAL,
                        ir.seq([chunk(partials[j], at(group_var, j)) for j in range(sets)])))
    parts += [chunk(partials[0], None, partials[j]) for j in range(1, sets)]
    parts += [ir.Assign(t, ir.Lane(p, 0)) for t, p in zip(totals, partials[0])]
    for lane in range(1, width):        # the lanes in order, each combined into the running total
        bindings, combined = _combine(update, list(totals), [ir.Lane(p, lane) for p in partials[0]])
        parts.append(wrap_lets(bindings, ir.seq([ir.Assign(t, c) for t, c in zip(totals, combined)])))
    accumulators = [ir.Load(s.buffer, s.indices) for s in update.stores]
    bindings, combined = _combine(update, list(accumulators), list(totals))
    parts.append(wrap_lets(bindings, ir.seq([ir.Store(s.buffer, s.indices, c) for s, c in zip(update.stores, combined)])))
    if trips is None or trips % step:
        parts.append(replace(loop, begin=at(groups, 0), kind=LoopKind.SERIAL, extent_hint=None))
    code: ir.Stmt = ir.Registers([p for group in partials for p in group] + totals, ir.seq(parts))
    if trips is not None:
        return code
    enough = Binary(BinOp.GE, Binary(BinOp.SUB, loop.end, loop.begin, "int64"), Const(step, "int64"), "bool")
    return ir.IfThenElse(enough, code, replace(loop, kind=LoopKind.SERIAL))


def widest_value(update: TupleUpdate) -> int:
    """The bytes of the widest value the combination computes (conditions aside): with the reduced
    values', it chooses the number of lanes."""
    return max(dt.info(n.dtype).value_itemsize for _, value in update.combination for n in walk(value)
               if n.dtype not in ("bool", "handle"))
