"""Tests of tesched.driver.elf: a named section read from an ELF file without loading it; files that are
not 64-bit little-endian ELF, or are damaged, raise ModuleLoadError naming the file."""
import subprocess

import pytest

import tesched as ts
from tesched.driver.elf import read_section


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("elf")
    (tmp / "s.c").write_text('__attribute__((used, section(".my_note"))) static const char note[] = "hello";\n'
                             "int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp / "s.c"), "-o", str(tmp / "s.so")], check=True)
    return tmp / "s.so"


def test_reads_a_named_section(library):
    assert read_section(library, ".my_note") == b"hello\0"
    assert read_section(library, ".text") and read_section(library, ".no_such_section") is None


def test_non_elf_and_damaged_files_raise(library, tmp_path):
    (tmp_path / "text").write_text("not a library")
    with pytest.raises(ts.ModuleLoadError, match="text: not an ELF shared library"):
        read_section(tmp_path / "text", ".my_note")
    (tmp_path / "short").write_bytes(library.read_bytes()[:40])
    with pytest.raises(ts.ModuleLoadError, match="short: not a 64-bit little-endian ELF file"):
        read_section(tmp_path / "short", ".my_note")
    cut = library.read_bytes()
    (tmp_path / "cut").write_bytes(cut[:len(cut) // 2])
    with pytest.raises(ts.ModuleLoadError, match="cut: damaged ELF file"):
        read_section(tmp_path / "cut", ".my_note")
