"""API misuse, one row per mistake (Halide's ``test/error`` style): each must raise a tesched error whose
message names what is wrong.

A row is a label, a function making the mistake on fresh declarations, and a regular expression the
message must match (the stage, loop, argument or op at fault). Rows are generated per primitive and per
kind of bad argument, so every primitive is tried with every mistake that applies to it. ``OPEN`` lists
rows whose fix is still to come, with the issue item; they are expected to fail, and the quick profile
fails if one of them starts to pass without being removed from the list.
"""
from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

import tesched as ts
from tesched.intrin import amx_dense_microkernel

from .outcome import describe, is_tesched_error


@dataclass(frozen=True)
class Misuse:
    label: str
    make: Callable[[], object]
    names: str                      # regex the message must match


class Chain:
    """Fresh declarations for one row: A -> B (elementwise) -> C (a reduction) -> D (elementwise)."""

    def __init__(self) -> None:
        self.A = ts.placeholder((8, 6), name="A")
        self.B = ts.compute((8, 6), lambda i, j: self.A[i, j] * 2.0, name="B")
        self.k = ts.reduce_axis((0, 6), name="k")
        self.C = ts.compute((8,), lambda i: ts.sum(self.B[i, self.k], axis=self.k), name="C")
        self.D = ts.compute((8,), lambda i: self.C[i] + 1.0, name="D")
        self.s = ts.create_schedule(self.D.op)

    def loop(self, stage: str, k: int = 0):
        return self.s[getattr(self, stage)].leaf_iter_vars[k]


def _split_both(c: Chain):
    io, ii = c.s[c.D].split(c.D.op.axis[0], factor=2)
    return io, ii


# ---------------------------------------------------------------------------------------------------
# loop primitives x bad axes
BAD_AXES: dict[str, tuple[Callable[[Chain], object], str]] = {
    "int": (lambda c: 3, r"int|IterVar|axis|loop"),
    "str": (lambda c: "i", r"str|IterVar|axis|loop|'i'"),
    "None": (lambda c: None, r"None|IterVar|axis|loop"),
    "axis of another stage": (lambda c: c.B.op.axis[0], r"axis i is not a loop of D|'i' is not a loop of D"),
    "reduce axis of another stage": (lambda c: c.k, r"k is not a loop of D|'k' is not a loop of D"),
    "already split": (lambda c: (_split_both(c), c.D.op.axis[0])[1], r"i was already split|i.outer"),
}
LOOP_PRIMITIVES: dict[str, Callable[[Chain, object], object]] = {
    "split": lambda c, ax: c.s[c.D].split(ax, factor=2),
    "tile": lambda c, ax: c.s[c.D].tile(ax, ax, 2, 2),
    "fuse": lambda c, ax: c.s[c.D].fuse(ax),
    "reorder": lambda c, ax: c.s[c.D].reorder(ax),
    "vectorize": lambda c, ax: c.s[c.D].vectorize(ax),
    "parallel": lambda c, ax: c.s[c.D].parallel(ax),
    "unroll": lambda c, ax: c.s[c.D].unroll(ax),
    "compute_at": lambda c, ax: c.s[c.C].compute_at(c.s[c.D], ax),
    "pragma": lambda c, ax: c.s[c.D].pragma(ax, "ivdep"),
    "prefetch": lambda c, ax: c.s[c.D].prefetch(c.C, ax, 1),
}


def _loop_rows() -> list[Misuse]:
    rows = []
    for (prim, apply), (bad, (make_axis, names)) in itertools.product(LOOP_PRIMITIVES.items(), BAD_AXES.items()):
        if bad == "already split" and prim in ("vectorize", "parallel", "unroll", "compute_at"):
            continue  # annotating or attaching at a split parent is allowed (it names a loop of the stage)

        def make(apply=apply, make_axis=make_axis):
            c = Chain()
            return apply(c, make_axis(c))
        rows.append(Misuse(f"{prim} with an axis that is {bad}", make, rf"(?s)(D|C).*({names})"))
    return rows


# ---------------------------------------------------------------------------------------------------
# split factors
BAD_FACTORS = {"zero": 0, "negative": -2, "float": 2.5, "bool": True, "str": "2", "numpy float": np.float32(2.0)}


def _factor_rows() -> list[Misuse]:
    rows = []
    for (kind, value), key in itertools.product(BAD_FACTORS.items(), ("factor", "nparts")):
        def make(value=value, key=key):
            c = Chain()
            return c.s[c.D].split(c.D.op.axis[0], **{key: value})
        rows.append(Misuse(f"split with a {kind} {key}", make, rf"split {key} of D\.i"))
    for kind, value in BAD_FACTORS.items():
        def make_tile(value=value):
            c = Chain()
            return c.s[c.B].tile(c.B.op.axis[0], c.B.op.axis[1], 2, value)
        rows.append(Misuse(f"tile with a {kind} factor", make_tile, r"split factor of B\.j"))
    rows += [
        Misuse("split with both factor and nparts",
               lambda: (c := Chain()).s[c.D].split(c.D.op.axis[0], factor=2, nparts=2), r"D\.i.*exactly one"),
        Misuse("split with neither factor nor nparts",
               lambda: (c := Chain()).s[c.D].split(c.D.op.axis[0]), r"D\.i.*exactly one"),
    ]
    return rows


# ---------------------------------------------------------------------------------------------------
# primitives on a placeholder's stage
PLACEHOLDER_PRIMITIVES: dict[str, Callable[[Chain], object]] = {
    "split": lambda c: c.s[c.A].split(c.B.op.axis[0], factor=2),
    "fuse": lambda c: c.s[c.A].fuse(c.B.op.axis[0]),
    "reorder": lambda c: c.s[c.A].reorder(c.B.op.axis[0]),
    "vectorize": lambda c: c.s[c.A].vectorize(c.B.op.axis[0]),
    "parallel": lambda c: c.s[c.A].parallel(c.B.op.axis[0]),
    "unroll": lambda c: c.s[c.A].unroll(c.B.op.axis[0]),
    "compute_at": lambda c: c.s[c.A].compute_at(c.s[c.B], c.B.op.axis[0]),
    "compute_inline": lambda c: c.s[c.A].compute_inline(),
    "compute_root": lambda c: c.s[c.A].compute_root(),
    "store_at": lambda c: c.s[c.A].store_at(c.s[c.B], c.B.op.axis[0]),
    "store_root": lambda c: c.s[c.A].store_root(),
    "bound": lambda c: c.s[c.A].bound(c.B.op.axis[0], 0, 2),
    "bound_extent": lambda c: c.s[c.A].bound_extent(c.B.op.axis[0], 2),
    "cache_write": lambda c: c.s.cache_write(c.A, "local"),
    "rfactor": lambda c: c.s.rfactor(c.A, c.k),
    "create_schedule": lambda c: ts.create_schedule(c.A.op),
}


def _placeholder_rows() -> list[Misuse]:
    return [Misuse(f"{name} of a placeholder", lambda apply=apply: apply(Chain()), r"\bA\b.*(input|placeholder)")
            for name, apply in PLACEHOLDER_PRIMITIVES.items()]


# ---------------------------------------------------------------------------------------------------
# placement and dataflow
def _copy_intrinsic(n: int) -> ts.TensorIntrin:
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n,), lambda i: x[i] * 2.0, name="y")
    return ts.decl_tensor_intrin(y.op, ts.CIntrinsic("", body="copy_twice"))


def _cache_write_tensorized():
    c = Chain()
    c.s[c.B].tensorize(c.B.op.axis[1], _copy_intrinsic(6))
    return c.s.cache_write(c.B, "local")


def _tensorize_without_update():
    c = Chain()
    x = ts.placeholder((8, 3), name="x")
    r = ts.reduce_axis((0, 3), name="r")
    y = ts.compute((8,), lambda i: ts.sum(x[i, r], axis=r), name="y")
    ko, ki = c.s[c.C].split(c.k, factor=3)
    c.s[c.C].reorder(ko, c.C.op.axis[0], ki)
    c.s[c.C].tensorize(c.C.op.axis[0], ts.decl_tensor_intrin(y.op, ts.CIntrinsic("", body="sum3")))
    return ts.lower(c.s, [c.A, c.D])


def _rfactor_symbolic_nparts():
    n = ts.var("n")
    x = ts.placeholder((n,), name="x")
    r = ts.reduce_axis((0, n), name="r")
    total = ts.compute((1,), lambda i: ts.sum(x[r], axis=r), name="S")
    s = ts.create_schedule(total.op)
    _, inner = s[total].split(r, nparts=4)
    return s.rfactor(total, inner)


def _fuse_symbolic(mistake: str):
    """A fuse over a symbolic extent (its value is not affine), then something it cannot express."""
    def make():
        n = ts.var("n")
        x = ts.placeholder((4, n), name="x")
        k = ts.reduce_axis((0, n), name="k")
        y = ts.compute((4, n), lambda i, j: x[i, j] + 1.0, name="S")
        z = ts.compute((4,), lambda i: ts.sum(x[i, k], axis=k), name="R")
        s = ts.create_schedule([y.op, z.op])
        if mistake == "mixed":
            s[z].fuse(z.op.axis[0], k)
        else:
            fused = s[y].fuse(*y.op.axis)
            if mistake == "unroll":
                s[y].unroll(s[y].split(fused, factor=4)[1])
            else:
                outer, inner = s[y].split(fused, factor=4)
                s[y].split(inner, factor=2)
        return ts.lower(s, [x, y, z])
    return make


def _rows_placement() -> list[Misuse]:
    def compute_at_not_reader():
        c = Chain()
        E = ts.compute((8,), lambda i: c.A[i, 0], name="E")
        s = ts.create_schedule([c.D.op, E.op])
        return s[c.B].compute_at(s[E], E.op.axis[0])

    def cycle():
        c = Chain()
        c.s[c.C].compute_at(c.s[c.D], c.D.op.axis[0])
        c.s[c.B].compute_at(c.s[c.C], c.C.op.axis[0])
        return c.s[c.D].compute_at(c.s[c.B], c.B.op.axis[0])

    def parallel_in_vectorized():
        A = ts.placeholder((8, 6), name="A")
        P = ts.compute((8, 6), lambda i, j: A[i, j] * 2.0, name="P")
        Q = ts.compute((8,), lambda i: P[i, 0] + P[i, 5], name="Q")
        s = ts.create_schedule(Q.op)
        s[Q].vectorize(Q.op.axis[0])
        s[P].compute_at(s[Q], Q.op.axis[0])
        s[P].parallel(P.op.axis[1])
        return ts.lower(s, [A, Q])

    def other_reader_outside():
        A = ts.placeholder((4, 4), name="A")
        B = ts.compute((4, 4), lambda i, j: A[i, j] + 1.0, name="B")
        C = ts.compute((4, 4), lambda i, j: B[i, j] * 2.0, name="C")
        D = ts.compute((4, 4), lambda i, j: B[i, j] + C[i, j], name="D")
        s = ts.create_schedule(D.op)
        s[B].compute_at(s[C], C.op.axis[1])
        return ts.lower(s, [A, D])

    return [
        Misuse("compute_at a stage that does not read it", compute_at_not_reader, r"B.*E does not read B"),
        Misuse("compute_at cycle", cycle, r"D.*B.*cycle|inside itself|is an output"),
        Misuse("compute_at of an output", lambda: (c := Chain()).s[c.D].compute_at(c.s[c.C], c.C.op.axis[0]),
               r"compute_at of D.*output"),
        Misuse("compute_at a stage inside itself",
               lambda: (c := Chain()).s[c.C].compute_at(c.s[c.C], c.C.op.axis[0]), r"C.*inside itself"),
        Misuse("compute_at with a non-stage parent",
               lambda: (c := Chain()).s[c.C].compute_at(c.D, c.D.op.axis[0]), r"compute_at of C.*stage"),
        Misuse("compute_at with a parent of another schedule",
               lambda: (c := Chain()).s[c.C].compute_at(ts.create_schedule(c.D.op)[c.D], c.D.op.axis[0]),
               r"compute_at of C.*same schedule"),
        Misuse("compute_inline of a reduction", lambda: (c := Chain()).s[c.C].compute_inline(),
               r"compute_inline of C.*reduction"),
        Misuse("compute_inline of an output", lambda: (c := Chain()).s[c.D].compute_inline(),
               r"compute_inline of D.*output"),
        Misuse("parallel on a reduce loop", lambda: (c := Chain()).s[c.C].parallel(c.k),
               r"parallel on stage C.*loop k.*reduction"),
        Misuse("conflicting loop kinds", lambda: ((c := Chain()).s[c.D].parallel(c.D.op.axis[0]),
                                                  c.s[c.D].vectorize(c.D.op.axis[0])),
               r"vectorize on stage D: loop i is already parallel"),
        Misuse("fuse of non-adjacent loops", lambda: (c := Chain()).s[c.B].fuse(*reversed(c.B.op.axis)),
               r"fuse on stage B.*not consecutive"),
        Misuse("vectorize of a loop fusing a data and a reduce loop",
               lambda: (c := Chain()).s[c.C].vectorize(c.s[c.C].fuse(c.C.op.axis[0], c.k)),
               r"vectorize on stage C.*i.k.fused.*data-parallel and reduction"),
        Misuse("parallel of a loop fusing a data and a reduce loop",
               lambda: (c := Chain()).s[c.C].parallel(c.s[c.C].fuse(c.C.op.axis[0], c.k)),
               r"parallel on stage C.*i.k.fused.*reduction"),
        Misuse("rfactor with a loop fusing a data and a reduce loop",
               lambda: ((c := Chain()).s[c.C].fuse(c.C.op.axis[0], c.k), c.s.rfactor(c.C, c.s[c.C].leaf_iter_vars[0])),
               r"rfactor of C.*i.k.fused.*data-parallel and reduction"),
        Misuse("fuse of no loops on a placeholder", lambda: (c := Chain()).s[c.A].fuse(), r"fuse.*A.*placeholder"),
        Misuse("reorder with a repeated loop", lambda: (c := Chain()).s[c.B].reorder(c.B.op.axis[0], c.B.op.axis[0]),
               r"reorder on stage B.*twice"),
        Misuse("parallel loop inside a vectorized loop", parallel_in_vectorized, r"P.*parallel.*vectoriz"),
        Misuse("compute_at with another reader outside the loop", other_reader_outside, r"B.*D.*outside"),
        Misuse("pragma that is not a loop hint", lambda: (c := Chain()).s[c.D].pragma(c.D.op.axis[0], "omp critical"),
               r"pragma on stage D, loop i: unknown pragma 'omp critical'"),
        Misuse("pragma with C text as its value",
               lambda: (c := Chain()).s[c.D].pragma(c.D.op.axis[0], "unroll", "4)\n"),
               r"pragma on stage D, loop i: 'unroll' needs a count"),
        Misuse("pragma unroll_and_jam", lambda: (c := Chain()).s[c.D].pragma(c.D.op.axis[0], "unroll_and_jam", 2),
               r"pragma on stage D, loop i: gcc has no unroll-and-jam"),
        Misuse("pragma ivdep on a reduce loop", lambda: ((c := Chain()).s[c.C].pragma(c.k, "ivdep"),
                                                          ts.lower(c.s, [c.A, c.D]))[1],
               r"loop k of stage C has pragma ivdep"),
        Misuse("pragma ivdep on a parallel loop",
               lambda: ((c := Chain()).s[c.D].pragma(c.D.op.axis[0], "ivdep"), c.s[c.D].parallel(c.D.op.axis[0]),
                        ts.lower(c.s, [c.A, c.D]))[2],
               r"pragma 'ivdep' on stage D, loop i: the loop is parallel"),
        Misuse("prefetch of a tensor the stage does not read",
               lambda: ((c := Chain()).s[c.D].prefetch(c.A, c.D.op.axis[0], 1), ts.lower(c.s, [c.A, c.D]))[1],
               r"prefetch of A at D.i: D does not read A"),
        Misuse("prefetch with a zero offset", lambda: (c := Chain()).s[c.D].prefetch(c.C, c.D.op.axis[0], 0),
               r"prefetch offset of D.i"),
        Misuse("prefetch of a non-tensor", lambda: (c := Chain()).s[c.D].prefetch("C", c.D.op.axis[0], 1),
               r"prefetch on stage D.*tensor.*str"),
        Misuse("prefetch of an inlined stage",
               lambda: ((c := Chain()).s[c.B].compute_inline(), c.s[c.C].prefetch(c.B, c.k, 1),
                        ts.lower(c.s, [c.A, c.D]))[2], r"prefetch of B at C.k: B is not stored whole"),
        Misuse("specialize on a loop variable", lambda: (c := Chain()).s[c.D].specialize(c.D.op.axis[0] > 2),
               r"specialize of D: the condition uses loop variable i"),
        Misuse("specialize on a non-condition", lambda: (c := Chain()).s[c.D].specialize(3), r"specialize of D.*3"),
        Misuse("specialize on a size the kernel does not have",
               lambda: ((c := Chain()).s[c.D].specialize(ts.var("n") % 4 == 0), ts.lower(c.s, [c.A, c.D]))[1],
               r"specialize of D:.*variable n"),
        Misuse("specialize of a stage computed at a loop",
               lambda: ((c := Chain()).s[c.C].specialize(ts.var("n") > 1), c.s[c.C].compute_at(c.s[c.D], c.D.op.axis[0]),
                        ts.lower(c.s, [c.A, c.D]))[2], r"specialize of C: it is computed scope D"),
        Misuse("tensorize a split reduction with an intrinsic without update", _tensorize_without_update,
               r"tensorize of C at i with.*needs an update= implementation"),
        Misuse("rfactor after an nparts split of a symbolic reduction", _rfactor_symbolic_nparts,
               r"rfactor of S: the extent of reduce loop r.outer"),
        Misuse("storage_align of an output", lambda: ((c := Chain()).s[c.D].storage_align(c.D.op.axis[0], 8, 1),
                                                       ts.lower(c.s, [c.A, c.D]))[1],
               r"storage_align of D: it is a kernel argument"),
        Misuse("storage_align on a loop made by split",
               lambda: (c := Chain()).s[c.B].storage_align(c.s[c.B].split(c.B.op.axis[0], factor=2)[0], 8, 1),
               r"storage_align of B: 'i.outer' is not an axis of B"),
        Misuse("storage_align on an axis of another stage",
               lambda: (c := Chain()).s[c.B].storage_align(c.D.op.axis[0], 8, 1), r"storage_align of B: 'i' is not an axis"),
        Misuse("storage_align with an offset past the factor",
               lambda: (c := Chain()).s[c.B].storage_align(c.B.op.axis[0], 8, 8), r"storage_align offset of B.i"),
        Misuse("storage_align of an inlined stage", lambda: ((c := Chain()).s[c.B].storage_align(c.B.op.axis[0], 8, 1),
                                                             c.s[c.B].compute_inline(), ts.lower(c.s, [c.A, c.D]))[2],
               r"storage_align of B: it is inlined"),
        Misuse("fuse over a symbolic extent of data-parallel and reduction loops", _fuse_symbolic("mixed"),
               r"fuse i.k.fused \(the fuse of i, k on stage R\): it fuses data-parallel and reduction"),
        Misuse("unroll of a split of a fuse over a symbolic extent", _fuse_symbolic("unroll"),
               r"unroll of S.i.j.fused.inner: .*symbolic"),
        Misuse("split again of a split of a fuse over a symbolic extent", _fuse_symbolic("split"),
               r"split of S.i.j.fused.inner: .*split once"),
        Misuse("cache_read without readers", lambda: (c := Chain()).s.cache_read(c.A, "shared", []),
               r"cache_read of A.*reader"),
        Misuse("cache_read for a stage that does not read it",
               lambda: (c := Chain()).s.cache_read(c.A, "shared", [c.D]), r"cache_read of A: D does not read it"),
        Misuse("cache_read with a bad scope", lambda: (c := Chain()).s.cache_read(c.A, 7, [c.B]),
               r"cache_read of A: scope"),
        Misuse("cache_write with a bad scope", lambda: (c := Chain()).s.cache_write(c.B, ""),
               r"cache_write of B: scope"),
        Misuse("cache_write of a tensorized stage", _cache_write_tensorized, r"cache_write of B.*tensorized"),
        Misuse("rfactor of an elementwise stage", lambda: (c := Chain()).s.rfactor(c.B, c.B.op.axis[0]),
               r"rfactor of B.*not a reduction"),
        Misuse("rfactor over a data loop", lambda: (c := Chain()).s.rfactor(c.C, c.C.op.axis[0]),
               r"rfactor of C.*'i' is not one of its current reduction loops"),
        Misuse("rfactor with a bad factor_axis", lambda: (c := Chain()).s.rfactor(c.C, c.k, factor_axis=5),
               r"rfactor of C: factor_axis"),
        Misuse("schedule lookup of a foreign tensor",
               lambda: (c := Chain()).s[ts.placeholder((2,), name="Z")], r"Z is not part of this schedule"),
        Misuse("schedule lookup of a non-tensor", lambda: Chain().s[42], r"Tensor or an Operation.*int"),
        Misuse("create_schedule of nothing", lambda: ts.create_schedule([]), r"create_schedule: no outputs"),
        Misuse("create_schedule of a number", lambda: ts.create_schedule(5), r"create_schedule.*int"),
        Misuse("tensorize with a non-intrinsic", lambda: (c := Chain()).s[c.B].tensorize(c.B.op.axis[1], "gemm"),
               r"tensorize.*intrinsic"),
    ]


# ---------------------------------------------------------------------------------------------------
# declarations
def _declaration_rows() -> list[Misuse]:
    rows = []
    for label, shape in [("None", None), ("a str", "abc"), ("zero", (0, 3)), ("negative", (-1,)),
                         ("a float", (2.5,)), ("a bool", (True,)), ("None entry", (None, 2)),
                         ("too large", (2 ** 63,)), ("a float expression", (ts.const(2.0),)), ("a dict", {1: 2})]:
        rows.append(Misuse(f"placeholder with a shape that is {label}",
                           lambda shape=shape: ts.placeholder(shape, name="P"), r"placeholder P.*shape"))
        rows.append(Misuse(f"compute with a shape that is {label}",
                           lambda shape=shape: ts.compute(shape, lambda *i: 1.0, name="Q"), r"compute Q.*shape"))
    for label, dtype in [("None", None), ("complex", "complex64"), ("unknown", "float7"), ("object", object),
                         ("uint64", "uint64"), ("a float128", "longdouble")]:
        rows.append(Misuse(f"placeholder with dtype {label}",
                           lambda dtype=dtype: ts.placeholder((3,), dtype=dtype, name="P"), r"placeholder P.*dtype"))
    for label, name in [("an int", 7), ("None", None), ("a list", ["x"])]:
        rows.append(Misuse(f"placeholder named {label}", lambda name=name: ts.placeholder((3,), name=name),
                           r"placeholder: name"))
        rows.append(Misuse(f"compute named {label}", lambda name=name: ts.compute((3,), lambda i: i, name=name),
                           r"compute: name"))
        rows.append(Misuse(f"reduce_axis named {label}", lambda name=name: ts.reduce_axis((0, 3), name=name),
                           r"reduce_axis: name"))
        rows.append(Misuse(f"var named {label}", lambda name=name: ts.var(name), r"var: name"))
    for label, dom in [("an int", 5), ("one bound", (0,)), ("three bounds", (0, 2, 3)), ("a float bound", (0, 2.5)),
                       ("a float lower bound", (0.5, 3)), ("a bool bound", (True, 3)), ("a str bound", ("a", 3)),
                       ("empty", (3, 3)), ("reversed", (5, 2)), ("None", None), ("a float expression", (0, ts.const(2.0)))]:
        rows.append(Misuse(f"reduce_axis with a domain that is {label}", lambda dom=dom: ts.reduce_axis(dom, name="r"),
                           r"reduce_axis r"))
    A = lambda: ts.placeholder((4, 4), name="A")  # noqa: E731
    rows += [
        Misuse("compute with a non-callable", lambda: ts.compute((4,), 42, name="Q"), r"compute Q: fcompute"),
        Misuse("compute returning a str", lambda: ts.compute((4,), lambda i: "x", name="Q"), r"compute Q.*return"),
        Misuse("compute returning None", lambda: ts.compute((4,), lambda i: None, name="Q"), r"compute Q.*return"),
        Misuse("compute with the wrong arity", lambda: ts.compute((4,), lambda i, j: i, name="Q"),
               r"compute Q.*2 arguments.*1 dimension"),
        Misuse("reduce axis outside a reduction",
               lambda: (k := ts.reduce_axis((0, 4), name="k"), ts.compute((4,), lambda i: A()[i, k], name="Q")),
               r"compute Q: reduce axis k"),
        Misuse("axis of another compute",
               lambda: (B := ts.compute((4,), lambda i: i * 2, name="B"),
                        ts.compute((4,), lambda j: B.op.axis[0] + j, name="Q")), r"compute Q: axis i"),
        Misuse("reduce domain depending on another compute's axis",
               lambda: (B := ts.compute((4,), lambda i: i * 2, name="B"),
                        ts.compute((4,), lambda j: ts.sum(A()[j, (k := ts.reduce_axis((0, B.op.axis[0]), name="k"))],
                                                          axis=k), name="Q")), r"compute Q.*reduce axis k use i"),
        Misuse("sum without an axis", lambda: ts.sum(A()[0, 0]), r"ts.sum needs axis"),
        Misuse("sum over a data axis", lambda: ts.compute((4,), lambda i: ts.sum(A()[i, 0], axis=[i]), name="Q"),
               r"ts.sum: axis i is not a reduce_axis"),
        Misuse("sum over an empty list", lambda: ts.sum(A()[0, 0], axis=[]), r"ts.sum: empty axis list"),
        Misuse("indexing with too few indices", lambda: A()[0], r"A has 2 dimensions, indexed with 1"),
        Misuse("indexing with a float", lambda: A()[0.5, 0], r"index|float|0.5"),
        Misuse("indexing with a float expression", lambda: A()[A()[0, 0], 0], r"index 0 of A must be an integer"),
        Misuse("indexing with a str", lambda: A()["i", 0], r"str|'i'"),
        Misuse("truth value of an expression", lambda: bool(A()[0, 0] > 1), r"truth value.*if_then_else"),
        Misuse("integer true division", lambda: ts.compute((4,), lambda i: i / 2, name="Q"), r"integer true division"),
        Misuse("adding a str", lambda: A()[0, 0] + "x", r"str 'x'"),
        Misuse("adding a list", lambda: A()[0, 0] + [1], r"list"),
        Misuse("an int32 constant that overflows", lambda: ts.const(2 ** 40, "int32"), r"does not fit in int32"),
        Misuse("a fractional int constant", lambda: ts.const(2.5, "int32"), r"int32.*2.5"),
        Misuse("exp of a str", lambda: ts.exp("x"), r"str 'x'"),
        Misuse("astype to an unknown dtype", lambda: A()[0, 0].astype("float7"), r"float7"),
        Misuse("if_then_else with a str branch", lambda: ts.if_then_else(A()[0, 0] > 0, "a", 1.0), r"str 'a'"),
        Misuse("var of a float dtype", lambda: ts.var("n", "float32"), r"var n.*integer"),
        Misuse("decl_tensor_intrin of a placeholder", lambda: ts.decl_tensor_intrin(A(), None), r"decl_tensor_intrin"),
        Misuse("CIntrinsic naming a non-identifier", lambda: ts.CIntrinsic("", body="x; system()"), r"CIntrinsic.*body"),
        Misuse("CIntrinsic naming no function", lambda: ts.CIntrinsic("", reset="r"), r"CIntrinsic.*body.*update"),
        Misuse("AMX micro-kernel wider than two tiles", lambda: amx_dense_microkernel(48, 16, 64),
               r"amx micro-kernel: mr must be a positive int at most 32"),
        Misuse("AMX micro-kernel of float32", lambda: amx_dense_microkernel(16, 16, 64, "float32"),
               r"no AMX product of float32 data"),
        Misuse("AMX micro-kernel with a reduction outside its packing",
               lambda: amx_dense_microkernel(16, 16, 6, "uint8"),
               r"k=6 must be a multiple of the packing group 4"),
    ]
    return rows


def _argmax(combine: Callable | None = None, identity: object = None) -> ts.CommReducer:
    def best(x, y):
        take = x[1] >= y[1]
        return ts.select(take, x[0], y[0]), ts.select(take, x[1], y[1])

    start = identity if identity is not None else (lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)))
    return ts.comm_reducer(combine or best, start, name="argmax")


def _reduce_into(body: Callable) -> object:
    """compute Q over (4,) of ``body(i, k, A)`` with a fresh reduce axis k and input A (4, 4)."""
    A = ts.placeholder((4, 4), name="A")
    k = ts.reduce_axis((0, 4), name="k")
    return ts.compute((4,), lambda i: body(i, k, A), name="Q")


def _expression_rows() -> list[Misuse]:
    """Reducers (init, comm_reducer, tuple reductions), multi-output computes and bitwise operations."""
    I = lambda: ts.placeholder((4, 4), "int32", name="I")  # noqa: E731
    F = lambda: ts.placeholder((4, 4), name="F")  # noqa: E731
    return [
        Misuse("comm_reducer whose combine returns the wrong arity",
               lambda: _reduce_into(lambda i, k, A: _argmax(lambda x, y: x[0])((k, A[i, k]), axis=k)),
               r"compute Q: reducer argmax: combine returns 1 value\(s\) for 2"),
        Misuse("comm_reducer whose combine returns another dtype",
               lambda: _reduce_into(lambda i, k, A: ts.comm_reducer(lambda x, y: (x + y).astype("int32"), 0.0)(
                   A[i, k], axis=k)), r"compute Q: reducer reduce: combine returns int32 for component 0"),
        Misuse("comm_reducer whose identity has the wrong arity",
               lambda: _reduce_into(lambda i, k, A: _argmax(identity=0)((k, A[i, k]), axis=k)),
               r"compute Q: reducer argmax: identity gives 1 values for 2"),
        Misuse("comm_reducer with a combine that is not callable", lambda: ts.comm_reducer(3, 0, name="r"),
               r"comm_reducer r: combine must be a function"),
        Misuse("the components of a tuple reduction out of order",
               lambda: _reduce_into(lambda i, k, A: _argmax()((k, A[i, k]), axis=k)[::-1]),
               r"compute Q: a compute with several outputs returns plain"),
        Misuse("a tuple reduction as a single body",
               lambda: _reduce_into(lambda i, k, A: _argmax()((k, A[i, k]), axis=k)[0]),
               r"compute Q: reducer argmax reduces 2 expressions"),
        Misuse("a reduction and a plain value as two outputs",
               lambda: _reduce_into(lambda i, k, A: (ts.sum(A[i, k], axis=k), A[i, 0])),
               r"compute Q: a compute with several outputs"),
        Misuse("init of the wrong shape",
               lambda: _reduce_into(lambda i, k, A: ts.sum(A[i, k], axis=k, init=ts.placeholder((4, 5), name="P"))),
               r"compute Q: init tensor P has shape \(4, 5\), the output has shape \(4,\)"),
        Misuse("init using the reduce axis", lambda: _reduce_into(lambda i, k, A: ts.sum(A[i, k], axis=k, init=A[k, i])),
               r"compute Q: init uses reduce axis k"),
        Misuse("init of another dtype", lambda: _reduce_into(lambda i, k, A: ts.max(A[i, k], axis=k, init=i)),
               r"compute Q: init 0 is int32, the reduced expression is float32"),
        Misuse("init with two values for one reduction",
               lambda: _reduce_into(lambda i, k, A: ts.prod(A[i, k], axis=k, init=(1.0, 2.0))),
               r"ts.prod: init has 2 values for 1"),
        Misuse("prod without an axis", lambda: ts.prod(F()[0, 0]), r"ts.prod needs axis"),
        Misuse("bitwise and of floats", lambda: ts.compute((4,), lambda i: F()[i, 0] & F()[i, 1], name="Q"),
               r"compute Q: F\[i, 0\] & F\[i, 1\]: bitwise operations need integer operands, got float32"),
        Misuse("shift of a float", lambda: ts.compute((4,), lambda i: F()[i, 0] << 2, name="Q"),
               r"compute Q: F\[i, 0\] << 2.*bitwise operations need integer"),
        Misuse("bitwise not of a float", lambda: ts.compute((4,), lambda i: ~F()[i, 0], name="Q"),
               r"compute Q: ~\(F\[i, 0\]\): bitwise not needs an integer, got float32"),
        Misuse("bitwise_xor of a float and an int", lambda: ts.bitwise_xor(I()[0, 0], F()[0, 0]),
               r"bitwise operations need integer operands, got int32 and float32"),
        Misuse("bitwise_not of a condition", lambda: ts.bitwise_not(I()[0, 0] > 0), r"bitwise not needs an integer, got bool"),
        Misuse("power of a condition", lambda: ts.power(I()[0, 0] > 0, 2), r"power.*no arithmetic on bool"),
        Misuse("lerp of integer endpoints", lambda: ts.lerp(I()[0, 0], I()[0, 1], 0.5),
               r"lerp: the endpoints must be floating, got int32 and int32"),
        Misuse("cast with its arguments swapped", lambda: ts.cast(F()[0, 0], "int32"),  # type: ignore[arg-type]
               r"cast: the first argument is the dtype"),
        Misuse("cache_write of a multi-output stage",
               lambda: (T := ts.compute((4,), lambda i: (F()[i, 0], I()[i, 0]), name="T"),
                        ts.create_schedule(T[0].op).cache_write(T[1], "local")), r"cache_write of T: it has 2 outputs"),
        Misuse("output index beyond a multi-output compute",
               lambda: ts.compute((4,), lambda i: (F()[i, 0], I()[i, 0]), name="T")[0].op.output(2),
               r"operation T has 2 output\(s\)"),
    ]


# ---------------------------------------------------------------------------------------------------
# lowering, building and calling
def _build_rows() -> list[Misuse]:
    def small():
        A = ts.placeholder((10,), name="A")
        B = ts.compute((10,), lambda i: A[i] * 2.0, name="B")
        return A, B, ts.create_schedule(B.op)

    def oob(offset: int):
        A = ts.placeholder((10,), name="A")
        B = ts.compute((10,), lambda i: A[i + offset], name="B")
        return ts.lower(ts.create_schedule(B.op), [A, B])

    def set_env_and_build(var: str, value: str):
        old = os.environ.get(var)
        os.environ[var] = value
        try:
            A, B, s = small()
            return ts.build(s, [A, B], name="env_misuse")
        finally:
            os.environ.pop(var) if old is None else os.environ.__setitem__(var, old)

    def call(args_of: Callable):
        A, B, s = small()
        f = ts.build(s, [A, B], name="call_misuse")
        return f(*args_of(A, B))

    rows = [
        Misuse("build without args", lambda: ts.build(small()[2]), r"args"),
        Misuse("build with a non-tensor arg", lambda: (t := small(), ts.build(t[2], [t[0], 5]))[1],
               r"arguments must be tensors.*int"),
        Misuse("build missing an input", lambda: (t := small(), ts.build(t[2], [t[1]]))[1], r"input A"),
        Misuse("build missing an output", lambda: (t := small(), ts.build(t[2], [t[0]]))[1], r"output B"),
        Misuse("build with a repeated arg", lambda: (t := small(), ts.build(t[2], [t[0], t[0], t[1]]))[1],
               r"A appears twice"),
        Misuse("build with a numeric name", lambda: (t := small(), ts.build(t[2], [t[0], t[1]], name=12345))[1],
               r"name.*int|12345"),
        Misuse("build for an unknown target", lambda: (t := small(), ts.build(t[2], [t[0], t[1]], target="rocm"))[1],
               r"target 'rocm'"),
        Misuse("build for a GPU with unbound loops", lambda: (t := small(), ts.build(t[2], [t[0], t[1]], target="cuda"))[1],
               r"stage B is left unbound outside the GPU kernel"),
        Misuse("lower with a non-tensor arg", lambda: (t := small(), ts.lower(t[2], [t[0], "B"]))[1],
               r"tensors.*str"),
        Misuse("read past the end", lambda: oob(5), r"A.*B.*(14|beyond)"),
        Misuse("read before the start", lambda: oob(-3), r"A.*B.*(-3|before)"),
        Misuse("read far past the end", lambda: oob(1 << 20), r"A.*B"),
        Misuse("set_num_threads(0)", lambda: ts.set_num_threads(0), r"threads.*0"),
        Misuse("set_num_threads(-1)", lambda: ts.set_num_threads(-1), r"threads.*-1"),
        Misuse("set_num_threads(True)", lambda: ts.set_num_threads(True), r"threads.*True"),
        Misuse("set_num_threads(1.5)", lambda: ts.set_num_threads(1.5), r"threads.*1.5"),
        Misuse("set_num_threads(100000)", lambda: ts.set_num_threads(100000), r"threads.*100000"),
        Misuse("set_num_threads(2**32 + 3)", lambda: ts.set_num_threads(2 ** 32 + 3), r"threads.*4294967299"),
        Misuse("TESCHED_VECTOR_BYTES=wide", lambda: set_env_and_build("TESCHED_VECTOR_BYTES", "wide"),
               r"TESCHED_VECTOR_BYTES.*wide"),
        Misuse("TESCHED_VECTOR_BYTES=24", lambda: set_env_and_build("TESCHED_VECTOR_BYTES", "24"),
               r"TESCHED_VECTOR_BYTES.*24"),
        Misuse("call with too few arrays", lambda: call(lambda A, B: []), r"takes 2 arrays"),
        Misuse("call with a list", lambda: call(lambda A, B: [[0.0] * 10]), r"argument A.*list"),
        Misuse("call with the wrong dtype", lambda: call(lambda A, B: [np.zeros(10)]), r"argument A.*float64"),
        Misuse("call with the wrong shape", lambda: call(lambda A, B: [np.zeros(9, np.float32)]), r"argument A.*shape"),
        Misuse("call with a strided array", lambda: call(lambda A, B: [np.zeros(20, np.float32)[::2]]),
               r"argument A.*contiguous"),
        Misuse("call with a read-only output", lambda: call(lambda A, B: [np.zeros(10, np.float32), _readonly(10)]),
               r"argument B.*read-only"),
        Misuse("call with an output aliasing the input",
               lambda: call(lambda A, B: [x := np.zeros(10, np.float32), x]), r"argument B.*overlaps.*A"),
    ]
    return rows


# ---------------------------------------------------------------------------------------------------
# data-dependent indexing: gathers, scatters, scans
def _data_dependent_rows() -> list[Misuse]:
    def gather_call(bad: int):
        A = ts.placeholder((10,), name="A")
        I = ts.placeholder((4,), "int32", name="I")
        G = ts.compute((4,), lambda i: A[I[i]] * 2.0, name="G")
        f = ts.build(ts.create_schedule(G.op), [A, I, G], name="gather_misuse")
        return f(np.zeros(10, np.float32), np.array([0, 1, bad, 2], np.int32))

    def histogram():
        img = ts.placeholder((4, 5), "int32", name="img")
        ry, rx = ts.reduce_axis((0, 4), name="ry"), ts.reduce_axis((0, 5), name="rx")
        hist = ts.scatter_add((8,), img[ry, rx], 1, [ry, rx], name="hist")
        return img, ry, rx, hist, ts.create_schedule(hist.op)

    def histogram_call():
        img, _, _, hist, s = histogram()
        image = np.zeros((4, 5), np.int32)
        image[2, 3] = 8
        return ts.build(s, [img, hist], name="hist_misuse")(image)

    def histogram_vectorized():
        img, _, rx, hist, s = histogram()
        s[hist].vectorize(rx)
        return ts.lower(s, [img, hist])

    def histogram_compute_at():
        img, _, _, hist, _ = histogram()
        C = ts.compute((8,), lambda i: hist[i] * 2, name="C")
        s = ts.create_schedule(C.op)
        s[hist].compute_at(s[C], C.op.axis[0])
        return ts.lower(s, [img, C])

    def cumsum(update_reads_now: bool = False):
        X = ts.placeholder((6, 3), name="X")
        state = ts.placeholder((6, 3), name="state")
        init = ts.compute((1, 3), lambda t, i: X[t, i], name="init")
        update = ts.compute((6, 3), lambda t, i: state[t - (0 if update_reads_now else 1), i] + X[t, i], name="update")
        res = ts.scan(init, update, state, name="cumsum")
        return X, init, update, res, ts.create_schedule(res.op)

    def scan_parallel_time():
        X, _, _, res, s = cumsum()
        s[res].parallel(res.op.axis[0])
        return ts.lower(s, [X, res])

    def scan_update_at_root():
        X, _, update, res, s = cumsum()
        s[update].compute_root()
        return ts.lower(s, [X, res])

    def scan_reads_now():
        X, _, _, res, s = cumsum(update_reads_now=True)
        return ts.lower(s, [X, res])

    return [
        Misuse("gather at an index past the end", lambda: gather_call(10),
               r"A is accessed out of bounds by stage G: A\[I\[i\]\] reads dimension 0 .*outside \[0, 10\)"),
        Misuse("gather at a negative index", lambda: gather_call(-1), r"A\[I\[i\]\].*outside \[0, 10\)"),
        Misuse("gather with an affine dimension out of bounds",
               lambda: (A := ts.placeholder((10, 3), name="A"), I := ts.placeholder((4,), "int32", name="I"),
                        G := ts.compute((4, 3), lambda i, j: A[I[i], j + 1], name="G"),
                        ts.lower(ts.create_schedule(G.op), [A, I, G])),
               r"A\[I\[i\], j \+ 1\] at i = \d, j = 2 reads dimension 1 at 3"),
        Misuse("scatter into a bin past the end", histogram_call, r"hist\[img\[ry, rx\]\] writes dimension 0"),
        Misuse("parallel scatter without atomics",
               lambda: (t := histogram(), t[4][t[3]].parallel(t[1]), ts.lower(t[4], [t[0], t[3]])),
               r"loop ry of stage hist is parallel.*hist is a scatter.*s\[hist\]\.atomic\(\)"),
        Misuse("vectorized scatter", histogram_vectorized, r"loop rx of stage hist is vectorized"),
        Misuse("compute_at of a scatter", histogram_compute_at, r"compute_at of hist: a scatter"),
        Misuse("cache_write of a scatter", lambda: (t := histogram(), t[4].cache_write(t[3], "local")),
               r"cache_write of hist: it is a scatter"),
        Misuse("atomic of a non-scatter", lambda: (c := Chain()).s[c.C].atomic(), r"atomic of C: only a scatter"),
        Misuse("atomic scatter-max",
               lambda: (r := ts.reduce_axis((0, 4), name="r"),
                        H := ts.scatter((3,), r % 3, r.astype("float32"), r, reducer="max", name="H"),
                        ts.create_schedule(H.op)[H].atomic()), r"atomic of H: atomic updates are additions"),
        Misuse("scatter with too many indices",
               lambda: (r := ts.reduce_axis((0, 4), name="r"), ts.scatter((3,), (r, r), 1, r, name="H")),
               r"scatter H: the output has 1 dimensions, indexed with 2"),
        Misuse("scatter over a data axis",
               lambda: ts.scatter((3,), 0, 1, ts.compute((3,), lambda i: i).op.axis[0], name="H"),
               r"scatter H: axis must be a reduce axis"),
        Misuse("scatter with an unknown reducer",
               lambda: (r := ts.reduce_axis((0, 4), name="r"), ts.scatter((3,), r % 3, 1, r, reducer="mean", name="H")),
               r"scatter: reducer must be one of sum, max, min"),
        Misuse("scan with a parallel time loop", scan_parallel_time, r"loop t of stage cumsum is parallel"),
        Misuse("scan update computed at the root", scan_update_at_root,
               r"stage update reads the state of scan cumsum.*compute it at cumsum\.t"),
        Misuse("scan update reading the current step", scan_reads_now, r"update.*would read a value before cumsum"),
        Misuse("scan of a computed state",
               lambda: (t := cumsum(), ts.scan(t[1], t[2], t[2]))[1], r"state_placeholder must be a ts.placeholder"),
        Misuse("scan whose update ignores the state",
               lambda: (X := ts.placeholder((6, 3), name="X"), st := ts.placeholder((6, 3), name="st"),
                        ts.scan(ts.compute((1, 3), lambda t, i: X[t, i], name="init"),
                                ts.compute((6, 3), lambda t, i: X[t, i], name="update"), st, name="S")),
               r"scan S: update does not read the state st"),
    ]


def _readonly(size: int) -> np.ndarray:
    out = np.zeros(size, np.float32)
    out.flags.writeable = False
    return out


# ---------------------------------------------------------------------------------------------------
# storage placement (store_at, store_root) and realized regions (bound, bound_extent)
def _sliding(parallel: bool = False, store_inside: bool = False, inline: bool = False):
    """B stored at the root (or at D's loop), computed at C's loop i (itself at D.i): lowered."""
    c = Chain()
    c.s[c.C].compute_at(c.s[c.D], c.D.op.axis[0])
    if inline:
        c.s[c.B].compute_root()
    else:
        c.s[c.B].compute_at(c.s[c.C], c.k if store_inside else c.C.op.axis[0])
    if store_inside:
        c.s[c.B].store_at(c.s[c.C], c.C.op.axis[0])
        c.s[c.B].compute_at(c.s[c.D], c.D.op.axis[0])
    else:
        c.s[c.B].store_root()
    if parallel:
        c.s[c.D].parallel(c.D.op.axis[0])
    return ts.lower(c.s, [c.A, c.D])


def _bounded(extent: int, reader_needs_more: bool):
    c = Chain()
    if reader_needs_more:
        c.s[c.B].bound(c.B.op.axis[1], 0, extent)
    else:
        c.s[c.B].compute_at(c.s[c.C], c.C.op.axis[0])
        c.s[c.B].bound_extent(c.B.op.axis[1], extent)
    return ts.lower(c.s, [c.A, c.D])


def _storage_rows() -> list[Misuse]:
    return [
        Misuse("store_root across a parallel loop", lambda: _sliding(parallel=True),
               r"store_root of B: loop i of stage D is parallel.*in order"),
        Misuse("store_at inside the compute_at loop", lambda: _sliding(store_inside=True),
               r"store_at of B at C\.i: B is computed at D\.i.*at or outside"),
        Misuse("store_root of a stage computed at the root", lambda: _sliding(inline=True),
               r"store_root of B: B is computed at the root.*compute_at"),
        Misuse("store_at of an output", lambda: (c := Chain()).s[c.D].store_at(c.s[c.C], c.C.op.axis[0]),
               r"store_at of D.*output"),
        Misuse("store_at a stage that does not read it",
               lambda: (c := Chain()).s[c.C].store_at(c.s[c.B], c.B.op.axis[0]), r"store_at of C.*B does not read C"),
        Misuse("store_at a loop of another stage",
               lambda: (c := Chain()).s[c.B].store_at(c.s[c.C], c.D.op.axis[0]), r"store_at of B.*loop of D"),
        Misuse("bound beyond the tensor", lambda: (c := Chain()).s[c.B].bound(c.B.op.axis[0], 4, 5),
               r"bound of B\.i.*\[4, 9\) exceeds.*\[0, 8\)"),
        Misuse("bound of a reduce axis", lambda: (c := Chain()).s[c.C].bound(c.k, 0, 2),
               r"bound on stage C: 'k'.*reduction"),
        Misuse("bound_extent of zero", lambda: (c := Chain()).s[c.B].bound_extent(c.B.op.axis[0], 0),
               r"bound_extent of B\.i.*positive"),
        Misuse("bound of an output smaller than it", lambda: (c := Chain()).s[c.D].bound(c.D.op.axis[0], 0, 4),
               r"bound of D\.i: D is an output.*exceeds the bound \[0, 4\)"),
        Misuse("bound smaller than a reader needs", lambda: _bounded(3, True),
               r"bound of B \(j: \[0, 3\)\): C \(reading B\[i, k\]\) requests B\[\d+, [3-5]\]"),
        Misuse("bound_extent smaller than the footprint", lambda: _bounded(4, False),
               r"bound of B \(j: extent 4\): the loop C\.i it is computed at requests"),
    ]


ROWS: list[Misuse] = _loop_rows() + _factor_rows() + _placeholder_rows() + _rows_placement() + \
    _storage_rows() + _declaration_rows() + _expression_rows() + _build_rows() + _data_dependent_rows()

# rows that need a part of the compiler not yet fixed: label -> issue item
OPEN: dict[str, str] = {
}


def describe_case(n: int) -> dict:
    return {"label": ROWS[n].label}


def run_case(n: int, verbose: bool = False) -> dict:
    row = ROWS[n]
    record = {"label": row.label, "open": OPEN.get(row.label)}
    try:
        row.make()
    except Exception as err:
        if not is_tesched_error(err):
            return {**record, "status": "error", "detail": describe(err)}
        if not re.search(row.names, str(err)):
            return {**record, "status": "unnamed", "detail": f"{describe(err)} (wanted /{row.names}/)"}
        return {**record, "status": "ok", "detail": str(err)[:160]}
    return {**record, "status": "wrong", "detail": "no error raised"}
