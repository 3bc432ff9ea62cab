"""The reprs of a schedule, its stages and their loop variables say what a debugger user looks for: each
stage's placement and loops in order, with trip counts, kinds and reductions."""
import tesched as ts


def declare():
    A = ts.placeholder((64, 32), name="A")
    k = ts.reduce_axis((0, 32), name="k")
    C = ts.compute((64,), lambda i: ts.sum(A[i, k], axis=k), name="C")
    B = ts.compute((64, 32), lambda i, j: A[i, j] * C[i], name="B")
    return A, C, B, k


def test_a_stage_shows_its_placement_and_its_loops_in_order():
    A, C, B, k = declare()
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[B].parallel(io)
    s[B].vectorize(B.op.axis[1])
    s[C].compute_at(s[B], io)
    assert repr(s[A]) == "Stage(A, input)"
    assert repr(s[B]) == "Stage(B, root, loops: i.outer (8) parallel, i.inner (8), j (32) vectorized)"
    assert repr(s[C]) == "Stage(C, at B.i.outer, loops: i (64), k (32) reduce)"
    assert repr(s) == ("Schedule(outputs: B;\n  Stage(A, input)\n  " + repr(s[C]) + "\n  " + repr(s[B]) + ")")


def test_inlined_and_stored_stages_say_so():
    A, C, B, _ = declare()
    D = ts.compute((64, 32), lambda i, j: B[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    s[B].compute_inline()
    s[C].store_root()
    s[C].compute_at(s[D], D.op.axis[0])
    assert repr(s[B]).startswith("Stage(B, inline, ")
    assert repr(s[C]).startswith("Stage(C, at D.i, stored at root, ")


def test_symbolic_extents_are_shown_and_unknown_ones_marked():
    n = ts.var("n")
    X = ts.placeholder((n,), name="X")
    Y = ts.compute((n,), lambda i: X[i] + 1.0, name="Y")
    s = ts.create_schedule(Y.op)
    assert repr(s[Y]) == "Stage(Y, root, loops: i (n))"
    s[Y].split(Y.op.axis[0], factor=4)
    assert repr(s[Y]) == "Stage(Y, root, loops: i.outer (?), i.inner (4))"


def test_an_axis_prints_as_its_name_where_messages_show_expressions():
    """An IterVar is an expression: its repr is its text (``i``), which error messages and index lists print;
    its range and kind are in its stage's repr."""
    A, C, B, k = declare()
    assert repr(B.op.axis[0]) == "i" and repr(k) == "k"
    assert repr(A[B.op.axis[0], 1] + 1) == "A[i, 1] + 1.0f"
