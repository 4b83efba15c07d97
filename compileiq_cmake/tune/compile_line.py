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
    target's compile commands in its language (the project's own build), each split into tokens once here.
    A host target whose commands optimize little (their last -O is -O0, -Og or -O1, or none: a Debug build, or a
    target_compile_options(-O0) after CMake's -O3) has its level measured first, the big mover there (issue 33:
    a -O0 project, ~4 s runs, a 150 s box; issue 52: -O0 after Release's -O3 was read as optimized); one whose
    commands name no instruction set has -march=native first (a popcount loop at -O3: 35x here): a short box may
    hold only a few trials."""
    commands = [(str(Path(e["file"]).resolve()), tokens(e)) for e in entries]
    _say_device_debug(commands, language, log)
    if language not in ("C", "CXX") or not commands:
        return space
    levels = _own_levels(commands)
    if all(v in _UNOPTIMIZED for v in levels.values()):
        space = _measured_first(
            space,
            "opt_level",
            log,
            f"the project's own build compiles the target at {' / '.join(sorted(set(levels.values())))} (the last "
            "-O of its compile commands; none means -O0): the optimization level (-O2, -O3) is measured first",
            unlike_observed=True,  # (a learned prior's -O observations are of optimized builds)
        )
    if not any(t.startswith(_ISA) for _, toks in commands for t in toks):
        space = _measured_first(
            space,
            "march_native",
            log,
            "the project's own build names no instruction set (no -march/-mcpu/-mtune: the compiler's generic "
            "one): -march=native is measured first",
        )
    return space


_LEVEL = re.compile(r"^-O(\d|s|z|g|fast)?$")
_UNOPTIMIZED = ("-O0", "-Og", "-O1")  # what the compiler makes of a command whose last -O is one of these
# an instruction set named on the command: without one, the compiler's generic one (SSE2 on x86-64)
_ISA = ("-march=", "-mcpu=", "-mtune=", "-mavx", "-msse4", "-mpopcnt", "-mfma")


def _own_levels(commands: list[tuple[str, list[str]]]) -> dict[str, str]:
    """Per source: the optimization level its compile command ends up with, the last
    -O in the command's order (`-O3 ... -O0`: CMake's Release flags, then a target_compile_options -O0, is -O0);
    "-O0" when there is none (the compilers' default)."""
    levels = {}
    for source, toks in commands:
        found = [t for t in toks if _LEVEL.match(t)]
        level = found[-1] if found else "-O0"
        levels[source] = "-O1" if level == "-O" else level
    return levels


def _measured_first(space: FlagSpace, name: str, log: Log, said: str, unlike_observed: bool = False) -> FlagSpace:
    """The space with dimension `name`'s values measured first (after the build modes'), and `said` once; the
    space as it is when it has no such dimension (`tune --portable` has no march_native) or it is first already.
    `unlike_observed`: first even where a learned prior predicts otherwise (flags/space.Dimension)."""
    dims = tuple(
        replace(d, measured_first=True, unlike_observed=d.unlike_observed or unlike_observed) if d.name == name else d
        for d in space.dimensions
    )
    if dims == space.dimensions:
        return space
    as_stream(log).info(said)
    return replace(space, dimensions=dims)


def _say_device_debug(commands: list[tuple[str, list[str]]], language: str, log: Log) -> None:
    """A CUDA target compiled with -G (device debug: ptxas optimizes no device code): said in one line, since
    every flag is then measured on unoptimized kernels and the tune cannot take a project's own flag away."""
    if language == "CUDA" and any({"-G", "--device-debug"} & set(normalize(toks)) for _, toks in commands):
        as_stream(log).note(
            "the project's own CUDA compiles carry -G (device debug: no device code is optimized); the flags "
            "are measured on top of it and the tune cannot remove it: drop -G from the build type you tune "
            "(e.g. keep it for Debug only) for kernels worth tuning"
        )
