"""Comparison, logic, where, any/all and cast graph ops: bool tensors as inputs, intermediates, constants and
outputs of a built graph, compiled and interpreted against NumPy; what fuses; constant folding of masks."""
import numpy as np
import pytest

from tesched import graph as G


def masked_graph():
    """A softmax over scores masked by a bool input and by a comparison, with bool and float outputs."""
    x, mask = G.var("x", (2, 3, 8)), G.var("mask", (3, 8), "bool")
    above = G.greater(x, 0.25)
    keep = G.logical_or(G.logical_and(above, G.logical_not(mask)), G.logical_xor(mask, G.less_equal(x, -0.5)))
    scores = G.where(mask, x, -np.inf)
    body = G.Tuple([G.where(keep, x, 0.0), G.any(above, -1, True), G.all(G.not_equal(x, 0.5), (0, 2)),
                    G.cast(keep, "float32"), G.nn.softmax(scores, -1), G.equal(scores, -np.inf)])
    return G.Function([x, mask], body)


def reference(xa, ma):
    above = xa > 0.25
    keep = (above & ~ma) | (ma ^ (xa <= -0.5))
    scores = np.where(ma, xa, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return [np.where(keep, xa, 0), above.any(-1, keepdims=True), (xa != 0.5).all((0, 2)), keep.astype(np.float32),
            e / e.sum(-1, keepdims=True), scores == -np.inf]


def test_masks_compiled_and_interpreted(rand):
    f = masked_graph()
    xa, ma = rand((2, 3, 8), low=-1), rand((3, 8)) > 0.4
    ma[:, 0] = True                                             # no row is masked whole
    wants = reference(xa, ma)
    exe = G.build(f)
    for got in (G.interpret(f, xa, ma), exe(xa, ma)):
        for g, w in zip(got, wants):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert len(exe.kernels) < 6                                  # masks fuse with their readers


def test_mask_made_from_constants_folds_to_a_bool_constant(rand):
    x = G.var("x", (4, 4))
    rows, cols = G.const(np.arange(4)[:, None]), G.const(np.arange(4)[None, :])
    causal = G.where(G.less_equal(cols, rows), x, -np.inf)
    f = G.Function([x], causal)
    optimized = G.optimize(f)
    assert "less_equal" not in str(optimized) and "bool" in str(optimized)
    xa = rand((4, 4))
    np.testing.assert_array_equal(G.build(f)(xa), np.where(np.tri(4, dtype=bool), xa, -np.inf))


def test_types_and_errors():
    x, m = G.var("x", (2, 3)), G.var("m", (2, 3), "bool")
    assert G.greater(x, 1).checked_type == G.TensorType((2, 3), "bool")
    assert G.any(m, 1).checked_type == G.TensorType((2,), "bool")
    assert G.cast(x, "float32") is x
    with pytest.raises(TypeError, match="logical_and.*operands must be bool"):
        G.logical_and(x, m)
    with pytest.raises(TypeError, match="where: at least one"):
        G.where(m, 1.0, 0.0)
    with pytest.raises(ValueError, match="equal.*cannot broadcast|equal"):
        G.equal(x, G.var("y", (4,)))
