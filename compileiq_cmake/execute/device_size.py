"""How much device code a built file holds: the sizes of its fatbinary sections (`.nv_fatbin` of an executable,
a shared library or a whole-program object; `__nv_relfatbin` of a relocatable-device-code object), read from
the ELF section headers; a static library's members each. A co-objective of a trial beside its build seconds
and the size of its files (device LTO is known to make fat binaries larger)."""

from __future__ import annotations

import struct
from pathlib import Path

FATBIN_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")
_ET_REL = 1  # a relocatable object: its __nv_relfatbin is its device code; a linked file's copy of them is not
_ELF_MAGIC = b"\x7fELF"
_AR_MAGIC = b"!<arch>\n"
_SHT_NOBITS = 8


def _elf_fatbin(data: bytes) -> int:
    """The bytes of fatbinary sections in one 64-bit little-endian ELF file (0 for anything else): an object's
    `.nv_fatbin` and `__nv_relfatbin`; a linked executable's or library's `.nv_fatbin` only (linked with
    relocatable device code it also keeps each object's `__nv_relfatbin`, which is never loaded)."""
    if len(data) < 64 or data[:4] != _ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return 0
    (e_type,) = struct.unpack_from("<H", data, 0x10)
    counted = FATBIN_SECTIONS if e_type == _ET_REL else FATBIN_SECTIONS[:1]
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return 0

    def header(i: int) -> tuple[int, int, int, int]:
        name, kind, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, kind, offset, size

    _, _, names_at, names_size = header(shstrndx)
    names = data[names_at : names_at + names_size]
    total = 0
    for i in range(shnum):
        name, kind, _, size = header(i)
        end = names.find(b"\0", name)
        if kind != _SHT_NOBITS and names[name : end if end >= 0 else None] in counted:
            total += size
    return total


def _archive_fatbin(data: bytes) -> int:
    """The fatbinary bytes of every member of a static library (ar archive)."""
    total, at = 0, len(_AR_MAGIC)
    while at + 60 <= len(data):
        size_field = data[at + 48 : at + 58].strip()
        if not size_field.isdigit():
            break
        size = int(size_field)
        total += _elf_fatbin(data[at + 60 : at + 60 + size])
        at += 60 + size + (size & 1)
    return total


def device_code_bytes(paths: list[Path]) -> int:
    """The fatbinary bytes of these files (executables, libraries, objects), summed; unreadable ones count 0."""
    total = 0
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        total += _archive_fatbin(data) if data.startswith(_AR_MAGIC) else _elf_fatbin(data)
    return total
