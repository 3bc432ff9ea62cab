"""Tests of tesched.poly.emit: the statements' bodies in loop IR (here, a tuple reduction's update)."""
import numpy as np

import tesched as ts
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts


def _lets(stmt: ir.Stmt) -> list[ir.LetStmt]:
    return [s for s in walk_stmts(stmt) if isinstance(s, ir.LetStmt)]


def test_a_tuple_update_binds_the_reduced_values_then_one_shared_comparison(rand):
    """argmax's update: the index and the value bound first (one ReduceInput per component, naming its
    output), the comparison once for both components, then the stores."""
    m, n = 3, 9
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    index, best = ts.compute((m,), lambda i: ts.argmax(val[i, k] * 2.0, axis=k), name="T")
    s = ts.create_schedule(index.op)
    lowered = ts.lower(s, [val, index, best])
    lets = _lets(lowered.body)
    inputs = [let for let in lets if isinstance(let.var, ir.ReduceInput)]
    assert [let.var.name for let in inputs] == ["T.in0", "T.in1"]
    assert [let.var.buffer.name for let in inputs] == ["T", "T.v1"]
    assert lets[:2] == inputs       # bound before the combination, which reads them
    text = str(lowered)
    assert text.count(" > T.in1") == 1, text     # the comparison is bound once for both components
    values = rand((m, n))
    got_index, got_best = ts.build(s, [val, index, best], name="argmax_update")(values)
    np.testing.assert_array_equal(got_index, np.argmax(values, axis=1))
    np.testing.assert_array_equal(got_best, 2 * values.max(axis=1))
