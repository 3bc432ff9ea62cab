"""Narrow dot products: u8 x s8 and s8 x s8 into int32 (AVX-512 VNNI) and bfloat16 pairs into float32
(AVX-512 BF16), built for forced targets. The machine code holds the instruction exactly when the target
has the feature; results match NumPy on every target the host can run."""
import shutil
import subprocess

import numpy as np
import pytest

import tesched as ts
from tesched.driver.cache import cache_dir
from tesched.target import host_features

M, N, K = 3, 40, 8   # 40 columns: two vectors of 16 lanes and a tail of 8
TARGETS = {
    "x86-64-avx512+avx512_vnni+avx512_bf16": ({"avx512f", "avx512_vnni", "avx512_bf16"}, True),
    "x86-64-avx512": ({"avx512f"}, False),
    "x86-64-avx2": ({"avx2"}, False),
    "c": (set(), False),
}


def _products():
    """u8 x s8 with the u8 operand broadcast, s8 x s8 with it per lane, and bfloat16 pairs."""
    a = ts.placeholder((M, K), "uint8", name="a")
    b = ts.placeholder((K // 4, N, 4), "int8", name="b")
    x = ts.placeholder((K // 4, N, 4), "int8", name="x")
    w = ts.placeholder((M, K), "int8", name="w")
    p = ts.placeholder((M, K), "bfloat16", name="p")
    q = ts.placeholder((K // 2, N, 2), "bfloat16", name="q")
    k4, t4 = ts.reduce_axis((0, K // 4), "k4"), ts.reduce_axis((0, 4), "t4")
    k8, t8 = ts.reduce_axis((0, K // 4), "k8"), ts.reduce_axis((0, 4), "t8")
    k2, t2 = ts.reduce_axis((0, K // 2), "k2"), ts.reduce_axis((0, 2), "t2")
    u8s8 = ts.compute((M, N), lambda i, j: ts.sum(a[i, 4 * k4 + t4].astype("int32") * b[k4, j, t4].astype("int32"),
                                                  axis=[k4, t4]), name="u8s8")
    s8s8 = ts.compute((M, N), lambda i, j: ts.sum(x[k8, j, t8].astype("int32") * w[i, 4 * k8 + t8].astype("int32"),
                                                  axis=[k8, t8]), name="s8s8")
    bf16 = ts.compute((M, N), lambda i, j: ts.sum(p[i, 2 * k2 + t2].astype("float32") *
                                                  q[k2, j, t2].astype("float32"), axis=[k2, t2]), name="bf16")
    s = ts.create_schedule([u8s8.op, s8s8.op, bf16.op])
    for out in (u8s8, s8s8, bf16):
        i, j = s[out].op.axis
        ko, kt = s[out].op.reduce_axis
        s[out].reorder(i, ko, j, kt)
        s[out].vectorize(j)
    return s, [a, b, x, w, p, q, u8s8, s8s8, bf16]


def _machine_code(kernel) -> str:
    module = next(cache_dir().glob(f"_tesched_{kernel.cache_key[:24]}*.so"))
    return subprocess.run(["objdump", "-d", str(module)], capture_output=True, text=True).stdout


@pytest.mark.parametrize("target", list(TARGETS))
def test_dot_products_use_the_targets_instructions(target, rng):
    needs, has_instructions = TARGETS[target]
    s, args = _products()
    with ts.Target(target):
        kernel = ts.build(s, args, name=f"dots_{target.replace('-', '_').replace('+', '_')}")
    calls = ("vnni_dot4_u8s8_bv", "vnni_dot4_s8s8_vb", "bf16_dot2_bf16_bv")
    assert all((c in kernel.c_source) == has_instructions for c in calls)
    if target != "c":
        assert all(c.split("_", 1)[1] in kernel.c_source for c in calls)   # the pattern was found
    if shutil.which("objdump"):
        asm = _machine_code(kernel)
        assert ("vpdpbusd" in asm) == has_instructions and ("vdpbf16ps" in asm) == has_instructions
    if not needs <= host_features():
        pytest.skip(f"this host cannot run {target}")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    x, w = rng.integers(-128, 128, (K, N)).astype(np.int8), rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    p, q = (rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for shape in ((M, K), (K, N)))
    a[0], w[0], x[:, 0] = 255, -128, -128                           # the extremes of each operand
    pack = lambda m, g: np.ascontiguousarray(m.reshape(K // g, g, N).transpose(0, 2, 1))   # noqa: E731
    u8s8, s8s8, bf16 = kernel(a, pack(b, 4), pack(x, 4), w, p, pack(q, 2))
    np.testing.assert_array_equal(u8s8, a.astype(np.int32) @ b.astype(np.int32))
    np.testing.assert_array_equal(s8s8, w.astype(np.int32) @ x.astype(np.int32))
    np.testing.assert_allclose(bf16, p.astype(np.float64) @ q.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_other_shapes_are_left_to_the_vectorizer():
    """A group loop of 3, or an operand that is not narrow, is not the pattern."""
    a = ts.placeholder((2, 6), "uint8", name="a")
    b = ts.placeholder((2, 32, 3), "int8", name="b")
    k, t = ts.reduce_axis((0, 2), "k"), ts.reduce_axis((0, 3), "t")
    c = ts.compute((2, 32), lambda i, j: ts.sum(a[i, 3 * k + t].astype("int32") * b[k, j, t].astype("int32"),
                                                axis=[k, t]), name="c")
    s = ts.create_schedule(c.op)
    i, j = s[c].op.axis
    s[c].reorder(i, k, j, t)
    s[c].vectorize(j)
    kernel = ts.build(s, [a, b, c], name="dot3")
    assert "dot4" not in kernel.c_source
    av = np.arange(12, dtype=np.uint8).reshape(2, 6)
    bv = (np.arange(192) % 251 - 125).astype(np.int8).reshape(2, 32, 3)
    expected = np.einsum("ikt,kjt->ij", av.reshape(2, 2, 3).astype(np.int32), bv.astype(np.int32))
    np.testing.assert_array_equal(kernel(av, bv), expected)
