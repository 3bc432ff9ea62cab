"""The ten pipelines of ``benchmarks/autoschedule.py``, each declared twice: with tesched's ``compute`` (as a
user would write it, no schedule) and with Halide's ``Func`` (the same definition, for Halide's
autoschedulers). Halide indexes innermost-first, so ``f[x, y]`` there is ``f[y, x]`` here; every Halide
input is read through ``BoundaryConditions.constant_exterior`` (Adams2019 schedules may read past an
input's extent otherwise), which does not change the result on the region computed.

Written with what tesched has today: padding is an ``if_then_else`` stage, the histogram a reduction over
pixels with a ``where=`` mask on a computed bin (no scatter).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched.recipes import conv_chain


@dataclass
class Pipeline:
    name: str
    inputs: list            # tesched placeholders
    outputs: list           # tesched output tensors
    arrays: list            # NumPy inputs
    halide: Callable | None  # hl module -> (list of output Funcs, list of (ImageParam, array)); None: none
    hand: Callable | None = None       # a hand-written or library schedule
    hand_label: str = "default"
    tolerance: float = 1e-3
    notes: list[str] = field(default_factory=list)


def _rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


def _inputs(hl, named):
    """ImageParams for ``named`` [(name, array)], with estimates, and their zero-exterior wrappers."""
    params, wrapped = [], []
    for name, a in named:
        p = hl.ImageParam(hl.Float(32), a.ndim, name)
        p.set_estimates([(0, d) for d in reversed(a.shape)])
        params.append((p, a))
        wrapped.append(hl.BoundaryConditions.constant_exterior(p, 0.0))
    return params, wrapped


def _estimate(f, shape):
    f.set_estimates([(0, int(d)) for d in reversed(shape)])
    return f


def blur(n=1536):
    rng = np.random.default_rng(0)
    A = ts.placeholder((n + 2, n + 2), name="A")
    bx = ts.compute((n + 2, n), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0, name="blur_x")
    by = ts.compute((n, n), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3.0, name="blur_y")
    arrays = [_rand(rng, n + 2, n + 2)]

    def halide(hl):
        params, (a,) = _inputs(hl, [("A", arrays[0])])
        x, y = hl.Var("x"), hl.Var("y")
        fx, fy = hl.Func("blur_x"), hl.Func("blur_y")
        fx[x, y] = (a[x, y] + a[x + 1, y] + a[x + 2, y]) / 3.0
        fy[x, y] = (fx[x, y] + fx[x, y + 1] + fx[x, y + 2]) / 3.0
        return [_estimate(fy, (n, n))], params

    def hand():  # Halide's classic schedule: bands of 32 rows, blur_x per band, vectorized rows
        s = ts.create_schedule(by.op)
        yo, yi = s[by].split(by.op.axis[0], 32)
        s[by].parallel(yo)
        s[by].vectorize(by.op.axis[1])
        s[bx].compute_at(s[by], yo)
        s[bx].vectorize(bx.op.axis[1])
        return s
    return Pipeline("3x3 blur, two passes 1536^2", [A], [by], arrays, halide, hand, "hand")


W5 = (1.0, 4.0, 6.0, 4.0, 1.0)


def unsharp(n=1536):
    rng = np.random.default_rng(1)
    A = ts.placeholder((n + 4, n + 4), name="A")
    bx = ts.compute((n + 4, n), lambda y, x: sum(W5[k] / 16 * A[y, x + k] for k in range(5)), name="blur_x")
    by = ts.compute((n, n), lambda y, x: sum(W5[k] / 16 * bx[y + k, x] for k in range(5)), name="blur_y")
    out = ts.compute((n, n), lambda y, x: A[y + 2, x + 2] + 1.5 * (A[y + 2, x + 2] - by[y, x]), name="sharpen")
    arrays = [_rand(rng, n + 4, n + 4)]

    def halide(hl):
        params, (a,) = _inputs(hl, [("A", arrays[0])])
        x, y = hl.Var("x"), hl.Var("y")
        fx, fy, fo = hl.Func("blur_x"), hl.Func("blur_y"), hl.Func("sharpen")
        fx[x, y] = sum(W5[k] / 16 * a[x + k, y] for k in range(5))
        fy[x, y] = sum(W5[k] / 16 * fx[x, y + k] for k in range(5))
        fo[x, y] = a[x + 2, y + 2] + 1.5 * (a[x + 2, y + 2] - fy[x, y])
        return [_estimate(fo, (n, n))], params
    return Pipeline("unsharp mask 1536^2", [A], [out], arrays, halide)


def _product(a, b, name):
    return ts.compute(a.shape, lambda y, x: a[y, x] * b[y, x], name=name)


def _box3(t, name):
    n = int(t.shape[0]) - 2
    return ts.compute((n, n), lambda y, x: sum(t[y + dy, x + dx] for dy in range(3) for dx in range(3)), name=name)


def harris(n=1536):
    rng = np.random.default_rng(2)
    A = ts.placeholder((n + 4, n + 4), name="A")
    m = n + 2
    ix = ts.compute((m, m), lambda y, x: (A[y, x + 2] - A[y, x]) + 2.0 * (A[y + 1, x + 2] - A[y + 1, x])
                    + (A[y + 2, x + 2] - A[y + 2, x]), name="Ix")
    iy = ts.compute((m, m), lambda y, x: (A[y + 2, x] - A[y, x]) + 2.0 * (A[y + 2, x + 1] - A[y, x + 1])
                    + (A[y + 2, x + 2] - A[y, x + 2]), name="Iy")
    sxx, syy, sxy = (_box3(_product(a, b, f"I{k}"), f"S{k}") for k, a, b in
                     (("xx", ix, ix), ("yy", iy, iy), ("xy", ix, iy)))
    out = ts.compute((n, n), lambda y, x: sxx[y, x] * syy[y, x] - sxy[y, x] * sxy[y, x]
                     - 0.04 * (sxx[y, x] + syy[y, x]) * (sxx[y, x] + syy[y, x]), name="harris")
    arrays = [_rand(rng, n + 4, n + 4, low=0.0)]

    def halide(hl):
        params, (a,) = _inputs(hl, [("A", arrays[0])])
        x, y = hl.Var("x"), hl.Var("y")
        fix, fiy, fo = hl.Func("Ix"), hl.Func("Iy"), hl.Func("harris")
        fix[x, y] = (a[x + 2, y] - a[x, y]) + 2.0 * (a[x + 2, y + 1] - a[x, y + 1]) + (a[x + 2, y + 2] - a[x, y + 2])
        fiy[x, y] = (a[x, y + 2] - a[x, y]) + 2.0 * (a[x + 1, y + 2] - a[x + 1, y]) + (a[x + 2, y + 2] - a[x + 2, y])
        fs = {}
        for k, (u, v) in {"xx": (fix, fix), "yy": (fiy, fiy), "xy": (fix, fiy)}.items():
            prod, s = hl.Func(f"I{k}"), hl.Func(f"S{k}")
            prod[x, y] = u[x, y] * v[x, y]
            s[x, y] = sum(prod[x + dx, y + dy] for dy in range(3) for dx in range(3))
            fs[k] = s
        sx, sy, sc = fs["xx"], fs["yy"], fs["xy"]
        fo[x, y] = sx[x, y] * sy[x, y] - sc[x, y] * sc[x, y] - 0.04 * (sx[x, y] + sy[x, y]) * (sx[x, y] + sy[x, y])
        return [_estimate(fo, (n, n))], params
    return Pipeline("Harris corners 1536^2", [A], [out], arrays, halide)


def histogram_grid(n=2048, cell=8, bins=8):
    rng = np.random.default_rng(3)
    A = ts.placeholder((n, n), name="A")
    g = n // cell
    binned = ts.compute((n, n), lambda y, x: ts.floor(A[y, x] * float(bins)).astype("int32"), name="bin")
    dy, dx = ts.reduce_axis((0, cell), "dy"), ts.reduce_axis((0, cell), "dx")
    grid = ts.compute((bins, g, g), lambda z, gy, gx: ts.sum(
        A[gy * cell + dy, gx * cell + dx], axis=[dy, dx], where=binned[gy * cell + dy, gx * cell + dx] == z),
        name="grid")
    bz = ts.compute((bins - 2, g, g), lambda z, gy, gx: grid[z, gy, gx] + 2.0 * grid[z + 1, gy, gx]
                    + grid[z + 2, gy, gx], name="blur_z")
    bxy = ts.compute((bins - 2, g - 2, g - 2), lambda z, gy, gx: sum(
        bz[z, gy + a, gx + b] for a in range(3) for b in range(3)) / 9.0, name="blur_xy")
    arrays = [_rand(rng, n, n, low=0.0, high=0.999)]

    def halide(hl):
        params, (a,) = _inputs(hl, [("A", arrays[0])])
        x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
        r = hl.RDom([(0, cell), (0, cell)])
        fb, fg, fz, fo = hl.Func("bin"), hl.Func("grid"), hl.Func("blur_z"), hl.Func("blur_xy")
        fb[x, y] = hl.cast(hl.Int(32), hl.floor(a[x, y] * float(bins)))
        px, py = x * cell + r.x, y * cell + r.y
        fg[x, y, z] = hl.sum(hl.select(fb[px, py] == z, a[px, py], 0.0))
        fz[x, y, z] = fg[x, y, z] + 2.0 * fg[x, y, z + 1] + fg[x, y, z + 2]
        fo[x, y, z] = sum(fz[x + b, y + c, z] for c in range(3) for b in range(3)) / 9.0
        return [_estimate(fo, (bins - 2, g - 2, g - 2))], params
    return Pipeline(f"histogram grid {n}^2, cells {cell}, {bins} bins", [A], [bxy], arrays, halide)


def _bn_params(rng, k):
    return [rng.uniform(0.5, 1.5, k).astype(np.float32), _rand(rng, k), _rand(rng, k) * 0.1,
            rng.uniform(0.5, 1.5, k).astype(np.float32)]


def _conv_bn_relu(name, channels, size, out_channels, kernel, depthwise, seed):
    rng = np.random.default_rng(seed)
    x = ts.placeholder((1, channels, size, size), name="x")
    w = ts.placeholder((out_channels, 1 if depthwise else channels, kernel, kernel), name="w")
    stats = [ts.placeholder((out_channels,), name=n) for n in ("gamma", "beta", "mean", "var")]
    conv = nn.depthwise_conv2d(x, w, padding=kernel // 2) if depthwise else nn.conv2d(x, w, padding=kernel // 2)
    out = nn.relu(nn.batch_norm(conv, *stats))
    arrays = [_rand(rng, 1, channels, size, size),
              _rand(rng, out_channels, 1 if depthwise else channels, kernel, kernel)
              / np.float32(np.sqrt(kernel * kernel * (1 if depthwise else channels)))] + _bn_params(rng, out_channels)

    def halide(hl):
        params, (xi, wi, gamma, beta, mean, var) = _inputs(
            hl, list(zip(["x", "w", "gamma", "beta", "mean", "var"], arrays)))
        px, py, k, n = hl.Var("x"), hl.Var("y"), hl.Var("k"), hl.Var("n")
        fc, fo = hl.Func("conv"), hl.Func("out")
        p = kernel // 2
        if depthwise:
            r = hl.RDom([(0, kernel), (0, kernel)])
            fc[px, py, k, n] = hl.sum(xi[px + r.x - p, py + r.y - p, k, n] * wi[r.x, r.y, 0, k])
        else:
            r = hl.RDom([(0, kernel), (0, kernel), (0, channels)])
            fc[px, py, k, n] = hl.sum(xi[px + r.x - p, py + r.y - p, r.z, n] * wi[r.x, r.y, r.z, k])
        bn = (fc[px, py, k, n] - mean[k]) / hl.sqrt(var[k] + 1e-5) * gamma[k] + beta[k]
        fo[px, py, k, n] = hl.max(bn, 0.0)
        return [_estimate(fo, (1, out_channels, size, size))], params
    return Pipeline(name, [x, w] + stats, [out], arrays, halide, lambda: nn.default_schedule(out), "default")


def conv1x1():
    return _conv_bn_relu("conv1x1+bn+relu 128x28x28 -> 256", 128, 28, 256, 1, False, 4)


def depthwise():
    return _conv_bn_relu("depthwise 3x3+bn+relu 512x14x14", 512, 14, 512, 3, True, 5)


def conv_conv(channels=64, size=56):
    rng = np.random.default_rng(6)
    chain = conv_chain.declare(channels, size)
    arrays = [_rand(rng, 1, channels, size, size), _rand(rng, channels, channels, 3, 3) / np.float32(24),
              _rand(rng, channels, channels, 3, 3) / np.float32(24)]

    def halide(hl):
        params, (xi, w1, w2) = _inputs(hl, list(zip(["x", "w1", "w2"], arrays)))
        x, y, k, n = hl.Var("x"), hl.Var("y"), hl.Var("k"), hl.Var("n")
        r = hl.RDom([(0, 3), (0, 3), (0, channels)])
        c1, relu, c2 = hl.Func("conv1"), hl.Func("relu"), hl.Func("conv2")
        c1[x, y, k, n] = hl.sum(xi[x + r.x - 1, y + r.y - 1, r.z, n] * w1[r.x, r.y, r.z, k])
        relu[x, y, k, n] = hl.max(c1[x, y, k, n], 0.0)
        padded = hl.BoundaryConditions.constant_exterior(relu, 0.0, [(0, size), (0, size), (0, channels), (0, 1)])
        c2[x, y, k, n] = hl.sum(padded[x + r.x - 1, y + r.y - 1, r.z, n] * w2[r.x, r.y, r.z, k])
        return [_estimate(c2, (1, channels, size, size))], params
    return Pipeline(f"conv3x3->relu->conv3x3 {channels}x{size}x{size}", [chain.x, chain.w1, chain.w2],
                    [chain.conv2], arrays, halide, lambda: conv_chain.fused(chain), "hand (fused recipe)")


def matmul_relu(n=1024):
    rng = np.random.default_rng(7)
    a, b = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    out = nn.relu(nn.matmul(a, b))
    arrays = [_rand(rng, n, n), _rand(rng, n, n)]

    def halide(hl):
        params, (fa, fb) = _inputs(hl, [("A", arrays[0]), ("B", arrays[1])])
        j, i = hl.Var("j"), hl.Var("i")
        r = hl.RDom([(0, n)])
        mm, fo = hl.Func("matmul"), hl.Func("relu")
        mm[j, i] = hl.sum(fa[r.x, i] * fb[j, r.x])
        fo[j, i] = hl.max(mm[j, i], 0.0)
        return [_estimate(fo, (n, n))], params
    return Pipeline(f"matmul+relu {n}", [a, b], [out], arrays, halide, lambda: nn.default_schedule(out), "default")


def lstm(hidden=128):
    rng = np.random.default_rng(8)
    x, h, c = (ts.placeholder((1, hidden), name=n) for n in "xhc")
    wi, wh = (ts.placeholder((4 * hidden, hidden), name=n) for n in ("w_ih", "w_hh"))
    bias = ts.placeholder((4 * hidden,), name="b")
    h2, c2 = nn.lstm_cell(x, h, c, wi, wh, bias)
    arrays = [_rand(rng, 1, hidden), _rand(rng, 1, hidden), _rand(rng, 1, hidden),
              _rand(rng, 4 * hidden, hidden) / np.float32(np.sqrt(hidden)), _rand(rng, 4 * hidden, hidden) / np.float32(np.sqrt(hidden)),
              _rand(rng, 4 * hidden)]

    def halide(hl):
        params, (fx, fh, fc, fwi, fwh, fb) = _inputs(hl, list(zip(["x", "h", "c", "w_ih", "w_hh", "b"], arrays)))
        j, b_ = hl.Var("j"), hl.Var("b")
        r = hl.RDom([(0, hidden)])
        gates, c_next, h_next = hl.Func("gates"), hl.Func("c_next"), hl.Func("h_next")
        gates[j, b_] = hl.sum(fx[r.x, b_] * fwi[r.x, j] + fh[r.x, b_] * fwh[r.x, j]) + fb[j]

        def sig(v):
            return 1.0 / (1.0 + hl.exp(-v))
        gi, gf, gg, go = (gates[j + q * hidden, b_] for q in range(4))
        c_next[j, b_] = sig(gf) * fc[j, b_] + sig(gi) * hl.tanh(gg)
        h_next[j, b_] = sig(go) * hl.tanh(c_next[j, b_])
        return [_estimate(h_next, (1, hidden)), _estimate(c_next, (1, hidden))], params
    return Pipeline(f"LSTM cell, hidden {hidden}", [x, h, c, wi, wh, bias], [h2, c2], arrays, halide,
                    lambda: nn.default_schedule([h2, c2]), "default", tolerance=2e-3)


def attention(seq=512, dim=64):
    rng = np.random.default_rng(9)
    q, k, v = (ts.placeholder((seq, dim), name=n) for n in "qkv")
    rd = ts.reduce_axis((0, dim), "d")
    scores = ts.compute((seq, seq), lambda i, j: ts.sum(q[i, rd] * k[j, rd] * 0.125, axis=rd), name="scores")
    j1, j2, j3 = (ts.reduce_axis((0, seq), n) for n in ("j1", "j2", "j3"))
    mx = ts.compute((seq,), lambda i: ts.max(scores[i, j1], axis=j1), name="rowmax")
    total = ts.compute((seq,), lambda i: ts.sum(ts.exp(scores[i, j2] - mx[i]), axis=j2), name="rowsum")
    probs = ts.compute((seq, seq), lambda i, j: ts.exp(scores[i, j] - mx[i]) / total[i], name="probs")
    out = ts.compute((seq, dim), lambda i, c: ts.sum(probs[i, j3] * v[j3, c], axis=j3), name="out")
    arrays = [_rand(rng, seq, dim), _rand(rng, seq, dim), _rand(rng, seq, dim)]

    def halide(hl):
        params, (fq, fk, fv) = _inputs(hl, list(zip("qkv", arrays)))
        i, j, c = hl.Var("i"), hl.Var("j"), hl.Var("c")
        rdim, rs = hl.RDom([(0, dim)]), hl.RDom([(0, seq)])
        fs, fm, ft, fp, fo = (hl.Func(n) for n in ("scores", "rowmax", "rowsum", "probs", "out"))
        fs[j, i] = hl.sum(fq[rdim.x, i] * fk[rdim.x, j] * 0.125)
        fm[i] = hl.maximum(fs[rs.x, i])
        ft[i] = hl.sum(hl.exp(fs[rs.x, i] - fm[i]))
        fp[j, i] = hl.exp(fs[j, i] - fm[i]) / ft[i]
        fo[c, i] = hl.sum(fp[rs.x, i] * fv[c, rs.x])
        return [_estimate(fo, (seq, dim))], params
    return Pipeline(f"softmax+matmul (attention scores) {seq}x{dim}", [q, k, v], [out], arrays, halide,
                    lambda: nn.default_schedule(out), "default")


def stencil_chain(stages=20, n=512):
    """A chain of ``stages`` stages (stencils along y and x, exponentials, small reductions) for the time
    ``auto_schedule`` takes to decide; it is not timed."""
    t = ts.placeholder((n, n), name="A")
    for k in range(stages):
        t = (_chain_stencil_y, _chain_stencil_x, _chain_exp, _chain_sum3)[k % 4](t, k)
    return t


def _chain_stencil_y(p, k):
    h, w = (int(d) for d in p.shape)
    return ts.compute((h - 2, w), lambda y, x: p[y, x] + p[y + 1, x] + p[y + 2, x], name=f"sy{k}")


def _chain_stencil_x(p, k):
    h, w = (int(d) for d in p.shape)
    return ts.compute((h, w - 2), lambda y, x: p[y, x] * 0.5 + p[y, x + 2], name=f"sx{k}")


def _chain_exp(p, k):
    return ts.compute(p.shape, lambda y, x: ts.exp(p[y, x] * 0.01), name=f"e{k}")


def _chain_sum3(p, k):
    h, w = (int(d) for d in p.shape)
    r = ts.reduce_axis((0, 3), f"r{k}")
    return ts.compute((h - 2, w), lambda y, x: ts.sum(p[y + r, x], axis=r), name=f"sum{k}")


PIPELINES = {"blur": blur, "unsharp": unsharp, "harris": harris, "histogram": histogram_grid,
             "conv1x1": conv1x1, "depthwise": depthwise, "convconv": conv_conv, "matmul": matmul_relu,
             "lstm": lstm, "attention": attention}
