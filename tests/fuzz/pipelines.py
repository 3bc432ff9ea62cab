"""The pipelines the schedule fuzzer draws schedules for, each with its NumPy reference.

Every builder takes a ``random.Random`` (sizes vary between cases) and returns a :class:`Pipeline`: the
input and output tensors, a function computing the outputs with NumPy, the concrete input arrays, and
optionally a dataflow step (``rfactor``/``cache_read``/``cache_write``) applied before loop scheduling.
Sizes stay small so a case compiles and runs in well under a second.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

import tesched as ts


@dataclass
class Pipeline:
    name: str
    inputs: list
    outputs: list
    reference: Callable[..., list]
    arrays: list                       # concrete inputs, in the order of ``inputs``
    dataflow: Callable[[ts.Schedule, random.Random, list], None] | None = None


def _floats(rnd: random.Random, *shape: int, dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(rnd.getrandbits(32)).uniform(-1, 1, shape).astype(dtype)


def _ints(rnd: random.Random, *shape: int, low: int = -20, high: int = 20) -> np.ndarray:
    return np.random.default_rng(rnd.getrandbits(32)).integers(low, high, shape).astype("int32")


def elementwise_chain(rnd: random.Random) -> Pipeline:
    m, n = rnd.randint(2, 9), rnd.randint(2, 17)
    A = ts.placeholder((m, n), name="A")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    C = ts.compute((m, n), lambda i, j: B[i, j] * B[i, j] - A[i, j], name="C")
    D = ts.compute((m, n), lambda i, j: ts.maximum(C[i, j], 0.5) + ts.sqrt(ts.abs(B[i, j])), name="D")

    def reference(a):
        b = a * 2 + 1
        return [np.maximum(b * b - a, 0.5) + np.sqrt(np.abs(b))]

    return Pipeline("elementwise_chain", [A], [D], reference, [_floats(rnd, m, n)])


def matmul_relu(rnd: random.Random) -> Pipeline:
    m, n, k = rnd.randint(2, 12), rnd.randint(2, 12), rnd.randint(2, 12)
    A, B = ts.placeholder((m, k), name="A"), ts.placeholder((k, n), name="B")
    bias = ts.placeholder((n,), name="bias")
    r = ts.reduce_axis((0, k), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = ts.compute((m, n), lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="D")
    return Pipeline("matmul_relu", [A, B, bias], [D], lambda a, b, c: [np.maximum(a @ b + c, 0)],
                    [_floats(rnd, m, k), _floats(rnd, k, n), _floats(rnd, n)])


def stencil_chain(rnd: random.Random) -> Pipeline:
    h, w = rnd.randint(3, 12), rnd.randint(3, 14)
    A = ts.placeholder((h + 2, w + 2), name="A")
    Bx = ts.compute((h + 2, w), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) * (1 / 3), name="blur_x")
    By = ts.compute((h, w), lambda i, j: (Bx[i, j] + Bx[i + 1, j] + Bx[i + 2, j]) * (1 / 3), name="blur_y")

    def reference(a):
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        return [(bx[:-2] + bx[1:-1] + bx[2:]) / 3]

    return Pipeline("stencil_chain", [A], [By], reference, [_floats(rnd, h + 2, w + 2)])


def _padded_conv(x, weight, channels: int, size: int, name: str):
    """3x3 convolution with zero padding 1 (the padding is an if_then_else, as in TVM's pad)."""
    co, ci = weight.shape[0], weight.shape[1]
    pad = ts.compute((channels, size + 2, size + 2), lambda c, h, w: ts.if_then_else(
        ts.all(h >= 1, h <= size, w >= 1, w <= size), x[c, h - 1, w - 1], 0.0), name=f"{name}_pad")
    rc, rh, rw = (ts.reduce_axis((0, ci), name="rc"), ts.reduce_axis((0, 3), name="rh"),
                  ts.reduce_axis((0, 3), name="rw"))
    return ts.compute((co, size, size), lambda o, h, w: ts.sum(
        pad[rc, h + rh, w + rw] * weight[o, rc, rh, rw], axis=[rc, rh, rw]), name=name)


def _conv_reference(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    size = x.shape[1]
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((weight.shape[0], size, size), np.float64)
    for r in range(3):
        for s in range(3):
            out += np.einsum("chw,oc->ohw", padded[:, r:r + size, s:s + size], weight[:, :, r, s])
    return out


def conv_relu_conv(rnd: random.Random) -> Pipeline:
    c, size = rnd.randint(1, 3), rnd.randint(3, 7)
    X = ts.placeholder((c, size, size), name="X")
    W1, W2 = ts.placeholder((c, c, 3, 3), name="W1"), ts.placeholder((c, c, 3, 3), name="W2")
    C1 = _padded_conv(X, W1, c, size, "conv1")
    R = ts.compute((c, size, size), lambda o, h, w: ts.maximum(C1[o, h, w], 0.0), name="relu")
    C2 = _padded_conv(R, W2, c, size, "conv2")

    def reference(x, w1, w2):
        return [_conv_reference(np.maximum(_conv_reference(x, w1), 0), w2)]

    return Pipeline("conv_relu_conv", [X, W1, W2], [C2], reference,
                    [_floats(rnd, c, size, size), _floats(rnd, c, c, 3, 3), _floats(rnd, c, c, 3, 3)])


def softmax_rows(rnd: random.Random) -> Pipeline:
    """Two reductions (max, sum) feeding broadcasts."""
    m, n = rnd.randint(2, 8), rnd.randint(2, 16)
    A = ts.placeholder((m, n), name="A")
    k1, k2 = ts.reduce_axis((0, n), name="k1"), ts.reduce_axis((0, n), name="k2")
    M = ts.compute((m,), lambda i: ts.max(A[i, k1], axis=k1), name="rowmax")
    E = ts.compute((m, n), lambda i, j: ts.exp(A[i, j] - M[i]), name="E")
    S = ts.compute((m,), lambda i: ts.sum(E[i, k2], axis=k2), name="rowsum")
    O = ts.compute((m, n), lambda i, j: E[i, j] / S[i], name="softmax")

    def reference(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return [e / e.sum(axis=1, keepdims=True)]

    return Pipeline("softmax_rows", [A], [O], reference, [_floats(rnd, m, n)])


def symbolic_stencil(rnd: random.Random) -> Pipeline:
    n = ts.var("n")
    cols = rnd.randint(3, 9)
    A = ts.placeholder((n, cols), name="A")
    B = ts.compute((n, cols), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    C = ts.compute((n, cols - 2), lambda i, j: B[i, j] + B[i, j + 1] * 2.0 + B[i, j + 2], name="C")

    def reference(a):
        b = a * 3 - 1
        return [b[:, :-2] + 2 * b[:, 1:-1] + b[:, 2:]]

    return Pipeline("symbolic_stencil", [A], [C], reference, [_floats(rnd, rnd.randint(1, 11), cols)])


def integer_arith(rnd: random.Random) -> Pipeline:
    m, n = rnd.randint(2, 8), rnd.randint(2, 12)
    A = ts.placeholder((m, n), "int32", name="A")
    B = ts.compute((m, n), lambda i, j: (A[i, j] * 3 + 7) // 4, name="B")
    C = ts.compute((m, n), lambda i, j: B[i, j] % 5 - A[i, j] // 3 + ts.maximum(A[i, j], B[i, j]), name="C")
    k = ts.reduce_axis((0, n), name="k")
    D = ts.compute((m,), lambda i: ts.sum(C[i, k].astype("int64") * 3, axis=k), name="D")

    def reference(a):
        b = (a * 3 + 7) // 4
        c = b % 5 - a // 3 + np.maximum(a, b)
        return [(c.astype(np.int64) * 3).sum(axis=1)]

    return Pipeline("integer_arith", [A], [D], reference, [_ints(rnd, m, n)])


def _cache_read_sometimes(s: ts.Schedule, rnd: random.Random, recipe: list, reader: str, scope: str,
                          chance: float) -> None:
    """With probability ``chance``, a ``cache_read`` of input A for the stage called ``reader``."""
    A = next(st for st in s.stages if st.name == "A")
    R = next(st for st in s.stages if st.name == reader)
    if rnd.random() < chance:
        s.cache_read(A.op.output(0), scope, [R.op.output(0)])
        recipe.append(f"s.cache_read(A, {scope!r}, [{reader}])")


def _reduction_dataflow(s: ts.Schedule, rnd: random.Random, recipe: list) -> None:
    """Some mix of cache_read of the inputs, rfactor of a split reduce loop, cache_write of the result."""
    C = next(st for st in s.stages if st.name == "C")
    _cache_read_sometimes(s, rnd, recipe, "C", "shared", 0.4)
    choice = rnd.choice(["none", "rfactor", "split_rfactor", "cache_write", "split_cache_write"])
    k = C.op.reduce_axis[0]
    if choice == "rfactor":
        s.rfactor(C.op.output(0), k)
        recipe.append("s.rfactor(C, k)")
    elif choice == "split_rfactor":
        factor = rnd.randint(1, 5)
        ko, ki = s[C].split(k, factor=factor)
        picked = rnd.choice([ko, ki])
        s.rfactor(C.op.output(0), picked, factor_axis=rnd.randint(0, 1))
        recipe.append(f"ko, ki = s[C].split(k, factor={factor}); s.rfactor(C, {picked.name})")
    elif choice == "cache_write":
        s.cache_write(C.op.output(0), "local")
        recipe.append("s.cache_write(C, 'local')")
    elif choice == "split_cache_write":    # the split moves to the cache (TVM's cache_write after split)
        factor = rnd.randint(1, 5)
        axis = rnd.choice([k, C.op.axis[0]])
        s[C].split(axis, factor=factor)
        s.cache_write(C.op.output(0), "local")
        recipe.append(f"s[C].split({axis.name}, factor={factor}); s.cache_write(C, 'local')")


def reduction_dataflow(rnd: random.Random) -> Pipeline:
    m, n = rnd.randint(2, 9), rnd.randint(2, 15)
    A = ts.placeholder((m, n), name="A")
    W = ts.placeholder((n,), name="W")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((m,), lambda i: ts.sum(A[i, k] * W[k], axis=k), name="C")
    D = ts.compute((m,), lambda i: C[i] * 0.5 + 1.0, name="D")
    return Pipeline("reduction_dataflow", [A, W], [D], lambda a, w: [(a @ w) * 0.5 + 1],
                    [_floats(rnd, m, n), _floats(rnd, n)], dataflow=_reduction_dataflow)


def offset_window(rnd: random.Random) -> Pipeline:
    """Reduce domains that do not start at 0 (Halide RDoms), feeding an elementwise stage."""
    n, lo = rnd.randint(2, 10), rnd.randint(1, 3)
    hi = lo + rnd.randint(1, 5)
    A = ts.placeholder((n + hi,), name="A")
    k = ts.reduce_axis((lo, hi), name="k")
    q = ts.reduce_axis((lo, hi), name="q")
    S = ts.compute((n,), lambda i: ts.sum(A[i + k], axis=k), name="S")
    M = ts.compute((n,), lambda i: ts.max(A[i + q], axis=q), name="M")
    O = ts.compute((n,), lambda i: S[i] - M[i], name="O")

    def reference(a):
        windows = np.stack([a[i + lo:i + hi] for i in range(n)])
        return [windows.sum(axis=1) - windows.max(axis=1)]

    return Pipeline("offset_window", [A], [O], reference, [_floats(rnd, n + hi)])


def shared_producer(rnd: random.Random) -> Pipeline:
    """One producer with two readers of different shapes (a row broadcast and a column sum)."""
    m, n = rnd.randint(2, 7), rnd.randint(2, 7)
    A = ts.placeholder((m, n), name="A")
    E = ts.compute((m, n), lambda i, j: A[i, j] * 2.0, name="E")
    S = ts.compute((m,), lambda i: E[i, 0] + E[i, n - 1], name="S")
    O = ts.compute((m, n), lambda i, j: E[i, j] + S[i], name="O")

    def reference(a):
        e = a * 2
        return [e + (e[:, 0] + e[:, -1])[:, None]]

    return Pipeline("shared_producer", [A], [O], reference, [_floats(rnd, m, n)])


def boundary_blur(rnd: random.Random) -> Pipeline:
    """A separable blur of an image read through a random Halide-style boundary condition."""
    h, w = rnd.randint(2, 10), rnd.randint(2, 12)
    kind = rnd.choice(["constant_exterior", "repeat_edge", "mirror_interior", "repeat_image", "mirror_image"])
    A = ts.placeholder((h, w), name="A")
    P = ts.boundary.constant_exterior(A, 0.5) if kind == "constant_exterior" else getattr(ts.boundary, kind)(A)
    Bx = ts.compute((h, w), lambda i, j: P[i, j - 1] + P[i, j] * 2.0 + P[i, j + 1], name="blur_x")
    Q = ts.boundary.repeat_edge(Bx)
    By = ts.compute((h, w), lambda i, j: Q[i - 1, j] + Q[i, j] + Q[i + 1, j], name="blur_y")
    pad = dict(mode="constant", constant_values=0.5) if kind == "constant_exterior" else \
        dict(mode={"repeat_edge": "edge", "mirror_interior": "reflect", "repeat_image": "wrap",
                   "mirror_image": "symmetric"}[kind])

    def reference(a):
        p = np.pad(a, ((0, 0), (1, 1)), **pad)
        bx = np.pad(p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:], ((1, 1), (0, 0)), mode="edge")
        return [bx[:-2] + bx[1:-1] + bx[2:]]

    return Pipeline(f"boundary_blur_{kind}", [A], [By], reference, [_floats(rnd, h, w)])


def gather(rnd: random.Random) -> Pipeline:
    """Reads at data-dependent indices of an input and of a computed stage (any schedule level)."""
    m, n, c = rnd.randint(1, 12), rnd.randint(1, 14), rnd.randint(1, 4)
    A = ts.placeholder((m, c), name="A")
    I = ts.placeholder((n,), "int32", name="I")
    P = ts.compute((m, c), lambda i, j: A[i, j] * 2.0 + 1.0, name="P")
    G = ts.compute((n, c), lambda i, j: P[I[i], j] - A[I[i], c - 1 - j], name="G")

    def reference(a, idx):
        return [(a * 2 + 1)[idx] - a[idx][:, ::-1]]

    return Pipeline("gather", [A, I], [G], reference, [_floats(rnd, m, c), _ints(rnd, n, low=0, high=m)])


def _histogram_dataflow(s: ts.Schedule, rnd: random.Random, recipe: list) -> None:
    """Sometimes partial histograms: a split loop of the scatter rfactored (its rows then run in parallel)."""
    hist = next(st for st in s.stages if st.name == "hist")
    if rnd.random() < 0.5:
        return
    ry = hist.op.reduce_axis[0]
    factor = rnd.randint(1, 4)
    outer, inner = hist.split(ry, factor=factor)
    picked = rnd.choice([outer, inner, hist.op.reduce_axis[1]])
    s.rfactor(hist.op.output(0), picked)
    recipe.append(f"s[hist].split(ry, factor={factor}); s.rfactor(hist, {picked.name})")


def histogram(rnd: random.Random) -> Pipeline:
    """A weighted histogram (a scatter at data-dependent bins) read by an elementwise stage."""
    h, w, bins = rnd.randint(1, 9), rnd.randint(1, 11), rnd.randint(1, 8)
    img = ts.placeholder((h, w), "int32", name="img")
    W = ts.placeholder((h, w), name="W")
    ry, rx = ts.reduce_axis((0, h), name="ry"), ts.reduce_axis((0, w), name="rx")
    hist = ts.scatter_add((bins,), img[ry, rx], W[ry, rx] * 2.0, [ry, rx], name="hist")
    out = ts.compute((bins,), lambda i: hist[i] + 1.0, name="out")

    def reference(image, weight):
        counts = np.zeros(bins, "float32")
        np.add.at(counts, image.ravel(), 2 * weight.ravel())
        return [counts + 1]

    return Pipeline("histogram", [img, W], [out], reference, [_ints(rnd, h, w, low=0, high=bins), _floats(rnd, h, w)],
                    _histogram_dataflow)


def triangular(rnd: random.Random) -> Pipeline:
    """Reduce bounds that use the compute's axis: a cumulative sum (``reduce_axis((0, i + 1))``), a
    lower-triangular matrix-vector product with ``init=``, and a suffix maximum (``reduce_axis((i, n))``)."""
    n = rnd.randint(2, 13)
    A = ts.placeholder((n,), name="A")
    L = ts.placeholder((n, n), name="L")

    def cumsum(i):
        k = ts.reduce_axis((0, i + 1), name="k")
        return ts.sum(A[k], axis=k)

    def trmv(i):
        j = ts.reduce_axis((0, i + 1), name="j")
        return ts.sum(L[i, j] * A[j], axis=j, init=A[i])

    def suffix_max(i):
        q = ts.reduce_axis((i, n), name="q")
        return ts.max(A[q], axis=q)

    C = ts.compute((n,), cumsum, name="C")
    Y = ts.compute((n,), trmv, name="Y")
    M = ts.compute((n,), suffix_max, name="M")
    O = ts.compute((n,), lambda i: C[i] * 0.5 + Y[i] - M[i], name="O")

    def reference(a, lower):
        return [np.cumsum(a) * 0.5 + (a + np.tril(lower) @ a) - np.maximum.accumulate(a[::-1])[::-1]]

    return Pipeline("triangular", [A, L], [O], reference, [_floats(rnd, n), _floats(rnd, n, n)])


def _argmax_dataflow(s: ts.Schedule, rnd: random.Random, recipe: list) -> None:
    """Sometimes an rfactor of the tuple reduction over a split of its reduce loop."""
    T = next(st for st in s.stages if st.name == "T")
    k = T.op.reduce_axis[0]
    extent = int(k.dom.extent)
    if rnd.random() < 0.5 and extent >= 2:
        factor = rnd.randint(1, extent)
        ko, ki = T.split(k, factor=factor)
        picked = rnd.choice([ko, ki])
        partials = s.rfactor(T.op.output(0), picked)     # a tuple reduction: one partial per component
        assert isinstance(partials, list) and [p.value_index for p in partials] == [0, 1]
        recipe.append(f"ko, ki = s[T].split(k, factor={factor}); T_rf, T_rf_value = s.rfactor(T, {picked.name})")


def argmax_bits(rnd: random.Random) -> Pipeline:
    """A tuple reduction (``ts.argmax``, two outputs of one stage) and a multi-output
    compute of integer bit operations, read by one consumer. Rows up to 40 long: a vectorized reduce
    loop gets vectors of partial results (a full vector of float32 is up to 16 lanes)."""
    m, n = rnd.randint(2, 8), rnd.randint(2, 40)
    V = ts.placeholder((m, n), name="V")
    X = ts.placeholder((m, n), "int32", name="X")

    k = ts.reduce_axis((0, n), name="k")
    T0, T1 = ts.compute((m,), lambda i: ts.argmax(V[i, k], axis=k), name="T")
    B0, B1 = ts.compute((m, n), lambda i, j: ((X[i, j] & 12) ^ (X[i, j] >> 1), ~X[i, j] << 2), name="B")
    O = ts.compute((m, n), lambda i, j: (B0[i, j] | B1[i, j]).astype("float32") + T1[i] * T0[i].astype("float32"),
                   name="O")

    def reference(v, x):
        bits = ((x & 12) ^ (x >> 1)) | (~x << 2)
        return [bits.astype("float32") + (v.max(axis=1) * np.argmax(v, axis=1))[:, None]]

    return Pipeline("argmax_bits", [V, X], [O], reference, [_floats(rnd, m, n), _ints(rnd, m, n, low=-1000, high=1000)],
                    dataflow=_argmax_dataflow)


def packed_matmul(rnd: random.Random) -> Pipeline:
    """TVM's array packing: ``packedB[j // bn, k, j % bn]`` (index simplification with the loops' ranges)."""
    bn = rnd.choice([2, 3, 4, 8])
    m, k, n = rnd.randint(2, 9), rnd.randint(2, 9), bn * rnd.randint(1, 4)
    A, B = ts.placeholder((m, k), name="A"), ts.placeholder((k, n), name="B")
    P = ts.compute((n // bn, k, bn), lambda x, y, z: B[y, x * bn + z], name="P")
    r = ts.reduce_axis((0, k), name="k")
    C = ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * P[j // bn, r, j % bn], axis=r), name="C")
    return Pipeline("packed_matmul", [A, B], [C], lambda a, b: [a @ b], [_floats(rnd, m, k), _floats(rnd, k, n)])


def _masked_dataflow(s: ts.Schedule, rnd: random.Random, recipe: list) -> None:
    """Sometimes a copy of A read by B (a local buffer when the schedule computes it inside B's loops)."""
    _cache_read_sometimes(s, rnd, recipe, "B", "local", 0.5)


def masked_select(rnd: random.Random) -> Pipeline:
    """A shifted read of a producer under a condition on data and on the column: the condition cannot
    split a vectorized loop, so its reads are masked loads, of a local buffer wherever the producer (or
    the copy of A) is computed inside the consumer's loops."""
    m, n = rnd.randint(2, 9), rnd.randint(2, 40)
    A, C = ts.placeholder((m, n), name="A"), ts.placeholder((m, n), name="C")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    D = ts.compute((m, n), lambda i, j: ts.if_then_else((j >= 1) & (C[i, j] > 0.0), B[i, j - 1], -1.0), name="D")

    def reference(a, c):
        shifted = np.concatenate([np.zeros((m, 1), a.dtype), a[:, :-1] * 2 + 1], axis=1)
        return [np.where((np.arange(n) >= 1) & (c > 0), shifted, -1).astype(np.float32)]

    return Pipeline("masked_select", [A, C], [D], reference, [_floats(rnd, m, n), _floats(rnd, m, n)],
                    dataflow=_masked_dataflow)


PIPELINES: list[Callable[[random.Random], Pipeline]] = [
    elementwise_chain, matmul_relu, stencil_chain, conv_relu_conv, softmax_rows, symbolic_stencil,
    integer_arith, reduction_dataflow, offset_window, shared_producer, boundary_blur, triangular, argmax_bits,
    packed_matmul, gather, histogram, masked_select,
]
