"""Tune stage, setup: the project's own compile line read as evidence before the search (issue 52): a host
target built at a low optimization level has its level measured first, one that names no instruction set
-march=native; a CUDA target built with -G is said.
(The optimization level is the command's last -O, in the command's order: CMake's Release -O3 followed by a
target_compile_options(-O0) is -O0.)"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..flags.space import FlagSpace
from ..model.events import Log, as_stream
from ..project.nvcc_command import normalize, tokens

Entry = dict[str, Any]  # a compile_commands.json entry


def compile_line_evidence(space: FlagSpace, entries: list[Entry], language: str, log: Log) -> FlagSpace:
    """The space with what the project's compile line says applied (and said in one line each); `entries`: the
    target's compile commands in its language (the project's own build)."""
    _say_device_debug(entries, language, log)
    space = _unoptimized_first(space, _own_levels(entries), language, log)
    return _generic_isa_first(space, entries, language, log)


_LEVEL = re.compile(r"^-O(\d|s|z|g|fast)?$")
_UNOPTIMIZED = ("-O0", "-Og", "-O1")  # what the compiler makes of a command whose last -O is one of these


def _own_levels(entries: list[Entry]) -> dict[str, str]:
    """Per source: the optimization level its compile command ends up with, the last
    -O in the command's order (`-O3 ... -O0`: CMake's Release flags, then a target_compile_options -O0, is -O0);
    "-O0" when there is none (the compilers' default)."""
    levels = {}
    for entry in entries:
        found = [t for t in tokens(entry) if _LEVEL.match(t)]
        level = found[-1] if found else "-O0"
        levels[str(Path(entry["file"]).resolve())] = "-O1" if level == "-O" else level
    return levels


def _unoptimized_first(space: FlagSpace, levels: dict[str, str], language: str, log: Log) -> FlagSpace:
    """A host target whose own compile commands optimize little (their last -O is -O0, -Og or -O1, or there is
    none: a Debug build, or a target_compile_options(-O0) after CMake's -O3) has its optimization level measured
    first: on such a build it is the big mover, and a short box (runs of seconds) may hold only a few trials
    (issue 33: a -O0 project, ~4 s runs, a 150 s box; issue 52: -O0 after Release's -O3 was read as optimized)."""
    if language not in ("C", "CXX") or not levels or any(v not in _UNOPTIMIZED for v in levels.values()):
        return space
    dims = tuple(replace(d, measured_first=True) if d.name == "opt_level" else d for d in space.dimensions)
    if dims == space.dimensions:
        return space
    seen = sorted(set(levels.values()))
    as_stream(log).info(
        f"the project's own build compiles the target at {' / '.join(seen)} (the last -O of its compile "
        "commands; none means -O0): the optimization level (-O2, -O3) is measured first"
    )
    return replace(space, dimensions=dims)


_ISA = ("-march=", "-mcpu=", "-mtune=", "-mavx", "-msse4", "-mpopcnt", "-mfma")


def _generic_isa_first(space: FlagSpace, entries: list[Entry], language: str, log: Log) -> FlagSpace:
    """A host target whose compile commands name no instruction set (no -march/-mcpu/-mtune, no -mavx...:
    the compiler's generic one, SSE2 on x86-64) has -march=native measured first (after an unoptimized build's
    level): this CPU's instructions are the next big mover of compute-bound code (a popcount loop at -O3: 35x
    here), and a short box may hold only a few trials. `tune --portable` has no such dimension: nothing said."""
    if language not in ("C", "CXX") or not entries:
        return space
    if any(t.startswith(_ISA) for e in entries for t in tokens(e)):
        return space
    dims = tuple(replace(d, measured_first=True) if d.name == "march_native" else d for d in space.dimensions)
    if dims == space.dimensions:
        return space
    as_stream(log).info(
        "the project's own build names no instruction set (no -march/-mcpu/-mtune: the compiler's generic "
        "one): -march=native is measured first"
    )
    return replace(space, dimensions=dims)


def _say_device_debug(entries: list[Entry], language: str, log: Log) -> None:
    """A CUDA target compiled with -G (device debug: ptxas optimizes no device code): said in one line, since
    every flag is then measured on unoptimized kernels and the tune cannot take a project's own flag away."""
    if language == "CUDA" and any({"-G", "--device-debug"} & set(normalize(tokens(e))) for e in entries):
        as_stream(log).note(
            "the project's own CUDA compiles carry -G (device debug: no device code is optimized); the flags "
            "are measured on top of it and the tune cannot remove it: drop -G from the build type you tune "
            "(e.g. keep it for Debug only) for kernels worth tuning"
        )
