"""Tests of tesched.poly.tree: loops with one iteration per enclosing iteration (a split by factor=1 or
nparts=1) get no band, so stages computed at them are allocated, produced and read in one place."""
import textwrap

import islpy as isl
import numpy as np
import pytest

import tesched as ts
from tesched.poly import tree


@pytest.mark.parametrize("e_at, s_at", [("ji", "io"), ("ji", "ii"), ("jo", "io"), ("io", "io")])
def test_compute_at_loops_of_extent_one(e_at, s_at, rand):
    A = ts.placeholder((3, 2), name="A")
    E = ts.compute((3, 2), lambda i, j: A[i, j] * 2.0, name="E")
    S = ts.compute((3,), lambda i: A[i, 0] + A[i, 1], name="S")
    O = ts.compute((3, 2), lambda i, j: E[i, j] + S[i], name="O")
    s = ts.create_schedule(O.op)
    i, j = O.op.axis
    s[O].reorder(j, i)
    loops = dict(zip(("jo", "ji"), s[O].split(j, factor=1)))
    loops.update(zip(("io", "ii"), s[O].split(i, nparts=1)))
    s[E].compute_at(s[O], loops[e_at])
    s[S].compute_at(s[O], loops[s_at])
    f = ts.build(s, [A, O], name=f"extent_one_{e_at}_{s_at}")
    assert str(f.lowered).count("allocate S") == 1
    a = rand((3, 2))
    np.testing.assert_allclose(f(a), 2 * a + a.sum(axis=1, keepdims=True), rtol=1e-6)


# Schedules of the fuzz campaign (tests/fuzz, cases 1158 and 468) whose lowering took seconds to minutes
# deciding which loops have one value per enclosing iteration; run in a child with a hard timeout.
_BOUND_EXTENT_PREFETCH = """
    def schedule(m, n):
        A = ts.placeholder((m, n), name="A")
        B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
        C = ts.compute((m, n), lambda i, j: B[i, j] * B[i, j] - A[i, j], name="C")
        D = ts.compute((m, n), lambda i, j: ts.maximum(C[i, j], 0.5) + ts.sqrt(ts.abs(B[i, j])), name="D")
        s = ts.create_schedule(D.op)
        jo, ji = s[D].split(D.op.axis[1], factor=2)
        s[D].reorder(ji, D.op.axis[0], jo)
        s[D].vectorize(jo)
        s[C].compute_at(s[D], D.op.axis[0])
        _, cjo, cii, cji = s[C].tile(*C.op.axis, 4, 4)
        s[C].fuse(cjo, cii)
        s[C].vectorize(cji)
        s[B].compute_at(s[D], ji)
        s[B].bound_extent(B.op.axis[1], n)
        s[B].parallel(B.op.axis[0])
        s[B].vectorize(B.op.axis[1])
        s[B].prefetch(A, B.op.axis[0], 3)
        a = rng.random((m, n), dtype=np.float32)
        b = a * 2 + 1
        return s, [A, D], [a], np.maximum(b * b - a, 0.5) + np.sqrt(np.abs(b))

    # the fuzz case (8 x 12) and other sizes: each took 18 s of CPU (minutes on a busy machine)
    cases = [schedule(m, n) for m, n in ((8, 12), (8, 16), (6, 12), (5, 10))]
"""

_CONV_RELU_CONV = """
    def conv(x, weight, name):
        pad = ts.compute((2, 9, 9), lambda c, h, w: ts.if_then_else(
            ts.all(h >= 1, h <= 7, w >= 1, w <= 7), x[c, h - 1, w - 1], 0.0), name=name + "_pad")
        rc, rh, rw = (ts.reduce_axis((0, 2), name="rc"), ts.reduce_axis((0, 3), name="rh"),
                      ts.reduce_axis((0, 3), name="rw"))
        return pad, ts.compute((2, 7, 7), lambda o, h, w: ts.sum(pad[rc, h + rh, w + rw] * weight[o, rc, rh, rw],
                                                                 axis=[rc, rh, rw]), name=name)

    def reference(x, weight):
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
        return sum(np.einsum("chw,oc->ohw", padded[:, r:r + 7, q:q + 7], weight[:, :, r, q])
                   for r in range(3) for q in range(3))

    X, W1, W2 = (ts.placeholder((2, 7, 7), name="X"), ts.placeholder((2, 2, 3, 3), name="W1"),
                 ts.placeholder((2, 2, 3, 3), name="W2"))
    P1, C1 = conv(X, W1, "conv1")
    R = ts.compute((2, 7, 7), lambda o, h, w: ts.maximum(C1[o, h, w], 0.0), name="relu")
    P2, C2 = conv(R, W2, "conv2")
    s = ts.create_schedule(C2.op)
    st = s[C2]
    o, h, w = C2.op.axis
    rc, rh, rw = C2.op.reduce_axis
    wo, wi = st.split(w, nparts=1)
    rco, rci = st.split(rc, factor=1)
    rho, rhi = st.split(rh, nparts=1)
    rwo, rwi = st.split(rw, nparts=3)
    st.reorder(rho, rco, rhi, rwi, rwo, o, wi, rci, wo, h)
    st.pragma(rwi, "unroll_explicit", False)
    st.prefetch(W2, wi, 2)
    st.unroll(rho)
    s[P2].compute_inline()
    s[R].compute_at(st, wi)
    s[R].store_root()
    ro, ri = s[R].split(R.op.axis[0], factor=1)
    rho2, rhi2 = s[R].split(R.op.axis[1], nparts=3)
    s[R].reorder(ro, ri, rhi2, rho2, R.op.axis[2])
    s[R].fuse(rhi2, rho2)
    s[R].vectorize(R.op.axis[2])
    s[R].storage_align(R.op.axis[1], 16, 6)
    c1 = s[C1]
    c1.compute_at(s[R], R.op.axis[2])
    c1.bound_extent(C1.op.axis[2], 7)
    oo, ho, oi, hi = c1.tile(C1.op.axis[0], C1.op.axis[1], 3, 3)
    w1o, w1i = c1.split(C1.op.axis[2], factor=7)
    crc, crh, crw = C1.op.reduce_axis
    crho, crhi = c1.split(crh, nparts=1)
    crwo, crwi = c1.split(crw, nparts=3)
    c1.reorder(crhi, w1o, crc, w1i, oo, ho, crho, crwi, crwo, oi, hi)
    c1.unroll(crc)
    pad1 = s[P1]
    pad1.compute_at(st, rhi)
    pco, pci = pad1.split(pad1.op.axis[0], factor=1)
    pho, phi = pad1.split(pad1.op.axis[1], nparts=2)
    pad1.reorder(pad1.op.axis[2], phi, pci, pco, pho)
    pad1.storage_align(pad1.op.axis[1], 8, 4)
    arrays = [rng.random((2, 7, 7), dtype=np.float32), rng.random((2, 2, 3, 3), dtype=np.float32),
              rng.random((2, 2, 3, 3), dtype=np.float32)]
    cases = [(s, [X, W1, W2, C2], arrays, reference(np.maximum(reference(arrays[0], arrays[1]), 0), arrays[2]))]
"""


@pytest.mark.parametrize("schedule", [_BOUND_EXTENT_PREFETCH, _CONV_RELU_CONV], ids=["bound_extent_prefetch",
                                                                                     "conv_relu_conv"])
def test_single_valued_loops_are_decided_in_bounded_time(schedule, run_python, isolated_cache):
    """Which loops have one value per iteration of the loops around them is decided over the loop values
    (a projection of the domain): over the coordinates isl composed nested floors for seconds per loop
    (the first schedule took 18 s of CPU per size, 72 s in all) and its operation budget did not interrupt
    it. Each kernel is compared with NumPy."""
    done = run_python("import numpy as np\nimport tesched as ts\nrng = np.random.default_rng(0)\n"
                      + textwrap.dedent(schedule) + textwrap.dedent("""
        for k, (s, args, arrays, want) in enumerate(cases):
            f = ts.build(s, args, name=f"slow_single_valued_{k}")
            np.testing.assert_allclose(f(*arrays), want, rtol=1e-4, atol=1e-4)
        print("matches NumPy")
    """))      # the default hang guard (300 s wall): CI machines may be loaded several times over
    assert "matches NumPy" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("text, pos, two", [
    ("{ [a, b] : 0 <= a < 4 and 2a <= b <= 2a + 1 }", 1, True),
    ("{ [a, b] : 0 <= a < 4 and b = 2a }", 1, False),
    ("[n] -> { [a, b] : 0 <= a < n and b = a }", 1, False),       # the sizes are fixed with the loops
    ("[n] -> { [a] : 0 <= a < n and n >= 2 }", 0, True),
    ("{ [a, b] : 0 <= a < 4 and b = a and a > 5 }", 1, False),
])
def test_a_loop_with_two_values_in_a_sample_slice_is_not_single_valued(text, pos, two):
    """The quick witness over loop values ``0..pos``: a sample point's outer loops (and sizes) fixed, two values
    of loop ``pos`` left. It never claims two values where there is one (then isl's general test decides)."""
    assert tree._two_values_at_a_sample(isl.Set(text), pos) is two
