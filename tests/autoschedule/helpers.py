"""Small pipelines the automatic-scheduler tests share, with NumPy references."""
import numpy as np
from hypothesis import strategies as st

import tesched as ts
from tesched.recipes import image_apps


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
    binned = ts.compute(A.shape, lambda y, x: ts.floor(A[y, x] * float(bins)).astype("int32"), name="bin")
    dy, dx = (ts.reduce_axis((0, cell), name) for name in ("dy", "dx"))

    def cell_sum(z, gy, gx):
        y, x = gy * cell + dy, gx * cell + dx
        return ts.sum(A[y, x], axis=[dy, dx], where=binned[y, x] == z)
    grid = ts.compute((bins, g, g), cell_sum, name="grid")

    def reference(a):
        b = np.floor(a * bins).astype(int)
        cells = lambda v: v.reshape(g, cell, g, cell).sum(axis=(1, 3))  # noqa: E731
        return np.stack([cells(a * (b == z)) for z in range(bins)])
    return [A], [grid], reference


def _map(p, k):
    return ts.compute(p.shape, lambda y, x: p[y, x] * 0.5 + 1.0, name=f"m{k}"), lambda b: b * 0.5 + 1.0


def _stencil_y(p, k):
    H, W = (int(d) for d in p.shape)
    return (ts.compute((H - 2, W), lambda y, x: p[y, x] + p[y + 1, x] + p[y + 2, x], name=f"sy{k}"),
            lambda b: b[:-2] + b[1:-1] + b[2:])


def _stencil_x(p, k):
    H, W = (int(d) for d in p.shape)
    return ts.compute((H, W - 2), lambda y, x: p[y, x] - p[y, x + 2], name=f"sx{k}"), lambda b: b[:, :-2] - b[:, 2:]


def _rowsum(p, k):
    H, W = (int(d) for d in p.shape)
    r = ts.reduce_axis((0, W), name=f"r{k}")
    return (ts.compute((H, 4), lambda y, x: ts.sum(p[y, r] * (x + 1.0), axis=r), name=f"rs{k}"),
            lambda b: b.sum(1, keepdims=True) * np.arange(1, 5))


@st.composite
def pipelines(draw, heights=st.integers(3, 12), widths=st.integers(3, 20), lengths=st.integers(1, 3)):
    """A chain of stages (1-3 by default) over a 2-D image (3-12 x 3-20 by default): pointwise maps,
    3-tap stencils, weighted row sums; with its NumPy reference."""
    h, w = draw(heights), draw(widths)
    A = ts.placeholder((h, w), name="A")
    t, steps = A, []
    for k in range(draw(lengths)):
        H, W = (int(d) for d in t.shape)
        options = [_map, _rowsum] + ([_stencil_y] if H > 2 else []) + ([_stencil_x] if W > 2 else [])
        t, step = draw(st.sampled_from(options))(t, k)
        steps.append(step)

    def ref(a):
        for step in steps:
            a = step(a)
        return a
    return A, t, ref


def interpolate_reference(a, levels):
    """NumPy version of :func:`tesched.recipes.pyramid.interpolate` (float64)."""
    def down(p):
        h, w = p.shape
        ch, cw = max(h >> 1, 1), max(w >> 1, 1)
        x = np.arange(cw)
        dx = (p[:, np.maximum(2 * x - 1, 0)] + 2 * p[:, np.minimum(2 * x, w - 1)] + p[:, np.minimum(2 * x + 1, w - 1)]) / 4
        y = np.arange(ch)
        return (dx[np.maximum(2 * y - 1, 0)] + 2 * dx[np.minimum(2 * y, h - 1)] + dx[np.minimum(2 * y + 1, h - 1)]) / 4

    def up(c, shape):
        (ch, cw), (h, w) = c.shape, shape
        x, y = np.arange(w), np.arange(h)
        ux = (c[:, np.minimum(x // 2, cw - 1)] + c[:, np.minimum((x + 1) // 2, cw - 1)]) / 2
        return (ux[np.minimum(y // 2, ch - 1)] + ux[np.minimum((y + 1) // 2, ch - 1)]) / 2

    pyramid = [a]
    for _ in range(1, levels):
        pyramid.append(down(pyramid[-1]))
    out = pyramid[-1]
    for level in reversed(pyramid[:-1]):
        out = level * 0.5 + up(out, level.shape) * 0.5
    return out


def lut_curve(h=24, w=40):
    """:func:`tesched.recipes.image_apps.tone_curve` with its NumPy reference."""
    inputs, out = image_apps.tone_curve(h, w)

    def reference(a):
        table = (np.arange(256, dtype=np.float64) / 255.0) ** (1 / 2.2)
        g = (a.astype(np.float32) * np.float32(0.8) + np.float32(0.1)).astype(np.float32)
        return table[(np.clip(g, 0, 1) * np.float32(255.0) + np.float32(0.5)).astype(np.int32)]
    return inputs, [out], reference


def bilateral_slice(h=32, w=40, cell=8, depth=8):
    """:func:`tesched.recipes.image_apps.bilateral_slice` with its NumPy reference."""
    inputs, out = image_apps.bilateral_slice(h, w, cell, depth)
    gw = w // cell + 1

    def reference(a, g):
        z = np.arange(depth)
        b = g[:, :, np.maximum(z - 1, 0)] + 2 * g + g[:, :, np.minimum(z + 1, depth - 1)]
        x = np.arange(gw)
        b = b[:, np.maximum(x - 1, 0)] + 2 * b + b[:, np.minimum(x + 1, gw - 1)]
        v = np.clip(a.astype(np.float32), 0, 1) * np.float32(depth - 1)
        zi = v.astype(np.int32)
        zf = v - zi
        ys, xs = np.meshgrid(np.arange(h) // cell, np.arange(w) // cell, indexing="ij")
        return b[ys, xs, zi] * (1 - zf) + b[ys, xs, np.minimum(zi + 1, depth - 1)] * zf
    return inputs, [out], reference


def local_laplacian_reference(a, levels, k, alpha=1.0, beta=1.0):
    """NumPy version of :func:`tesched.recipes.local_laplacian.local_laplacian` (float64, the table's
    index from the float32 pixel as the kernel computes it)."""
    top = (k - 1) * 256
    f = (np.arange(2 * top + 1) - top) / 256.0
    remap = alpha * f * np.exp(-f * f / 2)

    def along(p, axis, n, taps):
        out = 0.0
        for weight, index in taps(np.arange(n)):
            out = out + weight * np.take(p, index, axis=axis)
        return out

    def down(p):
        fh, fw = p.shape[-2:]
        ch, cw = max(fh >> 1, 1), max(fw >> 1, 1)

        def taps(n):
            return lambda i: [(w / 8, np.clip(2 * i + d, 0, n - 1)) for w, d in ((1, -1), (3, 0), (3, 1), (1, 2))]
        return along(along(p, -1, cw, taps(fw)), -2, ch, taps(fh))

    def up(p, shape):
        ch, cw = p.shape[-2:]

        def taps(n):
            return lambda i: [(0.25, np.clip(i // 2 - 1 + 2 * (i % 2), 0, n - 1)), (0.75, np.minimum(i // 2, n - 1))]
        return along(along(p, -1, shape[1], taps(cw)), -2, shape[0], taps(ch))

    a32 = a.astype(np.float32)
    idx = np.clip((a32 * np.float32(top)).astype(np.int32), 0, top)
    t = np.arange(k)[:, None, None]
    level = t / (k - 1)
    g = a.astype(np.float64)
    gpyr = [beta * (g - level) + level + remap[idx[None] - 256 * t + top]]
    inpyr = [g]
    for _ in range(1, levels):
        gpyr.append(down(gpyr[-1]))
        inpyr.append(down(inpyr[-1]))
    out = None
    for j in range(levels - 1, -1, -1):
        lap = gpyr[j] if j == levels - 1 else gpyr[j] - up(gpyr[j + 1], gpyr[j].shape[-2:])
        value = inpyr[j] * (k - 1)
        li = np.clip(np.trunc(value).astype(np.int64), 0, k - 2)
        lf = value - li
        ys, xs = np.meshgrid(np.arange(value.shape[0]), np.arange(value.shape[1]), indexing="ij")
        band = (1 - lf) * lap[li, ys, xs] + lf * lap[li + 1, ys, xs]
        out = band if out is None else up(out, band.shape) + band
    return out
