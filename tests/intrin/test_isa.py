"""Which micro-kernel path is selected (tesched.intrin.isa): the host's widest within tesched's vector
width, or the one TESCHED_INTRIN_ISA asks for; unknown and unsupported paths are refused."""
import pytest

from tesched.intrin import gemm_microkernel, select_isa
from tesched.target import current_target

from .helpers import HOST_ISAS


def test_selected_isa_follows_the_host(monkeypatch):
    monkeypatch.delenv("TESCHED_INTRIN_ISA", raising=False)
    flags = current_target().features
    if "avx512f" in flags and current_target().vector_bytes == 64:
        expected = "avx512"
    elif {"avx2", "fma"} <= flags and current_target().vector_bytes >= 32:
        expected = "avx2"
    else:
        expected = "c"
    assert select_isa() == expected
    assert HOST_ISAS[-1] == "c" and expected in HOST_ISAS


def test_narrower_vector_width_selects_a_narrower_path(monkeypatch):
    monkeypatch.delenv("TESCHED_INTRIN_ISA", raising=False)
    monkeypatch.setenv("TESCHED_TARGET", "host")          # TESCHED_VECTOR_BYTES narrows the host target
    monkeypatch.setenv("TESCHED_VECTOR_BYTES", "32")
    assert select_isa() == ("avx2" if {"avx2", "fma"} <= current_target().features else "c")
    monkeypatch.setenv("TESCHED_VECTOR_BYTES", "16")
    assert select_isa() == "c"


def test_selected_isa_is_the_one_compiled(monkeypatch):
    monkeypatch.delenv("TESCHED_INTRIN_ISA", raising=False)
    intrin = gemm_microkernel(4, 16, 8)
    assert intrin.name.startswith(f"tesched_gemm_{select_isa()}_float32_")
    prefix = {"avx512": "_mm512_fmadd_ps", "avx2": "_mm256_fmadd_ps", "c": None}[select_isa()]
    assert (prefix is None and "immintrin" not in intrin.impl.source) or prefix in intrin.impl.source


def test_environment_forces_the_plain_c_path(monkeypatch):
    monkeypatch.setenv("TESCHED_INTRIN_ISA", "c")
    assert select_isa() == "c"
    intrin = gemm_microkernel(4, 16, 8)
    assert "_c_" in intrin.name and "immintrin" not in intrin.impl.source


def test_unknown_or_unsupported_isa_is_refused(monkeypatch):
    with pytest.raises(ValueError, match="unknown"):
        select_isa("neon")
    monkeypatch.setenv("TESCHED_INTRIN_ISA", "sse9")
    with pytest.raises(ValueError, match="unknown"):
        gemm_microkernel(4, 16, 8)
    missing = [isa for isa in ("avx512", "avx2") if isa not in HOST_ISAS]
    if missing:
        with pytest.raises(ValueError, match="does not support"):
            select_isa(missing[0])
