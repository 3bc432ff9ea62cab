"""tesched.target: targets from the host or from a name, their flags, and how build honours them."""
import numpy as np
import pytest

import tesched as ts
from tesched.errors import ConfigError
from tesched.target import ISA_FEATURES, current_target, host_features


def test_named_targets():
    avx2 = ts.Target("x86-64-avx2")
    assert avx2.vector_bytes == 32 and avx2.has("avx2", "fma") and "-march=x86-64-v3" in avx2.flags
    assert ts.Target("c").vector_bytes == 0 and not any(f.startswith("-march") for f in ts.Target("c").flags)
    vnni = ts.Target("x86-64-avx512+avx512_vnni")
    assert vnni.has("avx512f", "avx512_vnni") and "-mavx512vnni" in vnni.flags
    assert ts.Target("llvm") == ts.Target("host")


def test_host_target_reads_the_cpu_and_the_environment(monkeypatch):
    assert ts.Target().features == host_features() and "-march=native" in ts.Target().flags
    monkeypatch.setenv("TESCHED_VECTOR_BYTES", "16")
    assert ts.Target().vector_bytes == 16


def test_isa_features_are_what_compiled_code_may_use():
    assert ts.Target("x86-64-avx2").isa_features == {"sse4_2", "avx", "avx2", "fma", "f16c"}
    assert ts.Target("x86-64-avx512+avx512_vnni").isa_features >= {"avx512f", "avx512_vnni"}
    assert ts.Target("c").isa_features == frozenset()
    host = ts.Target()
    assert host.isa_features <= host.features and set(host.isa_features) <= set(ISA_FEATURES)
    assert "fpu" not in host.isa_features          # a CPU flag, not an instruction set code chooses


@pytest.mark.parametrize("spec, message", [
    ("rocm", "unknown target 'rocm'.*opencl, cuda"), ("cuda+fma", "GPU target cuda"), ("x86-64+turbo", "unknown feature"), ("c+avx512_vnni", "portable C"),
    ("", "described by a string"),
])
def test_bad_targets_are_named(spec, message):
    with pytest.raises(ConfigError, match=message):
        ts.Target(spec)


def test_with_target_sets_the_default():
    assert current_target() == ts.Target()
    with ts.Target("x86-64-avx2") as t:
        assert current_target() is t
    assert current_target() == ts.Target()


@pytest.mark.parametrize("spec", ["c", "x86-64-avx2"])
def test_build_honours_the_target(spec, rand):
    A = ts.placeholder((37,), name="A")
    B = ts.compute((37,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = ts.build(s, [A, B], target=spec, name=f"scale_{spec.replace('-', '_')}")
    host = ts.build(s, [A, B], name="scale_host")
    assert f.cache_key != host.cache_key
    assert ("ts_vload_" in f.c_source) == (spec != "c")
    a = rand(37)
    np.testing.assert_allclose(f(a), a * 2.0 + 1.0, rtol=1e-6)


def test_fixed_thread_count_reaches_the_c(rand):
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = ts.build(s, [A, B], target=ts.Target("host", threads=2))
    assert "num_threads(2)" in f.c_source
    a = rand(64)
    np.testing.assert_allclose(f(a), a + 1.0)


def test_amx_features_bring_the_tile_registers():
    bf16 = ts.Target("x86-64-avx512+amx_bf16")
    assert bf16.has("amx_tile", "amx_bf16") and not bf16.has("amx_int8")
    assert bf16.flags.count("-mamx-tile") == 1 and "-mamx-bf16" in bf16.flags
    both = ts.Target("x86-64+amx_int8+amx_bf16")
    assert both.has("amx_tile", "amx_int8", "amx_bf16") and both.flags.count("-mamx-tile") == 1
    # AMX kernels check the CPU and the OS themselves when they load, so an exported library does not require it
    assert not bf16.isa_features & {"amx_tile", "amx_bf16", "amx_int8"}


def test_vector_registers_follow_the_instruction_set():
    assert [ts.Target(t).vector_registers for t in ("x86-64-avx512", "x86-64-avx2", "x86-64", "c")] == [32, 16, 16, 0]
    host = ts.Target()
    assert host.vector_registers == (32 if "avx512f" in host.features else 16)
    assert ts.Target("opencl").vector_registers == 0
