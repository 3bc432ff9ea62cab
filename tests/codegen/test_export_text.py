"""Tests of tesched.codegen.export_text: user text becomes C string literals and comments that compile and
print back exactly; the public header compiles as C and as C++."""
import subprocess

from hypothesis import given, settings, strategies as st

from tesched.codegen.export_text import c_comment, c_string, header, public_names


def print_strings(strings, tmp_path, printf=False):
    """Compile and run a C program printing ``strings`` (as C literals), one per line; its output."""
    calls = "".join(f'  printf({c_string(s, printf=True)});\n  printf("\\n");\n' if printf else
                    f'  fputs({c_string(s)}, stdout);\n  printf("\\n");\n' for s in strings)
    (tmp_path / "p.c").write_text(f"#include <stdio.h>\n/* {c_comment(' '.join(strings))} */\n"
                                  f"int main(void) {{\n{calls}  return 0;\n}}\n")
    subprocess.run(["gcc", "-Wall", "-Werror", "-Wno-format-security", "-Wno-format-zero-length",
                    str(tmp_path / "p.c"), "-o", str(tmp_path / "p")], check=True, capture_output=True)
    return subprocess.run([str(tmp_path / "p")], capture_output=True).stdout.decode("utf-8")


TRICKY = ['quote " and backslash \\', "%s %d %% %n", "trigraph ??= ??/", "comment */ /* end", "tab\tnew\nline",
          "nul-free ünïcödé ✓", ""]


def test_tricky_strings_print_back_exactly(tmp_path):
    assert print_strings(TRICKY, tmp_path) == "".join(s + "\n" for s in TRICKY)
    assert print_strings(TRICKY, tmp_path, printf=True) == "".join(s + "\n" for s in TRICKY)


@settings(max_examples=5, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=30),
                min_size=1, max_size=10))
def test_any_text_prints_back_exactly(tmp_path_factory, strings):
    tmp_path = tmp_path_factory.mktemp("strings")
    assert print_strings(strings, tmp_path, printf=True) == "".join(s + "\n" for s in strings)


def test_comments_cannot_be_closed_by_user_text():
    assert "*/" not in c_comment("a */ b") and "/*" not in c_comment("/* c") and "??" not in c_comment("??/")


def test_public_names_are_distinct_identifiers():
    assert public_names(["data", "da-ta", "data", "2x", "int"], taken=("k",)) == ["data", "da_ta", "data_2", "v2x",
                                                                                 "u_int"]


def test_header_compiles_as_c_and_cpp(tmp_path):
    text = header("k", ["k: doc */ with /* delimiters"], ["int k(const float *a, float *b, int64_t n);"])
    (tmp_path / "k.h").write_text(text)
    for compiler, suffix in (("gcc", "c"), ("g++", "cpp")):
        use = tmp_path / f"use.{suffix}"
        use.write_text('#include "k.h"\n#include "k.h"\nint main(void) { return TESCHED_OK; }\n')
        subprocess.run([compiler, "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path), str(use)], check=True)
