"""Small pipelines the automatic-scheduler tests share, with NumPy references."""
import numpy as np

import tesched as ts


def data(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def blur(h=20, w=24):
    A = ts.placeholder((h + 2, w + 2), name="A")
    bx = ts.compute((h + 2, w), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0, name="bx")
    by = ts.compute((h, w), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3.0, name="by")

    def reference(a):
        bxr = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        return (bxr[:-2] + bxr[1:-1] + bxr[2:]) / 3
    return [A], [by], reference


def matmul_relu(n=64, m=48, k=40):
    A, B = ts.placeholder((n, k), name="A"), ts.placeholder((k, m), name="B")
    r = ts.reduce_axis((0, k), name="r")
    C = ts.compute((n, m), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = ts.compute((n, m), lambda i, j: ts.maximum(C[i, j], 0.0), name="D")
    return [A, B], [D], lambda a, b: np.maximum(a @ b, 0)


def softmax_matmul(s=32, d=16):
    q, k, v = (ts.placeholder((s, d), name=n) for n in "qkv")
    rd = ts.reduce_axis((0, d), name="rd")
    sc = ts.compute((s, s), lambda i, j: ts.sum(q[i, rd] * k[j, rd], axis=rd), name="scores")
    j1 = ts.reduce_axis((0, s), name="j1")
    mx = ts.compute((s,), lambda i: ts.max(sc[i, j1], axis=j1), name="rowmax")
    j2 = ts.reduce_axis((0, s), name="j2")
    sm = ts.compute((s,), lambda i: ts.sum(ts.exp(sc[i, j2] - mx[i]), axis=j2), name="rowsum")
    p = ts.compute((s, s), lambda i, j: ts.exp(sc[i, j] - mx[i]) / sm[i], name="probs")
    j3 = ts.reduce_axis((0, s), name="j3")
    o = ts.compute((s, d), lambda i, c: ts.sum(p[i, j3] * v[j3, c], axis=j3), name="out")

    def reference(qa, ka, va):
        x = qa @ ka.T
        e = np.exp(x - x.max(1, keepdims=True))
        return (e / e.sum(1, keepdims=True)) @ va
    return [q, k, v], [o], reference


def histogram(n=64, bins=8):
    """A histogram as a reduction over the image with a where= mask on the computed bin."""
    img = ts.placeholder((n,), name="img")
    binned = ts.compute((n,), lambda i: ts.floor((img[i] + 1.0) * (bins / 2.0)).astype("int32"), name="bin")
    r = ts.reduce_axis((0, n), name="r")
    hist = ts.compute((bins,), lambda b: ts.sum(ts.const(1.0, "float32"), axis=r, where=binned[r] == b),
                      name="hist")

    def reference(a):
        return np.bincount(np.clip(np.floor((a + 1) * bins / 2).astype(int), 0, bins - 1),
                           minlength=bins).astype(np.float32)
    return [img], [hist], reference


def run(kernel, inputs, outputs, arrays):
    outs = [np.empty([int(d) for d in t.shape], np.float32) for t in outputs]
    kernel(*arrays, *outs)
    return outs


def histogram_grid(n=64, cell=8, bins=4):
    """Per cell of ``cell`` x ``cell`` pixels, the sum of the pixels in each of ``bins`` intensity bins."""
    A = ts.placeholder((n, n), name="A")
    g = n // cell
    binned = ts.compute((n, n), lambda y, x: ts.floor(A[y, x] * float(bins)).astype("int32"), name="bin")
    dy, dx = ts.reduce_axis((0, cell), "dy"), ts.reduce_axis((0, cell), "dx")
    grid = ts.compute((bins, g, g), lambda z, gy, gx: ts.sum(
        A[gy * cell + dy, gx * cell + dx], axis=[dy, dx], where=binned[gy * cell + dy, gx * cell + dx] == z),
        name="grid")

    def reference(a):
        b = np.floor(a * bins).astype(int)
        cells = lambda v: v.reshape(g, cell, g, cell).sum(axis=(1, 3))  # noqa: E731
        return np.stack([cells(a * (b == z)) for z in range(bins)])
    return [A], [grid], reference
