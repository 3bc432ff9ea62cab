"""Accesses printed as the element offset C computes where it divides less: ``lower()`` shows what runs."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.te.expr import Binary, Const
from tesched.transform.flatten_indices import flat_where_simpler
from tests.gpu_helpers import row_sums_at_a_fused_loop


def _code(text):
    """The printed IR without its comments (``// region of ...``, ``# B: computes ...``)."""
    return "\n".join(line.split("  //")[0] for line in text.splitlines() if not line.lstrip().startswith("#"))


def _divisions_of_ir(text):
    """``x // c`` and ``x % c`` of the printed IR: (operator in C's spelling, c), and the terms whose ``x``
    is a name, in C's spelling of the name."""
    code = _code(text)
    kinds = {("/" if op == "//" else "%", c) for op, c in re.findall(r"(//|%) (\d+)", code)}
    terms = {(name.replace(".", "_").replace("#", "_"), "/" if op == "//" else "%", c)
             for name, op, c in re.findall(r"([A-Za-z_][\w.#]*) (//|%) (\d+)", code)}
    return kinds, terms


def _divisions_of_c(source):
    body = source.split("{", 1)[1]
    kinds = set(re.findall(r" (/|%) (\d+)", body))
    kinds |= {("/" if fn == "div" else "%", c) for fn, c in re.findall(r"ts_floor(div|mod)\(.*?, (\d+)\)", body)}
    terms = {(re.sub(r"_\d+$", "", name), op, c) for name, op, c in re.findall(r"([A-Za-z_]\w*) (/|%) (\d+)", body)}
    return kinds, terms


def assert_divides_only_where_c_does(text, source):
    """Every division and modulo of the printed IR (by its divisor, and as a term of a loop variable) is
    one the C computes too (C names drop the ``_2`` a taken user name gets)."""
    (ir_kinds, ir_terms), (c_kinds, c_terms) = _divisions_of_ir(text), _divisions_of_c(source)
    assert ir_kinds <= c_kinds, text
    assert {(re.sub(r"_\d+$", "", n), op, c) for n, op, c in ir_terms} <= c_terms, text


def _elementwise(shape):
    A = ts.placeholder(shape, name="A")
    B = ts.compute(shape, lambda *i: A[i] * 2.0 + 1.0, name="B")
    return A, B, ts.create_schedule(B.op)


def _fuse_split(s, B):
    s[B].split(s[B].fuse(*B.op.axis), 32)


def _fuse_three(s, B):
    s[B].fuse(*B.op.axis)


def _split_fuse_split(s, B):
    i, j = B.op.axis[:2]
    jo, ji = s[B].split(j, 16)
    s[B].split(s[B].fuse(i, jo), 8)


def _tile_fuse(s, B):
    io, jo, ii, ji = s[B].tile(*B.op.axis[:2], 8, 8)
    s[B].parallel(s[B].fuse(io, jo))
    s[B].vectorize(ji)


SCHEDULES = [((64, 64), _fuse_split), ((4, 6, 10), _fuse_three), ((64, 64), _split_fuse_split),
             ((40, 24), _tile_fuse), ((64, 48), _tile_fuse)]


@pytest.mark.parametrize("shape, schedule", SCHEDULES, ids=[s.__name__ + str(sh) for sh, s in SCHEDULES])
def test_printed_ir_divides_only_where_c_does(shape, schedule, rand):
    A, B, s = _elementwise(shape)
    schedule(s, B)
    text = str(ts.lower(s, [A, B]))
    f = ts.build(s, [A, B], name=f"flat_{schedule.__name__}_{'x'.join(map(str, shape))}")
    assert_divides_only_where_c_does(text, f.c_source)
    a = rand(shape)
    np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_fused_loop_reads_and_writes_at_its_value():
    A, B, s = _elementwise((64, 32))
    s[B].fuse(*B.op.axis)
    assert "B[i0.i1.fused] = A[i0.i1.fused] * 2.0f + 1.0f" in str(ts.lower(s, [A, B]))


def test_compute_at_buffer_through_a_fused_loop_is_read_from_its_start(rand):
    A = ts.placeholder((64, 64), name="A")
    B = ts.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((64, 64), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    fo, fi = s[C].split(s[C].fuse(*C.op.axis), 128)
    s[B].compute_at(s[C], fo)
    text = str(ts.lower(s, [A, C]))
    assert "C[128 * i.j.fused.outer + i.j.fused.inner] = B[i.j.fused.inner] + 1.0f" in text, text
    assert "B[i, j] = A[i, j] * 2.0f" in text        # the producer's own loops keep its coordinates
    f = ts.build(s, [A, C], name="flat_compute_at")
    a = rand((64, 64))
    np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_tiles_keep_their_coordinates():
    """A tiled loop's indices divide no more than its offset would: the coordinates stay."""
    A, B, s = _elementwise((64, 64))
    s[B].tile(*B.op.axis, 8, 8)
    assert "B[8 * i0.outer + i0.inner, 8 * i1.outer + i1.inner]" in str(ts.lower(s, [A, B]))


def test_offset_replaces_coordinates_only_when_it_divides_strictly_less():
    f = ir.LoopVar("f")
    ranges = VarRanges().where(f, 0, 2047)
    buf = ir.Buffer("B", [64, 32], "float32", ir.BufferScope.ARG)
    fused = (Binary("floordiv", f, Const(32, "int64"), "int64"), Binary("floormod", f, Const(32, "int64"), "int64"))
    assert flat_where_simpler(buf, fused, ranges) == (f,)
    other = ir.Buffer("W", [64, 64], "float32", ir.BufferScope.ARG)      # rows of 64: the division stays
    assert flat_where_simpler(other, fused, ranges) is fused
    vector = ir.Buffer("V", [2048], "float32", ir.BufferScope.ARG)        # one dimension: nothing to fold
    assert flat_where_simpler(vector, (fused[1],), ranges) == (fused[1],)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([(12, 10), (6, 4, 5), (16, 16)]), st.integers(1, 3), st.sampled_from([None, 4, 7]))
def test_random_fuse_and_split_match_numpy_and_print_no_extra_division(shape, fused, factor):
    A, B, s = _elementwise(shape)
    axes = list(B.op.axis)
    loop = s[B].fuse(*axes[:fused + 1]) if fused + 1 <= len(axes) and fused else axes[0]
    if factor:
        s[B].split(loop, factor)
    text = str(ts.lower(s, [A, B]))
    f = ts.build(s, [A, B], name=f"flat_random_{'x'.join(map(str, shape))}_{fused}_{factor}")
    assert_divides_only_where_c_does(text, f.c_source)
    a = np.random.default_rng(len(shape)).random(shape, dtype=np.float32)
    np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6)


def test_a_buffer_of_a_gpu_block_around_thread_loops_keeps_its_coordinates():
    """The GPU printer proves per dimension which thread owns an element of a block's buffer (a register
    tile); the same buffer on the CPU is indexed by its offset."""
    assert "S.local[n.y.fused // 3, n.y.fused % 3, x] = 0.0f" in _code(str(ts.lower(*row_sums_at_a_fused_loop(True))))
    assert "S.local[x] = 0.0f" in _code(str(ts.lower(*row_sums_at_a_fused_loop(False))))
