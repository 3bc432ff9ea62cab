"""Compiling external library source: the translation unit, the disk cache, and compiler messages."""
import cffi
import pytest

from tesched.graph.external_compile import CompileFailure, compile_shared_library, translation_unit

SOURCE = "int64_t twice(int64_t x) { return 2 * x; }"
PROTOTYPES = ["int64_t twice(int64_t);"]


def test_the_translation_unit_puts_the_prototypes_after_the_source():
    text = translation_unit(SOURCE, PROTOTYPES)
    assert text.index("#include <stdint.h>") < text.index(SOURCE) < text.index(PROTOTYPES[0])
    assert '#line 1 "<library source>"' in text and '#line 1 "<declared signatures>"' in text


def test_a_library_is_compiled_once_and_loads(isolated_cache):
    path = compile_shared_library(SOURCE, PROTOTYPES)
    assert path.parent == isolated_cache and path.suffix == ".so"
    built_at = path.stat().st_mtime_ns
    assert compile_shared_library(SOURCE, PROTOTYPES) == path and path.stat().st_mtime_ns == built_at
    assert compile_shared_library(SOURCE, PROTOTYPES, ["-O1"]) != path   # other flags, another library
    ffi = cffi.FFI()
    ffi.cdef(PROTOTYPES[0])
    assert ffi.dlopen(str(path)).twice(21) == 42
    assert not [p for p in isolated_cache.iterdir() if p.name.startswith("build-external-")]


def test_compiler_errors_point_at_the_users_lines(isolated_cache):
    libraries_before = sorted(isolated_cache.glob("libtesched_external_*"))
    with pytest.raises(CompileFailure) as caught:
        compile_shared_library("\n\nint64_t twice(int64_t x) { return 2 * y; }", PROTOTYPES)
    assert "<library source>:3:" in caught.value.messages and "'y' undeclared" in caught.value.messages
    with pytest.raises(CompileFailure, match=r"<declared signatures>:1:.*conflicting types for 'twice'"):
        compile_shared_library(SOURCE, ["int32_t twice(int64_t);"])
    assert sorted(isolated_cache.glob("libtesched_external_*")) == libraries_before   # failures leave nothing
