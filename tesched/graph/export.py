"""Export a built graph as one C library: the code behind ``Executable.export_library`` and ``export_c``.

The program is planned by :mod:`.export_plan` (kernels generated again for the target, external functions
given as C source compiled in, constants in one blob) and given one public entry point by
:mod:`.export_entry`; the library embeds a build record listing
its inputs, outputs and constants, so that :func:`.load.load_executable` calls it without a compiler.
Constants up to :data:`~.export_plan.EMBED_LIMIT` bytes are embedded by default, more go to a side file.
Compiling and writing files is :mod:`tesched.driver.library`'s job.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tesched.errors import BuildError
from tesched.driver.compiler import compiler_id, runtime_text
from tesched.driver.export import library_kind, public_prefix
from tesched.driver.library import ENTRY_FLAGS, LibrarySources, Unit, build_library, write_sources
from tesched.driver.manifest import BuildRecord, content_hash
from tesched.graph.export_entry import graph_entry
from tesched.graph.export_plan import EMBED_LIMIT, Built, Value, layout, plan, side_file
from tesched.graph.ir import Constant
from tesched.graph.visit import post_order
from tesched.target import Target, as_target


def graph_sources(exe: Built, prefix: str, target: Target, constants: str) -> LibrarySources:
    """The sources of ``exe`` exported for ``target`` as C function ``prefix``, its constants embedded
    (``constants="embed"``) or in a side file (``"file"``)."""
    program = plan(exe, prefix, target)
    consts = layout(bytes(program.constants), f"{prefix}.constants" if constants == "file" else None)
    compiler = compiler_id(target.compiler)
    interface = {"inputs": [_describe(v) for v in program.inputs], "outputs": [_describe(v) for v in program.outputs],
                 "constants": {"file": consts.file, "bytes": len(program.constants), "sha256": consts.sha256.hex()},
                 "kernels": [s.group for s in program.steps]}
    digest = content_hash([*(k.source for k in program.kernels), repr(interface), " ".join(target.flags),
                           " ".join(ENTRY_FLAGS), compiler, runtime_text()])
    record = BuildRecord.for_target("graph", prefix, prefix, target, compiler, digest, interface)
    header, entry = graph_entry(program, prefix, consts, record.to_json(), target)
    units = tuple(Unit(f"{src.name}.c", src.source, True) for src in program.kernels) + tuple(
        Unit(f"{prefix}_external_{k}.c", text, True) for k, text in enumerate(program.external_sources)) + (
        Unit(f"{prefix}.c", entry, False),)
    if consts.file is None:
        return LibrarySources(prefix, header, units, target, data={f"{prefix}_constants.bin": consts.blob})
    return LibrarySources(prefix, header, units, target, shipped={consts.file: side_file(consts)})


def _describe(v: Value) -> dict[str, Any]:
    return {"name": v.name, "dtype": v.type.dtype, "shape": list(v.type.shape)}


def _sources(exe: Built, name: str, explicit: bool, target: Target | str | None,
             constants: str) -> LibrarySources:
    if constants not in ("auto", "embed", "file"):
        raise ValueError(f"export of a graph: constants must be 'auto', 'embed' or 'file', got {constants!r}")
    dynamic = [p for p in exe.function.params if p.tensor_type.is_dynamic]
    if dynamic:
        raise BuildError(f"export of a graph: input {dynamic[0].name} has the dynamic shape "
                         f"{dynamic[0].tensor_type}; an exported library takes static shapes (build the graph "
                         "with the sizes to export)")
    built = {group.kernel.target for group in exe.kernels}
    machine = as_target(target) if target is not None or len(built) != 1 else built.pop() or as_target(None)
    prefix = public_prefix(name, explicit, machine, "export of a graph")
    if constants == "auto":
        total = sum(c.data.nbytes for c in post_order(exe.function.body) if isinstance(c, Constant))
        constants = "file" if total > EMBED_LIMIT else "embed"
    return graph_sources(exe, prefix, machine, constants)


def export_graph(exe: Built, path: str | Path, static: bool | None = None, target: Target | str | None = None,
                 name: str | None = None, constants: str = "auto") -> Path:
    """Compile ``exe`` into one library at ``path``, its header (and constants file) beside it; see
    :meth:`~tesched.graph.executor.Executable.export_library`."""
    out = Path(path)
    is_static = library_kind(out, static, "export of a graph")
    stem = out.name.split(".")[0]
    default = stem[3:] if stem.startswith("lib") and len(stem) > 3 else stem
    return build_library(_sources(exe, name or default, name is not None, target, constants), out, is_static)


def export_graph_c(exe: Built, directory: str | Path, target: Target | str | None = None,
                   name: str = "model", constants: str = "auto") -> list[Path]:
    """Write ``exe`` as C sources with a Makefile into ``directory``; see
    :meth:`~tesched.graph.executor.Executable.export_c`."""
    return write_sources(_sources(exe, name, True, target, constants), Path(directory))
