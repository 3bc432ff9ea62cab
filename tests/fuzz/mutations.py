"""Random mutations of kernel arguments: each call computes what NumPy computes or raises a named error.

A few kernels are built once per process (static shapes, symbolic sizes, integer dtypes with two outputs,
a reduction whose intermediate grows with the square of a size, NaN-sensitive max). Case ``n`` picks a
kernel and a mutation of its valid arguments. A mutation is either *valid* (other sizes, omitted outputs,
NaN or infinite values: the result must match NumPy), *invalid* (wrong dtype, shape, strides, alignment,
aliasing, count, a non-array: the call must raise a tesched error naming the argument) or *memory* (an
intermediate too large to allocate: ``MemoryError`` naming the buffer). A crash kills only the child.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

import tesched as ts

from .outcome import describe, is_tesched_error
from .schedules import tolerance


@dataclass
class Target:
    name: str
    kernel: Callable
    n_inputs: int
    make: Callable[[random.Random, int | None], list]       # valid inputs (a size may be forced)
    reference: Callable[..., list]
    output_shapes: Callable[[list], list]
    output_dtypes: list


def _uniform(rnd: random.Random, shape, dtype="float32") -> np.ndarray:
    return np.random.default_rng(rnd.getrandbits(32)).uniform(-2, 2, shape).astype(dtype)


@functools.lru_cache(maxsize=None)
def targets() -> list[Target]:
    out = []
    A = ts.placeholder((4, 5), name="A")
    B = ts.placeholder((5,), name="B")
    C = ts.compute((4, 5), lambda i, j: A[i, j] * 2.0 + B[j], name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    out.append(Target("static", ts.build(s, [A, B, C], name="mut_static"), 2,
                      lambda r, n: [_uniform(r, (4, 5)), _uniform(r, (5,))],
                      lambda a, b: [a * 2 + b], lambda ins: [(4, 5)], ["float32"]))

    n, m = ts.var("n"), ts.var("m")
    X = ts.placeholder((n, m + 2), name="X")
    Y = ts.compute((n, m), lambda i, j: X[i, j] + X[i, j + 1] * 2.0 + X[i, j + 2], name="Y")
    s = ts.create_schedule(Y.op)
    s[Y].parallel(Y.op.axis[0])
    out.append(Target("symbolic", ts.build(s, [X, Y], name="mut_symbolic"), 1,
                      lambda r, k: [_uniform(r, (k or r.randint(1, 9), r.randint(3, 12)))],
                      lambda x: [x[:, :-2] + 2 * x[:, 1:-1] + x[:, 2:]],
                      lambda ins: [(ins[0].shape[0], ins[0].shape[1] - 2)], ["float32"]))

    I = ts.placeholder((6,), "int32", name="I")
    O1 = ts.compute((6,), lambda i: I[i] * 3 - 1, name="O1")
    O2 = ts.compute((6,), lambda i: (I[i] // 2).astype("int64"), name="O2")
    out.append(Target("int_two_outputs", ts.build(ts.create_schedule([O1.op, O2.op]), [I, O1, O2],
                                                  name="mut_int"), 1,
                      lambda r, k: [np.array([r.randint(-99, 99) for _ in range(6)], np.int32)],
                      lambda i: [i * 3 - 1, (i // 2).astype(np.int64)], lambda ins: [(6,), (6,)],
                      ["int32", "int64"]))

    q = ts.var("q")
    V = ts.placeholder((q,), name="V")
    outer = ts.compute((q, q), lambda i, j: V[i] * V[j], name="outer")
    k = ts.reduce_axis((0, q), name="k")
    R = ts.compute((q,), lambda i: ts.sum(outer[i, k], axis=k), name="R")
    out.append(Target("square_intermediate", ts.build(ts.create_schedule(R.op), [V, R], name="mut_square"), 1,
                      lambda r, k: [_uniform(r, (k or r.randint(1, 12),))],
                      lambda v: [(v[:, None] * v[None, :]).sum(axis=1)], lambda ins: [ins[0].shape], ["float32"]))

    M = ts.placeholder((3, 7), name="M")
    kk = ts.reduce_axis((0, 7), name="kk")
    Mx = ts.compute((3,), lambda i: ts.max(M[i, kk], axis=kk), name="Mx")
    Mm = ts.compute((3, 7), lambda i, j: ts.maximum(M[i, j], 0.0) + Mx[i], name="Mm")
    out.append(Target("nan_max", ts.build(ts.create_schedule(Mm.op), [M, Mm], name="mut_nanmax"), 1,
                      lambda r, k: [_uniform(r, (3, 7))],
                      lambda x: [np.maximum(x, 0) + x.max(axis=1, keepdims=True)], lambda ins: [(3, 7)],
                      ["float32"]))
    return out


def _outputs(target: Target, inputs: list) -> list:
    return [np.empty(shape, dtype) for shape, dtype in zip(target.output_shapes(inputs), target.output_dtypes)]


def _unaligned(a: np.ndarray) -> np.ndarray:
    raw = np.zeros(a.nbytes + 1, np.uint8)
    view = raw[1:].view(a.dtype).reshape(a.shape)
    view[...] = a
    return view


def _readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


ARRAY_CHANGES: dict[str, Callable[[np.ndarray, random.Random], object]] = {
    "dtype_float64": lambda a, r: a.astype(np.float64 if a.dtype != np.float64 else np.float32),
    "dtype_int32": lambda a, r: a.astype(np.int32 if a.dtype != np.int32 else np.int64),
    "dtype_float16": lambda a, r: a.astype(np.float16),
    "dtype_bool": lambda a, r: a.astype(bool),
    "dtype_complex": lambda a, r: a.astype(np.complex64),
    "dtype_object": lambda a, r: a.astype(object),
    "byteswapped": lambda a, r: a.astype(a.dtype.newbyteorder(">")),
    "shape_plus_one": lambda a, r: np.resize(a, (a.shape[0] + 1,) + a.shape[1:]),
    "shape_minus_one": lambda a, r: a[:-1],
    "extra_dim": lambda a, r: a[None],
    "missing_dim": lambda a, r: a[0],
    "zero_size": lambda a, r: a[:0],
    "transposed": lambda a, r: a.T if a.ndim > 1 else a[::-1],
    "strided": lambda a, r: np.repeat(a, 2, axis=-1)[..., ::2],
    "negative_stride": lambda a, r: np.flip(a),
    "fortran": lambda a, r: np.asfortranarray(a),
    "unaligned": lambda a, r: _unaligned(a),
    "readonly": lambda a, r: _readonly(a),
    "list": lambda a, r: a.tolist(),
    "scalar": lambda a, r: 1.5,
    "none": lambda a, r: None,
    "string": lambda a, r: "array",
    "matrix": lambda a, r: np.asmatrix(a) if a.ndim == 2 else a.view(np.recarray),
    "masked": lambda a, r: np.ma.masked_array(a),
    "memoryview": lambda a, r: memoryview(a),
}

VALID_CHANGES = ("other_sizes", "omit_outputs", "nan_values", "inf_values", "exact")
CALL_CHANGES = ("fewer_args", "more_args", "overlap_input_output", "overlap_two_outputs", "huge_size")
MUTATIONS = VALID_CHANGES + CALL_CHANGES + tuple(ARRAY_CHANGES)

# (target, mutation) pairs whose right answer needs a fix still to come: pair -> issue item
OPEN: dict[tuple[str, str], str] = {
}


def _expectation(new: object, old: np.ndarray, is_output: bool) -> str:
    """What a call with ``new`` in place of the valid ``old`` must do: valid, invalid, or either (an
    unaligned array, an ndarray subclass or another object exporting a matching buffer, such as a
    memoryview, may be accepted, if the result is right)."""
    if isinstance(new, memoryview):
        exported = np.asarray(new)
        same = exported.dtype == old.dtype and exported.shape == old.shape and exported.flags.c_contiguous
        return "either" if same and (not is_output or not new.readonly) else "invalid"
    if not isinstance(new, np.ndarray) or new.dtype != old.dtype or new.shape != old.shape:
        return "invalid"
    if not new.flags.c_contiguous or (is_output and not new.flags.writeable):
        return "invalid"
    if type(new) is not np.ndarray or not new.flags.aligned:
        return "either"
    return "valid"


def _overlapping(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``a`` and ``b`` that share memory (``b`` starts one element into ``a``, or at its start)."""
    base = np.zeros(a.nbytes + b.nbytes + 128, np.uint8)
    start = (-base.ctypes.data) % 64
    a2 = base[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    a2[...] = a
    off = start + (b.itemsize if a.nbytes > b.itemsize else 0)   # inside ``a`` even for one element
    return a2, base[off:off + b.nbytes].view(b.dtype).reshape(b.shape)


def _draw(target: Target, rnd: random.Random, mutation: str) -> tuple[list, str]:
    """The argument list for ``mutation`` and what the call must do: valid | invalid | either | memory."""
    inputs = target.make(rnd, None)
    args = inputs + _outputs(target, inputs)
    n_in = target.n_inputs
    if mutation == "other_sizes":
        inputs = target.make(rnd, rnd.randint(1, 20))
        return inputs + _outputs(target, inputs), "valid"
    if mutation == "omit_outputs":
        return inputs, "valid"
    if mutation in ("nan_values", "inf_values"):
        flat = inputs[0].reshape(-1)
        if flat.dtype.kind == "f":
            for _ in range(rnd.randint(1, 3)):
                flat[rnd.randrange(flat.size)] = np.nan if mutation == "nan_values" else rnd.choice([np.inf, -np.inf])
        return args, "valid"
    if mutation == "fewer_args":
        return args[:rnd.choice([k for k in range(len(args)) if k != n_in])], "invalid"
    if mutation == "more_args":
        return args + [args[rnd.randrange(len(args))].copy()], "invalid"
    if mutation in ("overlap_input_output", "overlap_two_outputs"):
        first = n_in if mutation == "overlap_two_outputs" and len(args) - n_in >= 2 else 0
        args[first], args[-1] = _overlapping(args[first], args[-1])
        return args, "invalid"
    if mutation == "huge_size":
        if target.name == "square_intermediate":
            return target.make(rnd, rnd.choice([200_000, 600_000, 3_000_000])), "memory"
        return args, "valid"
    if mutation in ARRAY_CHANGES:
        position = rnd.randrange(len(args))
        old = args[position]
        args[position] = ARRAY_CHANGES[mutation](old, rnd)
        return args, _expectation(args[position], old, position >= n_in)
    return args, "valid"


def _same(got: list, want: list) -> bool:
    for g, w in zip(got, want):
        w = np.asarray(w).astype(g.dtype)
        if g.shape != w.shape or not np.allclose(g, w, equal_nan=True, **tolerance(w)):
            return False
        if g.dtype.kind == "f" and not np.array_equal(np.isnan(g), np.isnan(w)):
            return False
    return True


def case_mutation(n: int) -> tuple[Target, str, random.Random]:
    rnd = random.Random(n * 104729 + 3)
    target = rnd.choice(targets())
    return target, rnd.choice(MUTATIONS), rnd


def describe_case(n: int) -> dict:
    target, mutation, _ = case_mutation(n)
    return {"target": target.name, "mutation": mutation}


def run_case(n: int, verbose: bool = False) -> dict:
    target, mutation, rnd = case_mutation(n)
    record = {"target": target.name, "mutation": mutation}
    try:
        args, expect = _draw(target, rnd, mutation)
    except Exception as err:  # the mutation does not apply to these arrays: call it exact
        return {**record, "status": "ok", "detail": f"not applicable: {describe(err)}"}
    record["expect"] = expect
    inputs = [np.array(a) if isinstance(a, (np.ndarray, memoryview)) else a for a in args[:target.n_inputs]]
    try:
        result = target.kernel(*args)
    except MemoryError as err:
        named = is_tesched_error(err) and any(b in str(err) for b in ("outer", "buffer"))
        return {**record, "status": "ok" if expect == "memory" and named else "unnamed", "detail": describe(err)}
    except Exception as err:
        if not is_tesched_error(err):
            return {**record, "status": "error", "detail": describe(err)}
        if expect == "valid":
            return {**record, "status": "error", "detail": f"valid call rejected: {describe(err)}"}
        if not any(spec.name in str(err) for spec in target.kernel._specs) and target.kernel.name not in str(err):
            return {**record, "status": "unnamed", "detail": describe(err)}
        return {**record, "status": "rejected", "detail": str(err)[:120]}
    if expect in ("invalid", "memory"):
        return {**record, "status": "wrong", "detail": f"{expect} call accepted silently"}
    got = list(result) if isinstance(result, tuple) else [result] if result is not None else args[target.n_inputs:]
    got = [np.asarray(g) if isinstance(g, memoryview) else g for g in got]
    if not _same(got, target.reference(*inputs)):
        return {**record, "status": "wrong", "detail": "result differs from NumPy"}
    return {**record, "status": "ok"}
