"""The adjoint ops: their patterns follow the derived stages, their calls carry only the arguments the
adjoint reads, their NumPy evaluation agrees with the built graph, and an op whose declaration has no
derivative is named in the error."""
import numpy as np
import pytest

import tesched as ts
from tesched import graph as G
from tesched.errors import GradientError
from tesched.graph.ir import Call
from tesched.graph.op import Op
from tesched.graph.op_adjoint import adjoint_call
from tesched.nn.pattern import Pattern


def _head(call):
    return G.var("head", call.tensor_type.shape, call.tensor_type.dtype)


@pytest.mark.parametrize("build, wrt, pattern, reads", [
    (lambda x, w, b: G.nn.relu(x), 0, Pattern.ELEMWISE, ["x"]),
    (lambda x, w, b: G.nn.bias_add(x, b, axis=-1), 0, Pattern.BROADCAST, []),
    (lambda x, w, b: G.nn.bias_add(x, b, axis=-1), 1, Pattern.COMM_REDUCE, []),
    (lambda x, w, b: G.multiply(x, b), 0, Pattern.BROADCAST, ["b"]),
    (lambda x, w, b: G.nn.dense(x, w), 1, Pattern.OUT_ELEMWISE_FUSABLE, ["x"]),
    (lambda x, w, b: G.nn.dense(x, w), 0, Pattern.OUT_ELEMWISE_FUSABLE, ["w"]),
    (lambda x, w, b: G.sum(x, axis=1), 0, Pattern.BROADCAST, []),
    (lambda x, w, b: G.nn.softmax(x), 0, Pattern.OPAQUE, ["x"]),
])
def test_pattern_and_arguments_follow_the_derived_adjoint(build, wrt, pattern, reads):
    x, w, b = G.var("x", (4, 3)), G.var("w", (5, 3)), G.var("b", (3,))
    call = build(x, w, b)
    head = _head(call)
    adjoint = adjoint_call(call, wrt, head)
    assert adjoint.op.name == f"{call.op_name}.grad"
    assert adjoint.pattern == pattern
    assert [a.name for a in adjoint.args] == reads + ["head"]
    assert adjoint.checked_type == call.args[wrt].checked_type


def test_reshape_adjoint_is_a_reshape_and_an_unread_argument_has_none():
    x = G.var("x", (2, 6))
    call = G.reshape(x, (3, 4))
    adjoint = adjoint_call(call, 0, _head(call))
    assert adjoint.op_name == "reshape" and adjoint.checked_type == x.checked_type
    ids = G.var("ids", (3,), "float32")
    ignore = Op("test.first", Pattern.ELEMWISE, lambda args, attrs: ts.compute(args[0].shape, lambda *i: args[0][i]),
                lambda args, attrs: args[0], 2)
    call = Call(ignore, [ids, ids])
    assert adjoint_call(call, 1, _head(call)) is None


def test_evaluate_matches_the_built_adjoint():
    x, w = G.var("x", (4, 3)), G.var("w", (5, 3))
    call = G.nn.dense(x, w)
    head = _head(call)
    adjoint = adjoint_call(call, 1, head)
    rng = np.random.default_rng(0)
    xv, hv = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((4, 5)).astype("float32")
    want = hv.T.astype(np.float64) @ xv
    np.testing.assert_allclose(adjoint.op.evaluate([xv, hv], adjoint.attrs), want, rtol=1e-5, atol=1e-6)
    f = G.Function([x, head], adjoint)
    np.testing.assert_allclose(G.build(f)(xv, hv), want, rtol=1e-5, atol=1e-6)


def test_an_op_without_a_derivative_is_named():
    def declare(args, attrs):
        r = ts.reduce_axis((0, args[0].shape[1]), name="r")
        return ts.compute((args[0].shape[0],), lambda i: ts.prod(args[0][i, r], axis=r), name="rowprod")
    product = Op("test.rowprod", Pattern.COMM_REDUCE, declare, lambda args, attrs: args[0].prod(axis=1), 1)
    x = G.var("x", (2, 3))
    f = G.Function([x], G.sum(Call(product, [x])))
    with pytest.raises(GradientError, match=r"test.rowprod has no gradient with respect to its argument 0.*prod"):
        G.gradient(f)


def test_an_external_call_has_no_declaration_to_differentiate():
    x = G.var("x", (4,))
    library = G.ExternalLibrary([G.ExternalFunction("my_exp", inputs=[("N",)], output=("N",))],
                                source="#include <stdint.h>\nvoid my_exp(const float *x, float *y, int64_t n) {}")
    f = G.partition(G.Function([x], G.sum(G.exp(x))), {"my_exp": G.pattern("exp")}, library)
    with pytest.raises(GradientError, match="external.my_exp has no gradient.*declares no computation"):
        G.gradient(f)
