"""Build the C sources of an exported library into a shared object or a static archive, or write them out
with a Makefile that builds the same.

A :class:`LibrarySources` is a public header, translation units and data files. Kernel units are compiled
with the target's flags; the entry unit (the public functions and their checks) with :data:`ENTRY_FLAGS`
only, so that it runs on any CPU of the architecture and can refuse one that lacks a feature the kernels
use. Every symbol but the public ones is hidden: in a shared object by ``-fvisibility=hidden``, in a static
archive by a partial link whose hidden symbols are then made local (``objcopy --localize-hidden``), so two
exported libraries never clash. :func:`build_steps` is the one list of commands: :func:`build_library`
runs it, :func:`write_sources` writes it as Makefile rules. This module does not generate C.
"""
from __future__ import annotations

import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tesched.driver.compiler import LINK_FLAGS, RUNTIME_DIR, run_tool
from tesched.target import Target

ENTRY_FLAGS = ("-O2", "-Wno-psabi")
COMMON_FLAGS = ("-fPIC", "-fwrapv", "-fvisibility=hidden")
LINK_LIBRARIES = (*LINK_FLAGS, "-lm")


@dataclass(frozen=True)
class Unit:
    """One translation unit: its file name, its text, and whether it holds kernels (compiled with the
    target's flags) or entry points (compiled with :data:`ENTRY_FLAGS`)."""

    file: str
    text: str
    is_kernel: bool


@dataclass(frozen=True)
class LibrarySources:
    """Everything an exported library is built from.

    Attributes
    ----------
    prefix : str
        The public name (a C identifier): the header is ``prefix.h``.
    header : str
        The public header's text.
    units : tuple of Unit
        The translation units.
    target : Target
        What the kernel units are compiled for.
    data : dict of str to bytes
        Files the units read while compiling (``.incbin``), written beside them.
    shipped : dict of str to bytes
        Files the library reads at run time, written beside it.
    """

    prefix: str
    header: str
    units: tuple[Unit, ...]
    target: Target
    data: Mapping[str, bytes] = field(default_factory=dict)
    shipped: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def header_name(self) -> str:
        return f"{self.prefix}.h"


@dataclass(frozen=True)
class Step:
    """One command of a build: the file it makes, the files it reads, and its arguments."""

    output: str
    inputs: tuple[str, ...]
    command: tuple[str, ...]


def build_steps(sources: LibrarySources, static: bool, output: str, cc: Sequence[str],
                kernel_flags: Sequence[str], entry_flags: Sequence[str], objcopy: str = "objcopy",
                ar: str = "ar") -> list[Step]:
    """The commands that build ``output`` (a shared object, or with ``static`` an archive) from
    ``sources``, with the given tools and flag lists (real ones, or Makefile variables)."""
    steps, objects = [], []
    for unit in sources.units:
        obj = unit.file.rsplit(".", 1)[0] + ".o"
        flags = kernel_flags if unit.is_kernel else entry_flags
        reads = (unit.file, sources.header_name, *sorted(sources.data)) if not unit.is_kernel else (unit.file,)
        steps.append(Step(obj, reads, (*cc, *COMMON_FLAGS, *flags, "-I.", "-c", unit.file, "-o", obj)))
        objects.append(obj)
    if not static:
        return steps + [Step(output, tuple(objects), (*cc, "-shared", "-o", output, *objects, *LINK_LIBRARIES))]
    combined = f"{sources.prefix}_combined.o"
    return steps + [
        Step(combined, tuple(objects), (*cc, "-r", "-nostdlib", "-o", combined, *objects)),
        Step(combined, tuple(objects), (objcopy, "--localize-hidden", combined)),
        Step(output, (combined,), (ar, "rcs", output, combined)),
    ]


def _write_inputs(sources: LibrarySources, directory: Path) -> list[Path]:
    """Write the units, the header, the data files and the runtime headers into ``directory``."""
    written = []
    for name, text in [(u.file, u.text) for u in sources.units] + [(sources.header_name, sources.header)]:
        (directory / name).write_text(text)
        written.append(directory / name)
    for name, blob in sources.data.items():
        (directory / name).write_bytes(blob)
        written.append(directory / name)
    for runtime in sorted(RUNTIME_DIR.glob("*.h")):
        shutil.copyfile(runtime, directory / runtime.name)
        written.append(directory / runtime.name)
    return written


def build_library(sources: LibrarySources, path: Path, static: bool) -> Path:
    """Compile ``sources`` into ``path`` (a shared object, or with ``static`` an archive) and write the
    public header and the shipped files beside it; returns ``path``. Raises :class:`~tesched.errors.BuildError` with the
    compiler's diagnostic if a step fails."""
    machine = sources.target
    with tempfile.TemporaryDirectory(prefix="tesched-export-") as tmp:
        work = Path(tmp)
        _write_inputs(sources, work)
        out = "library.a" if static else "library.so"
        for step in build_steps(sources, static, out, machine.compiler, machine.flags, ENTRY_FLAGS):
            text = next((u.text for u in sources.units if u.file in step.command), None)
            run_tool(step.command, work, sources.prefix, text)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / out, path)
    (path.parent / sources.header_name).write_text(sources.header)
    for name, blob in sources.shipped.items():
        (path.parent / name).write_bytes(blob)
    return path


def write_sources(sources: LibrarySources, directory: Path) -> list[Path]:
    """Write ``sources``, the shipped files, the runtime headers and a Makefile (``make`` builds
    ``prefix.so`` and ``libprefix.a``) into ``directory``; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = _write_inputs(sources, directory)
    for name, blob in sources.shipped.items():
        (directory / name).write_bytes(blob)
        written.append(directory / name)
    shared, archive = f"{sources.prefix}.so", f"lib{sources.prefix}.a"
    rules: dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]] = {}
    for static, output in ((False, shared), (True, archive)):
        for step in build_steps(sources, static, output, ["$(CC)"], ["$(KERNEL_FLAGS)"], ["$(ENTRY_FLAGS)"],
                                "$(OBJCOPY)", "$(AR)"):
            _, commands = rules.setdefault(step.output, (step.inputs, []))
            if step.command not in commands:
                commands.append(step.command)
    makefile = _makefile(sources, shared, archive, rules)
    (directory / "Makefile").write_text(makefile)
    return written + [directory / "Makefile"]


def _makefile(sources: LibrarySources, shared: str, archive: str,
              rules: dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]]) -> str:
    machine = sources.target
    lines = [f"# Builds {shared} and {archive} (with {sources.header_name}) from the sources tesched exported",
             f"# for target {machine.name}. Kernel sources take the target's flags; the entry points take",
             "# ENTRY_FLAGS only, so that they can check the CPU before any kernel runs.",
             f"CC = {shlex.join(machine.compiler)}", "OBJCOPY = objcopy", "AR = ar",
             f"KERNEL_FLAGS = {shlex.join(machine.flags)}", f"ENTRY_FLAGS = {shlex.join(ENTRY_FLAGS)}", "",
             f"all: {shared} {archive}", ""]
    for output, (inputs, commands) in rules.items():
        lines += [f"{output}: {' '.join(inputs)}", *("\t" + " ".join(c) for c in commands), ""]
    built = " ".join(rules)
    return "\n".join(lines + ["clean:", f"\trm -f {built}", "", ".PHONY: all clean", ""])
