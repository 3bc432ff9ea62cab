"""Tests of tesched.driver.library: the one list of build commands (kernels with the target's flags, entry
points without them, hidden symbols localized in archives), run to build a library or written as a
Makefile; a unit that does not compile raises BuildError with the compiler's diagnostic."""
import subprocess

import pytest

import tesched as ts
from tesched.driver.library import ENTRY_FLAGS, LibrarySources, Unit, build_library, build_steps, write_sources

HEADER = "int twice(int x);\n"
KERNEL = "__attribute__((visibility(\"hidden\"))) int twice_kernel(int x) { return 2 * x; }\n"
ENTRY = ('#include "twice.h"\nint twice_kernel(int x);\n'
         '__attribute__((visibility("default"))) int twice(int x) { return twice_kernel(x); }\n')


def sources(kernel: str = KERNEL) -> LibrarySources:
    return LibrarySources("twice", HEADER, (Unit("twice_kernel.c", kernel, True), Unit("twice.c", ENTRY, False)),
                          ts.Target("x86-64-avx2"))


def test_kernels_get_the_target_flags_and_entries_do_not():
    steps = build_steps(sources(), False, "twice.so", ["cc"], ["-march=x86-64-v3"], list(ENTRY_FLAGS))
    assert [s.output for s in steps] == ["twice_kernel.o", "twice.o", "twice.so"]
    assert "-march=x86-64-v3" in steps[0].command and "-march=x86-64-v3" not in steps[1].command
    assert steps[2].command[:3] == ("cc", "-shared", "-o")


def test_archives_localize_hidden_symbols():
    steps = build_steps(sources(), True, "libtwice.a", ["cc"], [], [])
    assert [s.command[0] for s in steps[2:]] == ["cc", "objcopy", "ar"]
    assert steps[3].command == ("objcopy", "--localize-hidden", "twice_combined.o")


@pytest.mark.parametrize("name", ["twice.so", "libtwice.a"])
def test_build_library_and_call_it(tmp_path, name):
    library = build_library(sources(), tmp_path / name, name.endswith(".a"))
    assert (tmp_path / "twice.h").read_text() == HEADER
    (tmp_path / "main.c").write_text('#include <stdio.h>\n#include "twice.h"\n'
                                     'int main(void) { printf("%d", twice(21)); }\n')
    extra = ["-fopenmp"] if name.endswith(".a") else [f"-Wl,-rpath,{tmp_path}"]
    subprocess.run(["gcc", "-I", str(tmp_path), str(tmp_path / "main.c"), str(library), "-o", str(tmp_path / "main"),
                    *extra], check=True)
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout == "42"


def test_a_unit_that_does_not_compile_names_the_library_and_shows_the_diagnostic(tmp_path):
    with pytest.raises(ts.BuildError, match=r"(?s)C compilation of twice failed:.*twice_kernel.c:1.*error.*"
                                            r"--- source ---"):
        build_library(sources("int twice_kernel(int x) { return y; }\n"), tmp_path / "twice.so", False)


def test_the_makefile_builds_what_build_library_builds(tmp_path):
    files = write_sources(sources(), tmp_path)
    makefile = (tmp_path / "Makefile").read_text()
    assert "KERNEL_FLAGS = -O3 -march=x86-64-v3" in makefile and "all: twice.so libtwice.a" in makefile
    assert {f.name for f in files} >= {"twice.c", "twice_kernel.c", "twice.h", "tesched_runtime.h", "Makefile"}
    subprocess.run(["make", "-s", "-C", str(tmp_path)], check=True)
    assert (tmp_path / "twice.so").exists() and (tmp_path / "libtwice.a").exists()
    subprocess.run(["make", "-s", "-C", str(tmp_path), "clean"], check=True)
    assert not (tmp_path / "twice.so").exists()
