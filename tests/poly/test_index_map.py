"""Index maps of tensorize: intrinsics whose indices use floor division and modulo by constants match
tiles of stages indexed the same way (origin and strides right, checked against NumPy), and every index
that would make the call read the wrong elements is refused with the reason."""
import numpy as np
import pytest

import tesched as ts

UNPACK_SRC = r"""
static void unpack16(const float *x, int64_t sx0, int64_t sx1, float *y, int64_t sy) {
  for (int i = 0; i < 16; i++) y[i * sy] = 2.0f * x[(i / 4) * sx0 + (i % 4) * sx1];
}
"""

OP9_SRC = r"""
static void op9(const float *x, int64_t sx0, int64_t sx1, float *y, int64_t sy0, int64_t sy1) {
  for (int i = 0; i < 9; i++) for (int j = 0; j < 9; j++)
    y[i * sy0 + j * sy1] = x[(j / 3 + i % 3) * sx0 + (j % 3 + i / 3) * sx1];
}
"""

DOT_SRC = r"""
static void dot16(const float *a, int64_t sa, const float *b, int64_t sb, float *c, int64_t sc) {
  float acc = 0;
  for (int k = 0; k < 16; k++) acc += a[k * sa] * b[k * sb];
  c[0] = acc;
}
"""


def unpack_intrin(index=lambda x, i: x[i // 4, i % 4]):
    """``y[i] = 2 * x[i // 4, i % 4]`` over 16 elements (``index`` replaces the read for refusals)."""
    x = ts.placeholder((4, 4), name="ux")
    y = ts.compute((16,), lambda i: index(x, i) * 2.0, name="uy")
    return ts.decl_tensor_intrin(y.op, ts.CIntrinsic(source=UNPACK_SRC, body="unpack16"), name="unpack16")


def dot_intrin():
    a = ts.placeholder((16,), name="a")
    b = ts.placeholder((16,), name="b")
    k = ts.reduce_axis((0, 16), name="k")
    c = ts.compute((1,), lambda i: ts.sum(a[k] * b[k], axis=k), name="c")
    return ts.decl_tensor_intrin(c.op, ts.CIntrinsic(source=DOT_SRC, body="dot16"), name="dot16")


def data(*shape):
    return np.random.default_rng(sum(shape)).random(shape, dtype=np.float32)


def unpack_stage(index, n: int = 64):
    """``Y[i] = 2 * index(X, i)`` split by 16 with the inner loop tensorized by ``unpack16``."""
    X = ts.placeholder((n // 4, 4), name="X")
    Y = ts.compute((n,), lambda i: index(X, i) * 2.0, name="Y")
    s = ts.create_schedule(Y.op)
    _, yi = s[Y].split(Y.op.axis[0], factor=16)
    s[Y].tensorize(yi, unpack_intrin())
    return s, [X, Y]


def test_split_loop_indexed_by_division_and_modulo():
    s, args = unpack_stage(lambda X, i: X[i // 4, i % 4])
    text = str(ts.lower(s, args))
    assert "call unpack16(&X[4 * i.outer, 0], 4, 1, &Y[16 * i.outer], 1)" in text, text
    x = data(16, 4)
    np.testing.assert_allclose(ts.build(s, args)(x), 2 * x.reshape(-1), rtol=1e-6)


def test_tvm_op9_tensorized_inside_a_batch():
    """TVM's test_tensorize_op indices, at the inner two loops of a batched compute (origin per batch)."""
    x = ts.placeholder((5, 5), name="ix")
    y = ts.compute((9, 9), lambda i, j: x[j // 3 + i % 3, j % 3 + i // 3], name="iy")
    intrin = ts.decl_tensor_intrin(y.op, ts.CIntrinsic(source=OP9_SRC, body="op9"), name="op9")
    A = ts.placeholder((3, 5, 5), name="A")
    B = ts.compute((3, 9, 9), lambda n, i, j: A[n, j // 3 + i % 3, j % 3 + i // 3], name="B")
    s = ts.create_schedule(B.op)
    s[B].tensorize(B.op.axis[1], intrin)
    assert "call op9(&A[n, 0, 0], 5, 1, &B[n, 0, 0], 9, 1)" in str(ts.lower(s, [A, B]))
    a = data(3, 5, 5)
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    np.testing.assert_allclose(ts.build(s, [A, B])(a), a[:, j // 3 + i % 3, j % 3 + i // 3], rtol=1e-6)


def test_fused_loops_split_into_tiles_of_the_intrinsic():
    """A 2-D stage whose fused loops are split by 16: the fused loop's row and column are a division and
    a modulo of the tile loop, and the tile follows the intrinsic's flat index."""
    X = ts.placeholder((8, 4), name="X")
    Y = ts.compute((8, 4), lambda r, c: X[r, c] * 2.0, name="Y")
    Z = ts.compute((32,), lambda i: Y[i // 4, i % 4], name="Z")
    s = ts.create_schedule(Z.op)
    s[Y].compute_inline()
    _, zi = s[Z].split(Z.op.axis[0], factor=16)
    s[Z].tensorize(zi, unpack_intrin())
    x = data(8, 4)
    np.testing.assert_allclose(ts.build(s, [X, Z])(x), 2 * x.reshape(-1), rtol=1e-6)


def refusals():
    """name -> (schedule builder, text of the reason)."""
    def split_unpack(index):
        return lambda: unpack_stage(index)

    def intrin_index(index):
        def build():
            s, args = unpack_stage(lambda X, i: X[i // 4, i % 4])
            stage = s[args[1]]
            stage.tensorize(stage.leaf_iter_vars[1], unpack_intrin(index))
            return s, args
        return build

    def dot_of(read, gather=False):
        def build():
            X = ts.placeholder((16,), name="X")
            Y = ts.placeholder((16, 4), name="Y")
            I = ts.placeholder((16,), name="I", dtype="int32")
            r = ts.reduce_axis((0, 16), name="r")
            Z = ts.compute((1,), lambda i: ts.sum(X[r] * read(Y, I, r), axis=r), name="Z")
            s = ts.create_schedule(Z.op)
            s[Z].tensorize(Z.op.axis[0], dot_intrin())
            return s, [X, Y, I, Z] if gather else [X, Y, Z]
        return build

    n = ts.var("n")
    return {
        "intrinsic divides by one of its axes": (intrin_index(lambda x, i: x[i // (i + 1), i % 4]),
                                                 "ux.*not quasi-affine.*positive constant"),
        "stage divides by a size": (split_unpack(lambda X, i: X[i // n, i % 4]), "not quasi-affine"),
        "tile straddles a period": (split_unpack(lambda X, i: X[(i + 2) // 4 % 16, (i + 2) % 4]),
                                    "does not follow"),
        "division by another constant": (split_unpack(lambda X, i: X[i // 8, i % 4]), "does not follow"),
        "index moves with no intrinsic index": (dot_of(lambda Y, I, r: Y[r, r // 4]), "varies inside the region"),
        "data-dependent index in the region": (dot_of(lambda Y, I, r: Y[I[r], 0], gather=True), "not quasi-affine"),
    }


@pytest.mark.parametrize("name", list(refusals()))
def test_index_that_does_not_follow_the_intrinsic_is_refused(name):
    build, reason = refusals()[name]
    s, args = build()
    with pytest.raises(ts.TensorizeError, match="index map differs: .*" + reason):
        ts.lower(s, args)
