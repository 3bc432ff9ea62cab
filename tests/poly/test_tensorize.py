"""Tensorize: structural matching of a loop nest against an intrinsic, three-part reductions, fused
epilogues, and the reasons a mismatch is refused. Every built kernel is checked against NumPy."""
import numpy as np
import pytest

import tesched as ts

GEMV_SRC = r"""
static void gemv16(const float *a, int64_t sa, const float *b, int64_t sb0, int64_t sb1, float *c, int64_t sc) {
  for (int i = 0; i < 16; i++) {
    float acc = 0;
    for (int k = 0; k < 16; k++) acc += a[k * sa] * b[i * sb0 + k * sb1];
    c[i * sc] = acc;
  }
}
static void gemv16_zero(float *c, int64_t sc) { for (int i = 0; i < 16; i++) c[i * sc] = 0; }
static void gemv16_acc(const float *a, int64_t sa, const float *b, int64_t sb0, int64_t sb1, float *c, int64_t sc) {
  for (int i = 0; i < 16; i++) {
    float acc = 0;
    for (int k = 0; k < 16; k++) acc += a[k * sa] * b[i * sb0 + k * sb1];
    c[i * sc] += acc;
  }
}
"""

DOT_SRC = r"""
static void dot16(const float *a, int64_t sa, const float *b, int64_t sb, float *c, int64_t sc) {
  float acc = 0;
  for (int k = 0; k < 16; k++) acc += a[k * sa] * b[k * sb];
  c[0] = acc;
}
"""

MICRO_SRC = r"""
static void mm4x16(const float *a, int64_t sa0, int64_t sa1, const float *b, int64_t sb0, int64_t sb1,
                   float *c, int64_t sc0, int64_t sc1) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 16; j++) {
      float acc = 0;
      for (int k = 0; k < 32; k++) acc += a[i * sa0 + k * sa1] * b[k * sb0 + j * sb1];
      c[i * sc0 + j * sc1] = acc;
    }
}
"""

FUSED_SRC = r"""
static void mm_bias_relu(const float *a, int64_t sa0, int64_t sa1, const float *b, int64_t sb0, int64_t sb1,
                         const float *bias, int64_t sbias, float *o, int64_t so0, int64_t so1) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 16; j++) {
      float acc = 0;
      for (int k = 0; k < 32; k++) acc += a[i * sa0 + k * sa1] * b[k * sb0 + j * sb1];
      acc += bias[j * sbias];
      o[i * so0 + j * so1] = acc > 0 ? acc : 0;
    }
}
"""


def gemv_intrin(body_only: bool = False, reset: bool = True):
    a = ts.placeholder((16,), name="a")
    b = ts.placeholder((16, 16), name="b")
    k = ts.reduce_axis((0, 16), name="k")
    c = ts.compute((16,), lambda i: ts.sum(a[k] * b[i, k], axis=k), name="c")
    impl = ts.CIntrinsic(source=GEMV_SRC, body="gemv16") if body_only else \
        ts.CIntrinsic(source=GEMV_SRC, body="gemv16", reset="gemv16_zero" if reset else None, update="gemv16_acc")
    return ts.decl_tensor_intrin(c.op, impl, name="gemv16")


def micro_intrin(fused: bool, k_extent: int = 32):
    a = ts.placeholder((4, k_extent), name="ia")
    b = ts.placeholder((k_extent, 16), name="ib")
    k = ts.reduce_axis((0, k_extent), name="ik")
    c = ts.compute((4, 16), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="ic")
    if not fused:
        return ts.decl_tensor_intrin(c.op, ts.CIntrinsic(source=MICRO_SRC, body="mm4x16"), name="mm4x16")
    bias = ts.placeholder((16,), name="ibias")
    out = ts.compute((4, 16), lambda i, j: ts.maximum(c[i, j] + bias[j], 0.0), name="iout")
    return ts.decl_tensor_intrin(out.op, ts.CIntrinsic(source=FUSED_SRC, body="mm_bias_relu"), name="mm_bias_relu")


def matmul_bt(n=32, m=64, l=64):
    A = ts.placeholder((n, l), name="A")
    B = ts.placeholder((m, l), name="B")
    k = ts.reduce_axis((0, l), name="kk")
    C = ts.compute((n, m), lambda x, y: ts.sum(A[x, k] * B[y, k], axis=k), name="C")
    return A, B, C


def gemv_split(C, fy=16, fk=16, reorder=True):
    """Split y and the reduction of ``C[x, y] = sum(A[x, k] * B[y, k])``, reduction outside the tile."""
    s = ts.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=fy)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=fk)
    if reorder:
        s[C].reorder(x, yo, ko, yi, ki)
    return s, yi


def data(*shape, shift=0.0):
    return np.random.default_rng(sum(shape)).random(shape, dtype=np.float32) - np.float32(shift)


def test_gemv_update_when_reduction_is_split_outside():
    A, B, C = matmul_bt()
    s, yi = gemv_split(C)
    s[C].tensorize(yi, gemv_intrin())
    text = str(ts.lower(s, [A, B, C]))
    assert "call gemv16_zero(" in text and "call gemv16_acc(" in text and "gemv16(" not in text.replace(
        "gemv16_zero(", "").replace("gemv16_acc(", "")
    f = ts.build(s, [A, B, C])
    a, b = data(32, 64), data(64, 64)
    np.testing.assert_allclose(f(a, b), a @ b.T, rtol=1e-4)


def test_gemv_body_when_whole_reduction_is_inside():
    A, B, C = matmul_bt(l=16)
    s = ts.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    s[C].tensorize(yi, gemv_intrin())
    text = str(ts.lower(s, [A, B, C]))
    assert "call gemv16(" in text and "gemv16_zero" not in text
    f = ts.build(s, [A, B, C])
    a, b = data(32, 16), data(64, 16)
    np.testing.assert_allclose(f(a, b), a @ b.T, rtol=1e-4)


def test_dot_product_intrinsic_with_strided_inputs():
    a = ts.placeholder((16,), name="a")
    b = ts.placeholder((16,), name="b")
    k = ts.reduce_axis((0, 16), name="k")
    c = ts.compute((1,), lambda i: ts.sum(a[k] * b[k], axis=k), name="c")
    dot = ts.decl_tensor_intrin(c.op, ts.CIntrinsic(source=DOT_SRC, body="dot16"), name="dot16")
    X = ts.placeholder((8, 16), name="X")
    Y = ts.placeholder((16, 8), name="Y")  # read column-wise: stride 8
    r = ts.reduce_axis((0, 16), name="r")
    Z = ts.compute((8, 1), lambda i, j: ts.sum(X[i, r] * Y[r, i], axis=r), name="Z")
    s = ts.create_schedule(Z.op)
    s[Z].tensorize(Z.op.axis[1], dot)
    text = str(ts.lower(s, [X, Y, Z]))
    assert "call dot16(&X[i, 0], 1, &Y[0, i], 8, &Z[i, 0], 1)" in text
    f = ts.build(s, [X, Y, Z])
    x, y = data(8, 16), data(16, 8)
    np.testing.assert_allclose(f(x, y)[:, 0], np.einsum("ir,ri->i", x, y), rtol=1e-5)


def gemm(n=32, m=48, l=32):
    A = ts.placeholder((n, l), name="A")
    B = ts.placeholder((l, m), name="B")
    k = ts.reduce_axis((0, l), name="k")
    C = ts.compute((n, m), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_gemm_micro_tile():
    A, B, C = gemm()
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 16)
    s[C].tensorize(ii, micro_intrin(fused=False))
    f = ts.build(s, [A, B, C])
    a, b = data(32, 32), data(32, 48)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-4)


def gemm_bias_relu():
    A, B, C = gemm()
    bias = ts.placeholder((48,), name="bias")
    O = ts.compute(C.shape, lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="O")
    return A, B, bias, C, O


def reference_bias_relu(a, b, bias):
    return np.maximum(a @ b + bias, 0)


def tiled_bias_relu(gemm_at: str):
    """gemm -> bias+relu, the output tiled 4x16 and the gemm computed at its loop ``gemm_at``."""
    A, B, bias, C, O = gemm_bias_relu()
    s = ts.create_schedule(O.op)
    i, j = O.op.axis
    loops = dict(zip(("io", "jo", "ii", "ji"), s[O].tile(i, j, 4, 16)))
    s[C].compute_at(s[O], loops[gemm_at])
    return s, (A, B, bias, C, O), loops


def check_bias_relu(s, tensors):
    A, B, bias, C, O = tensors
    f = ts.build(s, [A, B, bias, O])
    a, b, bb = data(32, 32, shift=.5), data(32, 48), data(48, shift=.5)
    np.testing.assert_allclose(f(a, b, bb), reference_bias_relu(a, b, bb), rtol=1e-4, atol=1e-5)


def test_fused_epilogue_matches_one_intrinsic():
    """gemm computed at the tile of the bias+relu stage: one call computes all of it."""
    s, tensors, loops = tiled_bias_relu("jo")
    s[tensors[-1]].tensorize(loops["ii"], micro_intrin(fused=True))
    text = str(ts.lower(s, [tensors[0], tensors[1], tensors[2], tensors[4]]))
    assert text.count("call mm_bias_relu(") == 1 and "produce C" not in text
    check_bias_relu(s, tensors)


def test_gemm_core_intrinsic_with_epilogue_as_fused_loop():
    """The intrinsic covers the gemm; bias+relu stays a loop in the same tile."""
    s, tensors, loops = tiled_bias_relu("jo")
    A, B, bias, C, O = tensors
    s[C].tensorize(s[C].op.axis[0], micro_intrin(fused=False))
    s[O].vectorize(loops["ji"])
    text = str(ts.lower(s, [A, B, bias, O]))
    assert "call mm4x16(" in text and "vectorized for j.inner" in text
    check_bias_relu(s, tensors)


def test_epilogue_is_never_applied_per_partial_sum():
    """Splitting the reduction outside the region would apply relu to partial sums: refused."""
    a = ts.placeholder((4, 16), name="ia")
    b = ts.placeholder((16, 16), name="ib")
    k = ts.reduce_axis((0, 16), name="ik")
    c = ts.compute((4, 16), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="ic")
    out = ts.compute((4, 16), lambda i, j: ts.maximum(c[i, j], 0.0), name="iout")
    relu_gemm = ts.decl_tensor_intrin(out.op, ts.CIntrinsic(source="", reset="z", update="u"), name="g")
    A, B, C = gemm(l=32)
    O = ts.compute(C.shape, lambda i, j: ts.maximum(C[i, j], 0.0), name="O")
    s = ts.create_schedule(O.op)
    i, j = O.op.axis
    io, jo, ii, ji = s[O].tile(i, j, 4, 16)
    s[C].compute_at(s[O], jo)
    ck = s[C].op.reduce_axis[0]
    s[C].split(ck, factor=16)
    s[O].tensorize(ii, relu_gemm)
    with pytest.raises(ts.TensorizeError, match="extent"):
        ts.lower(s, [A, B, O])


def mismatch_cases():
    """(name, builder) pairs; each builder returns (schedule, args) that must fail to tensorize."""
    def split_gemv(fy=16, fk=16, body=None, l=64, reorder=True):
        A, B, C = matmul_bt(l=l)
        if body is not None:
            k = ts.reduce_axis((0, l), name="kk")
            C = ts.compute((32, 64), lambda x, y: ts.sum(body(A, B, x, y, k), axis=k), name="C")
        s, yi = gemv_split(C, fy, fk, reorder)
        return s, [A, B, C], yi

    cases = {}
    cases["extent of the spatial loop"] = (lambda: split_gemv(fy=8), "extent")
    cases["extent of the reduction loop"] = (lambda: split_gemv(fk=8), "extent")
    cases["operation"] = (lambda: split_gemv(body=lambda A, B, x, y, k: A[x, k] + B[y, k]), "expression")
    cases["operand order"] = (lambda: split_gemv(body=lambda A, B, x, y, k: B[y, k] * A[x, k]), "index map")
    cases["transposed access"] = (lambda: split_gemv(body=lambda A, B, x, y, k: A[x, k] * B[k, y]), "index map")
    cases["shifted index"] = (lambda: split_gemv(body=lambda A, B, x, y, k: A[x, k] * B[y, k // 2]), "index map")
    cases["constant"] = (lambda: split_gemv(body=lambda A, B, x, y, k: A[x, k] * B[y, k] * 2.0), "expression")
    cases["loop order"] = (lambda: split_gemv(reorder=False), "extent")
    return cases


@pytest.mark.parametrize("name", list(mismatch_cases()))
def test_mismatch_raises_with_reason(name):
    build, reason = mismatch_cases()[name]
    s, args, yi = build()
    s[args[-1]].tensorize(yi, gemv_intrin())
    with pytest.raises(ts.TensorizeError, match=reason):
        ts.lower(s, args)


def test_dtype_mismatch():
    A = ts.placeholder((32, 64), name="A", dtype="float64")
    B = ts.placeholder((64, 64), name="B", dtype="float64")
    k = ts.reduce_axis((0, 64), name="kk")
    C = ts.compute((32, 64), lambda x, y: ts.sum(A[x, k] * B[y, k], axis=k), name="C")
    s, yi = gemv_split(C)
    s[C].tensorize(yi, gemv_intrin())
    with pytest.raises(ts.TensorizeError, match="float64"):
        ts.lower(s, [A, B, C])


def test_stray_stage_inside_region():
    s, (A, B, bias, C, O), loops = tiled_bias_relu("ji")
    s[O].tensorize(loops["ii"], micro_intrin(fused=False))
    with pytest.raises(ts.TensorizeError):
        ts.lower(s, [A, B, bias, O])


def test_reset_update_required_for_split_reduction():
    A, B, C = matmul_bt()
    s, yi = gemv_split(C)
    s[C].tensorize(yi, gemv_intrin(body_only=True))
    with pytest.raises(ts.TensorizeError, match="needs an update= implementation"):
        ts.lower(s, [A, B, C])


def test_intrinsic_declaration_checks_identifiers():
    with pytest.raises(ValueError, match="C identifier"):
        ts.CIntrinsic(source="", body="not valid")
    with pytest.raises(ValueError, match="body"):
        ts.CIntrinsic(source="", reset="r")
    with pytest.raises(TypeError):
        ts.decl_tensor_intrin(ts.placeholder((4,), name="p"), ts.CIntrinsic(source="", body="f"))


# partial tiles run the plain loops; an intrinsic without reset leaves the clearing to plain loops ---------
def _plain_and_calls(text: str) -> tuple[int, int]:
    calls = sum(line.strip().startswith("call ") for line in text.splitlines())
    plain = sum(" C[" in line and "= " in line and not line.strip().startswith("call") for line in text.splitlines())
    return calls, plain


@pytest.mark.parametrize("m, l", [(60, 64), (64, 70), (60, 70), (20, 18)])
def test_update_intrinsic_with_partial_tiles(m, l):
    """y (and/or k) not divisible by 16: whole tiles call reset/update, the rest runs the plain loops."""
    A, B, C = matmul_bt(m=m, l=l)
    s, yi = gemv_split(C)
    s[C].tensorize(yi, gemv_intrin())
    text = str(ts.lower(s, [A, B, C]))
    calls, plain = _plain_and_calls(text)
    assert plain >= 1 and "call gemv16_zero(" in text and "call gemv16_acc(" in text, text
    f = ts.build(s, [A, B, C])
    a, b = data(32, l), data(m, l)
    np.testing.assert_allclose(f(a, b), a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)


def test_body_intrinsic_with_partial_tiles():
    A, B, C = matmul_bt(m=40, l=16)
    s = ts.create_schedule(C.op)
    yo, yi = s[C].split(C.op.axis[1], factor=16)
    s[C].tensorize(yi, gemv_intrin())
    text = str(ts.lower(s, [A, B, C]))
    assert "call gemv16(" in text and "C[x, y.inner + 32] = 0.0f" in text, text    # two whole tiles, then 8
    f = ts.build(s, [A, B, C])
    a, b = data(32, 16), data(40, 16)
    np.testing.assert_allclose(f(a, b), a @ b.T, rtol=1e-4)


@pytest.mark.parametrize("m, l", [(64, 64), (60, 70)])
def test_intrinsic_with_body_and_update_but_no_reset(m, l):
    """TVM accepts an intrinsic without reset: the output tile is cleared by the reduction's own init
    loop, then every partial product is accumulated by update."""
    A, B, C = matmul_bt(m=m, l=l)
    s, yi = gemv_split(C)
    s[C].tensorize(yi, gemv_intrin(reset=False))
    text = str(ts.lower(s, [A, B, C]))
    assert "gemv16_zero" not in text and "call gemv16_acc(" in text, text
    assert "= 0.0f" in text.split("for kk.outer")[0], text       # cleared before the reduction loops
    f = ts.build(s, [A, B, C])
    a, b = data(32, l), data(m, l)
    np.testing.assert_allclose(f(a, b), a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)


def test_partial_tiles_of_an_intrinsic_computing_two_stages_are_refused():
    A = ts.placeholder((30, 32), name="A")
    B = ts.placeholder((32, 48), name="B")
    bias = ts.placeholder((48,), name="bias")
    k = ts.reduce_axis((0, 32), name="k")
    C = ts.compute((30, 48), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    O = ts.compute((30, 48), lambda i, j: ts.maximum(C[i, j] + bias[j], 0.0), name="O")
    s = ts.create_schedule(O.op)
    io, jo, ii, ji = s[O].tile(O.op.axis[0], O.op.axis[1], 4, 16)
    s[C].compute_at(s[O], jo)
    s[O].tensorize(ii, micro_intrin(fused=True))
    with pytest.raises(ts.TensorizeError, match="do not tile i exactly.*partial tiles.*also computes C"):
        ts.lower(s, [A, B, bias, O])


def test_a_user_reducer_named_sum_does_not_match_a_sum_intrinsic():
    """The match keys a reduction by its reducer, not only its name: ``comm_reducer(..., name="sum")``
    computing a product must not be replaced by a sum intrinsic."""
    n = 8

    def declare(reducer):
        A = ts.placeholder((n,), name="A")
        k = ts.reduce_axis((0, n), name="k")
        return A, ts.compute((1,), lambda i: reducer(A[k], axis=k), name="C")

    _, C = declare(ts.sum)
    intrin = ts.decl_tensor_intrin(C.op, ts.CIntrinsic("void vsum(void) {}", body="vsum"))
    fake_sum = ts.comm_reducer(lambda x, y: x * y, 1.0, name="sum")
    A, D = declare(fake_sum)
    s = ts.create_schedule(D.op)
    s[D].tensorize(D.op.axis[0], intrin)
    with pytest.raises(ts.TensorizeError, match="does not match"):
        ts.lower(s, [A, D])
