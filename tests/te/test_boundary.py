"""Tests of tesched.te.boundary: Halide-style boundary conditions read any index, never outside the tensor,
and give NumPy's np.pad modes (constant, edge, reflect, wrap, symmetric) under every placement."""
import numpy as np
import pytest

import tesched as ts

PADS = {"constant_exterior": dict(mode="constant", constant_values=-2.0), "repeat_edge": dict(mode="edge"),
        "mirror_interior": dict(mode="reflect"), "repeat_image": dict(mode="wrap"),
        "mirror_image": dict(mode="symmetric")}


def _bounded(kind: str, A):
    if kind == "constant_exterior":
        return ts.boundary.constant_exterior(A, -2.0)
    return getattr(ts.boundary, kind)(A)


@pytest.mark.parametrize("kind", list(PADS))
@pytest.mark.parametrize("placement", ["root", "inline", "compute_at"])
def test_a_blur_through_a_boundary_condition(kind, placement, rand):
    h, w, r = 7, 9, 2
    A = ts.placeholder((h, w), name="A")
    P = _bounded(kind, A)
    Bx = ts.compute((h, w), lambda i, j: sum(P[i, j + d] for d in range(-r, r + 1)), name="Bx")
    By = ts.compute((h, w), lambda i, j: sum(ts.boundary.repeat_edge(Bx)[i + d, j] for d in (-1, 0, 1)), name="By")
    s = ts.create_schedule(By.op)
    if placement == "inline":
        s[Bx].compute_inline()
    elif placement == "compute_at":
        io, ii = s[By].split(By.op.axis[0], factor=3)
        s[Bx].compute_at(s[By], io)
    f = ts.build(s, [A, By], name=f"blur_{kind}_{placement}")
    a = rand((h, w))
    padded = np.pad(a, ((0, 0), (r, r)), **PADS[kind])
    bx = sum(padded[:, r + d:r + d + w] for d in range(-r, r + 1))
    bxp = np.pad(bx, ((1, 1), (0, 0)), mode="edge")
    np.testing.assert_allclose(f(a), bxp[:-2] + bxp[1:-1] + bxp[2:], rtol=1e-5)


@pytest.mark.parametrize("kind", list(PADS))
def test_far_indices_and_symbolic_sizes(kind, rand):
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    P = _bounded(kind, A)
    B = ts.compute((n,), lambda i: P[i - 3] * 10.0 + P[i + 3], name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name=f"far_{kind}")
    for size in (4, 9):
        a = rand(size)
        padded = np.pad(a, 3, **PADS[kind])
        np.testing.assert_allclose(f(a), padded[:-6] * 10 + padded[6:], rtol=1e-5)


def test_mirror_interior_is_periodic_for_constant_extents():
    A = ts.placeholder((4,), "int32", name="A")
    M = ts.boundary.mirror_interior(A)
    B = ts.compute((16,), lambda i: M[i - 6], name="B")
    out = ts.build(ts.create_schedule(B.op), [A, B], name="mirror_periodic")(np.arange(4, dtype=np.int32))
    assert out.tolist() == [0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3]


@pytest.mark.parametrize("make, error, match", [
    (lambda A: ts.boundary.repeat_edge(3), TypeError, "boundary.repeat_edge: expected a Tensor"),
    (lambda A: ts.boundary.constant_exterior(A, "zero"), TypeError, r"constant_exterior\(A\): value"),
    (lambda A: ts.boundary.mirror_interior(A)[0], IndexError, r"mirror_interior\(A\) has 2 dimensions"),
    (lambda A: ts.boundary.repeat_edge(A)[0.5, 1], TypeError, r"index 0 of repeat_edge\(A\)"),
])
def test_misuse_names_the_tensor(make, error, match):
    with pytest.raises(error, match=match):
        make(ts.placeholder((3, 3), name="A"))
