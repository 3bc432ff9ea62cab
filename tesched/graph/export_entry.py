"""The public C entry point of an exported graph, and its header.

``int model(const float *data, ..., float *output, ...)`` takes the graph's inputs in the order of its
parameters, then its outputs. It checks the CPU, that the constants are there, that no array is ``NULL``
and that no output overlaps another argument; then it allocates one scratch block for the intermediate
tensors (a failure is ``TESCHED_ERROR_ALLOCATION`` naming them and the byte count), runs every kernel in
order (a kernel that cannot allocate a heap buffer is reported the same way, naming the group and the
buffer), copies the results no kernel writes, and frees the block. Embedded constants come from an ``.incbin`` of the
blob; a side file is read by ``model_load_constants(path)``, which checks its header (size, SHA-256 of the
payload) and checksum before the first call may use it. This module writes C text only.
"""
from __future__ import annotations

import numpy as np

from tesched.codegen.argv import argv_function
from tesched.codegen.export_text import c_string, entry_prelude, error_lines, header, public_names
from tesched.graph.export_plan import ALIGN, SIDE_FILE_MAGIC, ConstantsLayout, Plan, Step, Value
from tesched.target import Target
from tesched.te import dtype as dt


def graph_entry(program: Plan, prefix: str, constants: ConstantsLayout, manifest_json: str,
                target: Target) -> tuple[str, str]:
    """The header and entry source of ``program`` exported as C function ``prefix``.

    Parameters
    ----------
    program : Plan
        The planned graph.
    prefix : str
        The public function's name (a C identifier).
    constants : ConstantsLayout
        How the constants ship (embedded or in a side file).
    manifest_json : str
        The build record embedded in the library.
    target : Target
        What the kernels are compiled for (named in the header, its features checked at run time).

    Returns
    -------
    tuple of str
        The header's text and the entry source's text.
    """
    arguments = program.inputs + program.outputs
    public = public_names([v.name for v in arguments], taken=(prefix,))
    types = [f"{'const ' if v.place == 'input' else ''}{_ctype(v)} *" for v in arguments]
    args = [f"{t}{n}" for t, n in zip(types, public)]
    proto = f"int {prefix}({', '.join(args)})"
    declarations = [f"{proto};"]
    codes = ["TESCHED_ERROR_ARGUMENT", "TESCHED_ERROR_ALLOCATION", "TESCHED_ERROR_CPU"]
    if constants.file is not None:
        declarations.append(f"int {prefix}_load_constants(const char *path);")
        codes.append("TESCHED_ERROR_CONSTANTS")
    width = max(len(n) for n in public)
    doc = [f"{prefix}: a graph exported by tesched for target {target.name}"
           + (f" (CPU features: {', '.join(sorted(target.isa_features))})." if target.isa_features else "."), "",
           f"  {proto};", ""]
    doc += [f"  {n:<{width}}  {v.place:<6}  {v.type.dtype}[{', '.join(map(str, v.type.shape))}]"
            for v, n in zip(arguments, public)]
    doc += ["", f"It runs {len(program.steps)} kernels: {', '.join(s.group for s in program.steps)}."]
    if constants.file is not None:
        doc += [f"Its constants ({len(constants.blob):,} bytes) are in {constants.file}: call "
                f"{prefix}_load_constants(path) once before the first call."]
    else:
        doc += [f"Its constants ({len(constants.blob):,} bytes) are embedded in the library."]
    doc += ["Arrays are C-contiguous (row-major); an output must not overlap another argument.",
            f"Returns TESCHED_OK (0), or an error code and {prefix}_last_error() says what went wrong:",
            *error_lines(codes),
            "Parallel loops run on OpenMP threads (OMP_NUM_THREADS); several threads may call it at once.",
            "Link with the shared library, or with the static one and -fopenmp -lm."]
    lines = entry_prelude(f"{prefix}.h", manifest_json, prefix, prefix, target.name, target.isa_features)
    lines += [f"TS_HIDDEN {d}" for d in [src.declaration for src in program.kernels] + program.external_declarations]
    lines.append("")
    lines += _embedded(prefix, constants) if constants.file is None else _loader(prefix, constants)
    lines += _entry(program, prefix, types)
    return header(prefix, doc, declarations), "\n".join(lines + [""])


def _ctype(v: Value) -> str:
    return dt.C_TYPES[v.type.dtype]


def _embedded(prefix: str, constants: ConstantsLayout) -> list[str]:
    """The blob, included by the assembler, and ``ts_constants()`` returning it."""
    blob = f"{prefix}_constants_blob"
    asm = [".section .rodata.tesched_constants,\"a\",@progbits", ".balign 64", f".globl {blob}",
           f".hidden {blob}", f"{blob}:", f'.incbin "{prefix}_constants.bin"', ".previous"]
    return ["__asm__(" + "\n        ".join(c_string(line + "\n") for line in asm) + ");",
            f"extern const unsigned char {blob}[] TS_HIDDEN;", "",
            f"static const unsigned char *ts_constants(void) {{ return {blob}; }}", ""]


def _loader(prefix: str, constants: ConstantsLayout) -> list[str]:
    """``prefix_load_constants(path)`` (reads and checks the side file once) and ``ts_constants()``."""
    size, digest = len(constants.blob), ", ".join(str(b) for b in constants.sha256)
    magic = c_string(SIDE_FILE_MAGIC.decode())
    return [
        "static unsigned char *ts_loaded_constants;",
        f"static const unsigned char ts_constants_id[32] = {{{digest}}};", "",
        f"TS_PUBLIC int {prefix}_load_constants(const char *path) {{",
        "  ts_message[0] = '\\0';",
        "  if (__atomic_load_n(&ts_loaded_constants, __ATOMIC_ACQUIRE)) return TESCHED_OK;",
        "  if (path == NULL) " + _fail("TESCHED_ERROR_CONSTANTS", f"{prefix}_load_constants: path is NULL"),
        '  FILE *file = fopen(path, "rb");',
        "  if (file == NULL) " + _fail("TESCHED_ERROR_CONSTANTS", f"{prefix}: cannot open the constants file ", ""),
        "  unsigned char head[64];",
        "  uint64_t size = 0, sum = 0;",
        "  const int read_head = fread(head, 1, sizeof head, file) == sizeof head;",
        "  if (read_head) { memcpy(&size, head + 8, 8); memcpy(&sum, head + 16, 8); }",
        f"  if (!read_head || memcmp(head, {magic}, 8) != 0 || size != UINT64_C({size}) ||",
        f"      sum != UINT64_C({constants.checksum}) || memcmp(head + 24, ts_constants_id, 32) != 0) {{",
        "    fclose(file);",
        "    " + _fail("TESCHED_ERROR_CONSTANTS", f"{prefix}: ",
                      f" does not hold this library's constants (it ships them in {constants.file})"),
        "  }",
        f"  unsigned char *data = (unsigned char *)ts_alloc_elems(1, {size});",
        "  const int complete = data != NULL && fread(data, 1, size, file) == size;",
        "  fclose(file);",
        "  if (data == NULL) " + _fail("TESCHED_ERROR_ALLOCATION", f"{prefix}: cannot allocate {size} bytes for its "
                                                                   "constants"),
        "  if (!complete || ts_checksum(data, size) != sum) {",
        "    ts_free(data);",
        "    " + _fail("TESCHED_ERROR_CONSTANTS", f"{prefix}: the constants file ",
                      " is truncated or damaged (checksum mismatch)"),
        "  }",
        "  unsigned char *none = NULL;",
        "  if (!__atomic_compare_exchange_n(&ts_loaded_constants, &none, data, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))",
        "    ts_free(data);   /* another thread loaded them first */",
        "  return TESCHED_OK;",
        "}", "",
        "static const unsigned char *ts_constants(void) {",
        "  return __atomic_load_n(&ts_loaded_constants, __ATOMIC_ACQUIRE);", "}", ""]


def _fail(code: str, message: str, after_path: str | None = None) -> str:
    """``return ts_fail(code, "message");``, or with ``after_path``, the message, the path, then
    ``after_path`` (user text never becomes part of the format)."""
    if after_path is None:
        return f"return ts_fail({code}, {c_string(message, printf=True)});"
    return f'return ts_fail({code}, {c_string(message, printf=True)} "%s" {c_string(after_path, printf=True)}, path);'


def scratch_offsets(buffers: list[Value]) -> tuple[list[int], int]:
    """Where each intermediate buffer starts in the one scratch block a call allocates (64-byte aligned),
    and the block's size."""
    offsets, size = [], 0
    for b in buffers:
        size += -size % ALIGN
        offsets.append(size)
        size += b.nbytes
    return offsets, size


def _pointer(v: Value, offsets: list[int]) -> str:
    """The C expression of value ``v``'s data, typed for a kernel argument."""
    t = _ctype(v)
    if v.place == "buffer":
        return f"({t} *)(scratch + {offsets[v.index]})"
    if v.place == "constant":
        return f"({t} *)(constants + {v.index})"
    return f"({t} *)a{v.index}" if v.place == "input" else f"o{v.index}"


def _entry(program: Plan, prefix: str, types: list[str]) -> list[str]:
    """The public function: checks, buffers, kernel calls, copies, cleanup."""
    arguments = program.inputs + program.outputs
    names = [f"a{v.index}" if v.place == "input" else f"o{v.index}" for v in arguments]
    params = ", ".join(f"{t}{n}" for t, n in zip(types, names))
    out = [f"TS_PUBLIC int {prefix}({params}) {{", "  ts_message[0] = '\\0';",
           "  if (ts_check_cpu()) return TESCHED_ERROR_CPU;",
           "  const unsigned char *constants = ts_constants();"]
    out.append("  if (constants == NULL) " + _fail("TESCHED_ERROR_CONSTANTS", f"{prefix}: its constants are not "
                                                   f"loaded: call {prefix}_load_constants(path) first"))
    for v, n in zip(arguments, names):
        out.append(f"  if ({n} == NULL) " + _fail("TESCHED_ERROR_ARGUMENT", f"{prefix}: {v.place} {v.name} is NULL"))
    for v, n in zip(program.outputs, names[len(program.inputs):]):
        for w, m in zip(arguments, names):
            if m != n:
                out.append(f"  if (ts_overlap({n}, {v.nbytes}, {m}, {w.nbytes})) " + _fail(
                    "TESCHED_ERROR_ARGUMENT", f"{prefix}: output {v.name} overlaps {w.place} {w.name} in memory"))
    offsets, size = scratch_offsets(program.buffers)
    out += ["  int code = TESCHED_OK, status = 0;"]
    if program.buffers:
        buffer_names = ", ".join(b.name for b in program.buffers)
        message = f"{prefix}: cannot allocate {size} bytes for its intermediate tensors ({buffer_names})"
        out += [f"  unsigned char *scratch = (unsigned char *)ts_alloc_elems(1, {size});",
                "  if (scratch == NULL) " + _fail("TESCHED_ERROR_ALLOCATION", message)]
    for step in program.steps:
        pointers = ", ".join(_pointer(v, offsets) for v in step.args)
        if step.sizes is not None:       # an external function: sizes after the arrays, no status
            sizes = "".join(f", INT64_C({n})" for n in step.sizes)
            out.append(f"  {step.function}({pointers}{sizes});")
            continue
        out.append(f"  status = {step.function}({pointers});")
        for k, message in _status_messages(prefix, step):
            condition = "status != 0" if k is None else f"status == {k}"
            failure = f"ts_fail(TESCHED_ERROR_ALLOCATION, {c_string(message, printf=True)})"
            out.append(f"  if ({condition}) {{ code = {failure}; goto done; }}")
    for dst, src in program.copies:
        out.append(f"  memcpy({_pointer(dst, offsets)}, {_pointer(src, offsets)}, {dst.nbytes});")
    out += ["done:", *(["  ts_free(scratch);"] if program.buffers else []), "  return code;", "}", ""]
    return out + [argv_function(prefix, types, qualifiers="TS_PUBLIC")]


def _status_messages(prefix: str, step: Step) -> list[tuple[int | None, str]]:
    """(status, message) for each heap buffer of the step's kernel, then (None, the message for any other
    nonzero status)."""
    out: list[tuple[int | None, str]] = []
    for k, buf in enumerate(step.heap):
        if buf.shape is None:
            what = f"buffer {buf.name} ({buf.dtype})"
        else:
            nbytes = int(np.prod(buf.shape, dtype=np.int64)) * dt.DTYPES[buf.dtype].itemsize
            what = f"buffer {buf.name} of {nbytes} bytes ({buf.dtype}[{', '.join(map(str, buf.shape))}])"
        out.append((k + 1, f"{prefix}: kernel {step.group} cannot allocate {what}"))
    return out + [(None, f"{prefix}: kernel {step.group} failed to allocate memory")]
