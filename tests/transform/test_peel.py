"""A loop whose last tile is partial is split into its full tiles and the rest, so the loops it holds that
are marked ``unroll`` unroll in both parts; against NumPy, for extents that divide and that do not."""
import numpy as np
import pytest

import tesched as ts
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.lower.pipeline import lower_for_target
from tesched.schedule.kinds import LoopKind
from tesched.transform.peel import split_point

from targets import AVX512


def tiled_rows(n, tile=4, columns=8, size=None):
    """``B = 2 * A + 1`` over rows in tiles of ``tile`` (the tile's rows unrolled, inside a loop over the
    columns) and its lowered function; ``size`` (a ``ts.var``) replaces the constant row count."""
    rows = size if size is not None else n
    A = ts.placeholder((rows, columns), name="A")
    B = ts.compute((rows, columns), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    io, ii = s[B].split(i, tile)
    s[B].reorder(io, j, ii)
    s[B].unroll(ii)
    return s, [A, B], ts.lower(s, [A, B], name=f"tiled_{n}_{tile}_{size is not None}")


def loops(body):
    return [s for s in walk_stmts(body) if isinstance(s, ir.For)]


@pytest.mark.parametrize("n, tile", [(13, 4), (197, 8), (16, 4), (3, 4), (9, 2)])
def test_partial_tiles_unroll_and_match_numpy(n, tile):
    s, args, func = tiled_rows(n, tile)
    finished = lower_for_target(func, ts.Target(AVX512))
    assert not [f for f in loops(finished.body) if f.kind is LoopKind.UNROLLED]      # every row loop unrolled
    a = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
    np.testing.assert_allclose(ts.build(s, args, name=func.name)(a), 2 * a + 1, rtol=1e-6)


def test_the_split_is_where_the_last_tile_starts():
    _, _, func = tiled_rows(197, 8)
    outer, = [f for f in loops(func.body) if f.kind is LoopKind.SERIAL and f.var.name.startswith("i")]
    assert split_point(outer) == (0, 24, 25)
    _, _, func = tiled_rows(16, 4)
    assert all(split_point(f) is None for f in loops(func.body))                   # it divides: nothing to peel


def test_a_symbolic_row_count_is_not_peeled():
    n = ts.var("n")
    s, args, func = tiled_rows(0, 4, size=n)
    assert all(split_point(f) is None for f in loops(func.body))
    a = np.random.default_rng(1).standard_normal((11, 8)).astype(np.float32)
    np.testing.assert_allclose(ts.build(s, args, name="tiled_symbolic")(a), 2 * a + 1, rtol=1e-6)
