"""C text shared by the entry points of exported libraries (kernels and graphs).

An exported library has one public C function per entry point, returning ``TESCHED_OK`` (0) or one of
:data:`ERROR_CODES`, a per-thread message accessor ``<prefix>_last_error()``, and ``<prefix>_build_info()``
returning the JSON record of what it was built for, which also sits in the ELF section
:data:`MANIFEST_SECTION` so that a loader can read it without running any of the library's code. This
module writes those pieces: the public header, the CPU check (one ``__builtin_cpu_supports`` test per
instruction-set feature the code may use), the record, the accessors, and the escaping of user text into
C string literals and comments. It knows nothing of kernels' loops or of compilers.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from tesched.codegen.argv import ARGV_SUFFIX, argv_prototype
from tesched.codegen.names import NameTable
from tesched.target import ISA_FEATURES

MANIFEST_SECTION = ".tesched_manifest"

ERROR_CODES: dict[str, int] = {
    "TESCHED_OK": 0,
    "TESCHED_ERROR_ARGUMENT": 1,      # a NULL array, or an output overlapping another argument
    "TESCHED_ERROR_SIZE": 2,          # a size parameter out of range, or a byte count overflowing int64
    "TESCHED_ERROR_ALLOCATION": 3,    # a buffer could not be allocated
    "TESCHED_ERROR_CPU": 4,           # the CPU lacks an instruction-set feature the code was compiled for
    "TESCHED_ERROR_CONSTANTS": 5,     # a graph's constants file is missing, unreadable or not its own
    "TESCHED_ERROR_INDEX": 6,         # a data-dependent index fell outside the tensor it reads
}

ERROR_MEANINGS: dict[str, str] = {
    "TESCHED_ERROR_ARGUMENT": "a NULL array, or an output overlapping another argument",
    "TESCHED_ERROR_SIZE": "a size out of range, or a byte count that overflows int64",
    "TESCHED_ERROR_ALLOCATION": "a buffer could not be allocated",
    "TESCHED_ERROR_CPU": "this CPU lacks an instruction-set feature the code was compiled for",
    "TESCHED_ERROR_CONSTANTS": "the constants file is missing, unreadable or belongs to another library",
    "TESCHED_ERROR_INDEX": "a data-dependent index fell outside the tensor it reads",
}

_CODES_BLOCK = "\n".join(
    ["#ifndef TESCHED_ERROR_CODES", "#define TESCHED_ERROR_CODES", "enum tesched_status {"]
    + [f"  {name} = {code}," for name, code in ERROR_CODES.items()] + ["};", "#endif"])


def c_string(text: str, printf: bool = False) -> str:
    """``text`` as a C string literal (ASCII, every special character escaped); with ``printf``, ``%`` is
    doubled so that the literal can be a format."""
    if printf:
        text = text.replace("%", "%%")
    out = []
    for ch in text:
        if ch in '"\\?':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def c_comment(text: str) -> str:
    """``text`` safe inside a ``/* ... */`` comment: no comment delimiters or trigraphs, printable ASCII only."""
    text = re.sub(r"[^ -~]", "?", text)
    return text.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")


def public_names(names: Sequence[str], taken: Iterable[str] = ()) -> list[str]:
    """Valid, distinct C identifiers resembling ``names`` (parameter names of a public prototype)."""
    table = NameTable(tuple(taken))
    return [table.fresh(name) for name in names]


def header(prefix: str, doc: Sequence[str], declarations: Sequence[str]) -> str:
    """The public header of an exported library: ``doc`` lines in a comment, the error codes, and
    ``declarations`` plus the message and build-record accessors of ``prefix``."""
    guard = f"TESCHED_{prefix.upper()}_H"
    comment = ["/* " + c_comment(doc[0])] + [(" * " + c_comment(line)).rstrip() for line in doc[1:]] + [" */"]
    return "\n".join(comment + [
        f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "", "#ifdef __cplusplus",
        'extern "C" {', "#endif", "", _CODES_BLOCK, "", *declarations, "",
        f"/* {prefix} with its arguments in one array: args[k] is the k-th array, or the address of the k-th",
        "   size (an int64_t) or parameter (of its type), in the order above. For callers that build",
        "   argument lists at run time. */",
        f"{argv_prototype(prefix + ARGV_SUFFIX)};", "",
        "/* The message of this thread's last failed call (\"\" after a call that succeeded). */",
        f"const char *{prefix}_last_error(void);",
        "/* What the library was built for (tesched version, target, CPU features, compiler, flags), as JSON. */",
        f"const char *{prefix}_build_info(void);", "", "#ifdef __cplusplus", "}", "#endif", "", "#endif", ""])


def error_lines(codes: Sequence[str]) -> list[str]:
    """Header comment lines listing what each of ``codes`` means."""
    return [f"  {code} ({ERROR_CODES[code]}): {ERROR_MEANINGS[code]}" for code in codes]


def entry_prelude(public_header: str, manifest_json: str, prefix: str, what: str, target_name: str,
                  features: Iterable[str]) -> list[str]:
    """The start of an entry translation unit: includes, the build record in its own section, the
    accessors, and ``ts_check_cpu()`` (0, or ``TESCHED_ERROR_CPU`` with a message naming the missing
    feature). ``what`` names the library in messages; ``features`` are keys of ``ISA_FEATURES``."""
    lines = [f'#include "{public_header}"', '#include "tesched_runtime.h"', '#include "tesched_export.h"', "",
             f"static const char ts_manifest[] __attribute__((used, section({c_string(MANIFEST_SECTION)}))) =",
             f"    {c_string(manifest_json)};", "",
             f"TS_PUBLIC const char *{prefix}_last_error(void) {{ return ts_message; }}",
             f"TS_PUBLIC const char *{prefix}_build_info(void) {{ return ts_manifest; }}", "",
             "static int ts_cpu_ok;", "", "static int ts_check_cpu(void) {",
             "  if (__atomic_load_n(&ts_cpu_ok, __ATOMIC_RELAXED)) return 0;"]
    wanted = sorted(features)
    if wanted:
        message = " ".join([c_string(f"{what}: this CPU lacks the ", printf=True), '"%s"',
                            c_string(f" instructions; the library was compiled for target {target_name} (export it "
                                     "again for a target this CPU supports)", printf=True)])
        lines += ["  const char *missing = NULL;", "  __builtin_cpu_init();"]
        lines += [f"  if (!__builtin_cpu_supports({c_string(ISA_FEATURES[f])})) missing = {c_string(f)};"
                  for f in wanted]
        lines += [f"  if (missing) return ts_fail(TESCHED_ERROR_CPU, {message}, missing);"]
    return lines + ["  __atomic_store_n(&ts_cpu_ok, 1, __ATOMIC_RELAXED);", "  return 0;", "}", ""]
