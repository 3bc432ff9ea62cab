"""Tests of tesched.codegen.entry: the exported entry point's prototype (buffers in argument order, inputs
const, sizes after them) and the checks its body makes before calling the kernel."""
import tesched as ts
from tesched.codegen.c import CSource
from tesched.codegen.entry import kernel_entry, prototype
from tesched.codegen.signature import signature_of
from tesched.tools.demo import DemoSizes, declare_conv_relu


def test_prototype_of_the_issue_example():
    net = declare_conv_relu(DemoSizes(1, 3, 8, 8, 0, 1))
    func = ts.lower(ts.create_schedule(net.relu.op), [net.data, net.weight, net.relu], name="conv_relu")
    assert prototype("conv_relu", signature_of(func)) == \
        "int conv_relu(const float *data, const float *weight, float *relu)"


def symbolic():
    n = ts.var("n")
    A = ts.placeholder((n, 4), name="A")
    B = ts.compute((n + 1, 4), lambda i, j: A[i % n, j] * 2.0, name="B")
    return signature_of(ts.lower(ts.create_schedule(B.op), [A, B], name="grow"))


def test_sizes_follow_the_buffers():
    assert prototype("grow", symbolic()) == "int grow(const float *A, float *B, int64_t n)"


def test_the_entry_checks_sizes_pointers_overlap_and_maps_the_status():
    kernel = CSource(name="grow_kernel", source="", declaration="int grow_kernel(float *, float *, int64_t);")
    text = kernel_entry(symbolic(), "grow", kernel, "{}", "x86-64", frozenset({"sse4_2"}), "grow.h")
    body = text.source[text.source.index("TS_PUBLIC int grow("):]
    checks = ["ts_check_cpu()", "if (s0 < 1)", "if (a0 == NULL)", "ts_bytes(4, 2, d1)", "ts_overlap(a1, b1, a0, b0)",
              "grow_kernel((float *)a0, a1, s0)"]
    positions = [body.index(c) for c in checks]
    assert positions == sorted(positions)
    assert "const int64_t d1[2] = {(int64_t)((s0 + 1)), 4};" in body
    assert '__builtin_cpu_supports("sse4.2")' in text.source
    assert "  B  output  float32[n + 1, 4]" in text.header
