"""Size hints: schedules chosen for a hinted symbolic size, legal (and correct) at every size."""
import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.hints import DEFAULT_HINT, hint, is_symbolic, size_hints


def test_hints_evaluate_symbolic_extents():
    n = ts.var("n")
    assert hint(7) == 7 and hint(ts.const(5)) == 5 and not is_symbolic(7) and is_symbolic(n)
    assert hint(n) == DEFAULT_HINT
    with size_hints({id(n): 48}):
        assert hint(n) == 48 and hint(n * 2 + 1) == 97
    assert hint(n) == DEFAULT_HINT


@pytest.mark.parametrize("hinted", [1, 64])
def test_default_schedules_stay_correct_at_sizes_other_than_the_hint(hinted, rand):
    """A GEMM-sized hint gives register tiles of rows, whose last tile is partial at most sizes; a hint of
    one gives the matrix-vector schedule: both run at every row count."""
    n = ts.var("n")
    x, w = ts.placeholder((n, 24), name="x"), ts.placeholder((40, 24), name="w")
    q = ts.placeholder((2, n, 8), name="q")
    out = nn.relu(nn.dense(x, w))
    scores = nn.softmax(nn.batch_matmul(q, nn.transpose(q, (0, 2, 1))))
    with size_hints({id(n): hinted}):
        dense = ts.build(nn.default_schedule(out), [x, w, out], name="dense_any_rows")
        attend = ts.build(nn.default_schedule(scores), [q, scores], name="scores_any_rows")
    b = rand((40, 24), low=-1)
    for rows in (1, 5, 17, 64, 71):
        a, qa = rand((rows, 24), low=-1), rand((2, rows, 8), low=-1)
        np.testing.assert_allclose(dense(a, b), np.maximum(a @ b.T, 0), rtol=1e-4, atol=1e-4)
        logits = qa @ qa.transpose(0, 2, 1)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        np.testing.assert_allclose(attend(qa), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-5)
