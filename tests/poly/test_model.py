"""Tests of tesched.poly.model: statements and iteration domains of stages, footprints of compute_at
stages (exact, clipped at borders, with halos) and the buffers they get."""
import islpy as isl
import numpy as np
import pytest

import tesched as ts
from tesched.poly.model import PolyModel

from .helpers import model_of


def count(domain: isl.Set) -> int:
    return int(domain.count_val().to_python())


def stencil1d(n_out):
    A = ts.placeholder((n_out + 2,), name="A")
    P = ts.compute((n_out + 2,), lambda i: A[i] * 3.0, name="P")
    C = ts.compute((n_out,), lambda i: P[i] + P[i + 1] + P[i + 2], name="C")
    return A, P, C


def stage_model(model: PolyModel, name: str):
    return next(sm for sm in model.stages if sm.name == name)


def test_statements_and_domains_of_root_stages():
    A = ts.placeholder((5, 7), name="A")
    E = ts.compute((5, 7), lambda i, j: A[i, j] + 1.0, name="E")
    k = ts.reduce_axis((2, 6), name="k")
    R = ts.compute((5,), lambda i: ts.sum(E[i, k], axis=k), name="R")
    model = model_of(ts.create_schedule(R.op), [A, R])
    e, r = stage_model(model, "E"), stage_model(model, "R")
    assert [s.kind for s in e.statements] == ["compute"]
    assert [s.kind for s in r.statements] == ["init", "update"]
    assert count(e.main.domain) == 35
    assert count(r.init.domain) == 5
    assert count(r.main.domain) == 5 * 4                 # k runs over [2, 6)
    assert e.parent is None and e.buffer.scope == "global" and r.buffer.scope == "arg"
    assert set(model.statements) == {s.name for s in e.statements + r.statements}


def test_inlined_stages_have_no_statements():
    A, P, C = stencil1d(8)
    s = ts.create_schedule(C.op)
    s[P].compute_inline()
    model = model_of(s, [A, C])
    assert [sm.name for sm in model.stages] == ["C"]


def test_symbolic_sizes_become_parameters():
    n = ts.var("n")
    A = ts.placeholder((n, 3), name="A")
    B = ts.compute((n, 3), lambda i, j: A[i, j] * 2.0, name="B")
    model = model_of(ts.create_schedule(B.op), [A, B])
    assert [p.name for p in model.params] == ["n"]
    domain = stage_model(model, "B").main.domain
    fixed = domain.intersect_params(isl.Set(f"{model.param_prefix}{{ : {model.param_names[id(n)]} = 4 }}"))
    assert count(fixed.project_out(isl.dim_type.param, 0, 1)) == 12


def test_footprint_of_a_split_with_halo():
    A, P, C = stencil1d(16)
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[P].compute_at(s[C], io)
    model = model_of(s, [A, C])
    p = stage_model(model, "P")
    assert p.parent is stage_model(model, "C") and p.level == 0 and p.prefix_len == 1
    assert p.buffer.scope == "local" and p.buffer.shape == [6]           # 4 points plus a halo of 2
    fp = p.footprint
    assert count(fp.domain()) == 4
    for tile in range(4):
        region = fp.intersect_domain(isl.Set(f"{{ [{tile}] }}")).range()
        assert count(region) == 6
        assert region.lexmin().is_equal(isl.Set(f"{{ {p.tag}[{4 * tile}] }}"))


def test_footprint_is_clipped_at_the_border():
    A, P, C = stencil1d(10)                   # 12 points of P; C in tiles of 4: the last tile has 2 points
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[P].compute_at(s[C], io)
    p = stage_model(model_of(s, [A, C]), "P")
    sizes = [count(p.footprint.intersect_domain(isl.Set(f"{{ [{t}] }}")).range()) for t in range(3)]
    assert sizes == [6, 6, 4]
    assert p.buffer.shape == [6]


def test_footprint_of_a_2d_tile_of_a_3x3_stencil():
    A = ts.placeholder((18, 18), name="A")
    P = ts.compute((18, 18), lambda y, x: A[y, x] + 1.0, name="P")
    C = ts.compute((16, 16), lambda y, x: P[y, x] + P[y + 2, x + 2] + P[y + 1, x], name="C")
    s = ts.create_schedule(C.op)
    yo, xo, yi, xi = s[C].tile(*C.op.axis, 8, 8)
    s[P].compute_at(s[C], xo)
    p = stage_model(model_of(s, [A, C]), "P")
    assert p.buffer.shape == [10, 10]
    assert p.prefix_len == 2
    assert count(p.main.domain) == 4 * 10 * 10       # 4 tiles, each computing its halo again


def test_redundancy_counts_recomputed_halos():
    A, P, C = stencil1d(16)
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[P].compute_at(s[C], io)
    assert ts.lower(s, [A, C]).redundancy == {"P": pytest.approx(4 * 6 / 18)}


def test_a_non_affine_read_needs_the_whole_dimension_at_each_iteration():
    A = ts.placeholder((5, 3), name="A")
    I = ts.placeholder((5,), "int32", name="I")
    P = ts.compute((5, 3), lambda i, j: A[i, j] * 2.0, name="P")
    C = ts.compute((5, 3), lambda i, j: P[I[i], j], name="C")
    s = ts.create_schedule(C.op)
    s[P].compute_at(s[C], C.op.axis[1])
    model = model_of(s, [A, I, C])
    P_model = model.stages[0]
    assert P_model.buffer.shape == [5, 1]       # dimension 0: all of it; dimension 1: the one column j


def test_non_affine_read_of_a_root_stage_works(rand):
    A = ts.placeholder((5,), name="A")
    I = ts.placeholder((5,), "int32", name="I")
    P = ts.compute((5,), lambda i: A[i] * 2.0, name="P")
    C = ts.compute((5,), lambda i: P[I[i]], name="C")
    f = ts.build(ts.create_schedule(C.op), [A, I, C], name="gather")
    a = rand(5)
    idx = np.array([4, 0, 2, 2, 1], np.int32)
    np.testing.assert_allclose(f(a, idx), 2 * a[idx])


@pytest.mark.parametrize("n, factor", [(7, 4), (9, 6), (5, 3), (10, 3), (13, 4)])
def test_buffer_origin_moves_with_non_dividing_tiles(n, factor, rand):
    # two outer iterations of a non-dividing split give isl a piecewise-constant minimum per tile
    A = ts.placeholder((n,), name="A")
    P = ts.compute((n,), lambda i: A[i] * 2.0, name="P")
    C = ts.compute((n,), lambda i: P[i] + P[n - 1 - i], name="C")
    D = ts.compute((n,), lambda i: C[i] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    io, ii = s[D].split(D.op.axis[0], factor=factor)
    s[C].compute_at(s[D], io)
    s[P].compute_at(s[D], io)
    f = ts.build(s, [A, D], name=f"moving_origin_{n}_{factor}")
    a = rand(n)
    np.testing.assert_allclose(f(a), 2 * a + 2 * a[::-1] + 1, rtol=1e-6)
