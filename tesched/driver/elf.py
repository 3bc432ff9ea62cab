"""Read one named section of an ELF file (a shared library or an object) without loading it.

Loading a library runs the dynamic loader on it; reading its build record this way runs none of its code,
so a library compiled for instructions this CPU lacks can be refused before it is touched. Only 64-bit
little-endian ELF (x86-64, AArch64 Linux) is read; anything else raises
:class:`~tesched.errors.ModuleLoadError` naming the file. This module does not know what the section holds.
"""
from __future__ import annotations

import struct
from pathlib import Path

from tesched.errors import ModuleLoadError

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")        # Elf64_Ehdr
_SECTION = struct.Struct("<IIQQQQIIQQ")             # Elf64_Shdr


def read_section(path: Path, name: str) -> bytes | None:
    """The contents of section ``name`` of ELF file ``path``, or None if it has no such section.

    Parameters
    ----------
    path : Path
        A 64-bit little-endian ELF file.
    name : str
        The section's name, e.g. ``".tesched_manifest"``.

    Returns
    -------
    bytes or None
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ModuleLoadError(f"{path}: cannot be read ({err.strerror})") from None
    if data[:4] != b"\x7fELF":
        raise ModuleLoadError(f"{path}: not an ELF shared library (a tesched module exported on Linux)")
    if len(data) < _HEADER.size or data[4] != 2 or data[5] != 1:
        raise ModuleLoadError(f"{path}: not a 64-bit little-endian ELF file")
    header = _HEADER.unpack_from(data)
    section_offset, entry_size, count, names_index = header[6], header[11], header[12], header[13]
    try:
        sections = [_SECTION.unpack_from(data, section_offset + k * entry_size) for k in range(count)]
        names = sections[names_index]
        for sh_name, _, _, _, offset, size, *_ in sections:
            start = names[4] + sh_name
            if data[start:data.index(b"\0", start)].decode("ascii", "replace") == name:
                if offset + size > len(data):
                    raise ValueError("section past the end of the file")
                return data[offset:offset + size]
    except (struct.error, IndexError, ValueError) as err:
        raise ModuleLoadError(f"{path}: damaged ELF file ({err})") from None
    return None
