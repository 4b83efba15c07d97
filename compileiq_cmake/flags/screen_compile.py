"""The screening's compiles: one translation unit of the tuned target re-run from its compile_commands.json
entry to a cubin with extra flags (the project's own output, dependency and architecture options replaced),
in parallel over (unit, flag set) cells, each outcome kept in the user's screening cache (screen_cache.py) so
a second screening of the same code compiles nothing, within the screening's deadline."""

from __future__ import annotations

import itertools
import re
import sqlite3
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError
from ..project.nvcc_command import tokens
from .fingerprint import fingerprint
from .probe import nvcc_version
from .screen_cache import InputHasher, Outcome, ScreenCache, outcome_key

COMPILE_TIMEOUT = 900  # seconds, one unit's compile (without a time limit)
_OUT = "<out>.cubin"  # the output path written into cache keys
# options that take the next token as their value when written without '='
_WITH_VALUE = {
    "-o",
    "--output-file",
    "-MT",
    "-MF",
    "-MQ",
    "--dependency-output",
    "-arch",
    "--gpu-architecture",
    "-gencode",
    "--generate-code",
    "-code",
    "--gpu-code",
}
_DROP_ALONE = {
    "-c",
    "--compile",
    "-MD",
    "-MMD",
    "-MP",
    "-M",
    "-MM",
    "--generate-dependencies-with-compile",
    "--generate-nonsystem-dependencies-with-compile",
    "-dlto",
    "--dlink-time-opt",
}
_ARCH_OPTS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
_OUTPUT_OPTS = ("-o", "--output-file", "-MT", "-MF", "-MQ", "--dependency-output")


def _arch_of_option(text: str) -> set[str]:
    return set(re.findall(r"(?:sm|compute|lto)_(\d+[a-z]?)", text))


def cubin_command(command: list[str], out: Path, cuda_arch: str, flags: tuple[str, ...]) -> list[str]:
    """The project's nvcc command rewritten to write one cubin for sm_<cuda_arch> with `flags` appended:
    -c, -o, dependency-file and architecture options removed, -dc turned into -rdc=true."""
    kept: list[str] = []
    archs: set[str] = set()
    skip = False
    for i, tok in enumerate(command):
        if skip:
            skip = False
            continue
        if i == 0:
            kept.append(tok)
            continue
        name = tok.split("=", 1)[0]
        if tok in _DROP_ALONE:
            continue
        if tok in ("-dc", "--device-c"):
            kept.append("-rdc=true")
            continue
        if name in _ARCH_OPTS or name in _OUTPUT_OPTS:
            value = tok.split("=", 1)[1] if "=" in tok else (command[i + 1] if i + 1 < len(command) else "")
            skip = "=" not in tok
            if name in _ARCH_OPTS:
                archs |= _arch_of_option(value)
            continue
        if tok.startswith("-o") and len(tok) > 2 and not tok.startswith("--"):
            continue
        kept.append(tok)
    return [*kept, f"-arch=sm_{cuda_arch or _one_arch(archs)}", "-cubin", "-o", str(out), *flags]


def _one_arch(archs: set[str]) -> str:
    """The one CUDA architecture the command's own options name (else the user must say which)."""
    if len(archs) != 1:
        raise CompileIQError(
            f"cannot tell which CUDA architecture to screen for ({sorted(archs) or 'none'}); give --cuda-arch"
        )
    return next(iter(archs))


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"(?i)\berror\b|fatal", ln):
            return ln[:300]
    return lines[0][:300] if lines else "compile failed"


def _compile(
    entry: dict[str, Any], out: Path, cuda_arch: str, flags: tuple[str, ...], nvcc: str | None, deadline: float | None
) -> Outcome | None:
    """One unit compiled to a cubin with `flags` and fingerprinted; None when `deadline` (perf_counter) came
    first (before the compile, or during it: the compile is stopped)."""
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None
    cmd = cubin_command(tokens(entry), out, cuda_arch, flags)
    try:
        proc = subprocess.run(
            cmd,
            cwd=entry.get("directory") or None,
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT if left is None else min(COMPILE_TIMEOUT, left),
            check=False,
        )
    except subprocess.TimeoutExpired:
        if left is not None and left < COMPILE_TIMEOUT:
            return None
        return Outcome(None, f"compile timed out after {COMPILE_TIMEOUT} s", transient=True)
    except OSError as exc:
        return Outcome(None, f"cannot run {cmd[0]}: {exc}", transient=True)
    try:
        if proc.returncode != 0 or not out.is_file():
            return Outcome(None, _first_error(proc.stderr + proc.stdout))
        return Outcome(fingerprint(out, nvcc))
    finally:
        out.unlink(missing_ok=True)


@dataclass(frozen=True)
class ScreenTools:
    """How screening compiles one unit with a flag value (None: not run, the deadline came first) and tells
    what the unit's compile reads (a digest; None: not known, so neither looked up nor stored); the real
    ones by default (nvcc_tools), fakes in unit tests."""

    compile: Callable[[dict[str, Any], tuple[str, ...], float | None], Outcome | None]
    inputs: Callable[[dict[str, Any]], str | None]
    version: str  # the compiler's, part of every cache key


def nvcc_tools(nvcc: str, cuda_arch: str, work: Path, cache: ScreenCache | None) -> ScreenTools:
    """The real tools: nvcc to cubins in `work`, fingerprinted with cuobjdump; inputs by nvcc's -M scan
    (remembered in `cache`; none without a cache)."""
    with_inputs = cache is not None
    numbers = itertools.count()
    hasher = InputHasher(cache)
    return ScreenTools(
        compile=lambda entry, flags, deadline: _compile(
            entry, work / f"c{next(numbers)}.cubin", cuda_arch, flags, nvcc, deadline
        ),
        inputs=hasher.digest if with_inputs else (lambda entry: None),
        version=nvcc_version(nvcc) if with_inputs else "",
    )


def _unit_name(entry: dict[str, Any]) -> str:
    return Path(entry["file"]).name


class _Cells:
    """The outcomes of (unit, flag set) cells: looked up in the cache, else compiled in parallel; counts both."""

    def __init__(
        self,
        entries: list[dict[str, Any]],
        flagsets: list[tuple[str, ...]],
        cuda_arch: str,
        tools: ScreenTools,
        cache: ScreenCache | None,
        pool: ThreadPoolExecutor,
        deadline: float | None,
    ) -> None:
        self.entries, self.flagsets, self.tools, self.cache, self.pool = entries, flagsets, tools, cache, pool
        self.cuda_arch, self.deadline = cuda_arch, deadline
        self.outcomes: dict[tuple[int, int], Outcome] = {}
        self.compiles = 0
        self.hits = 0
        self.problem = ""  # why the cache could not be used, once
        self.digests: list[str | None] = (
            list(pool.map(tools.inputs, entries)) if cache is not None else [None] * len(entries)
        )

    def _key(self, cell: tuple[int, int]) -> str | None:
        i, j = cell
        digest = self.digests[i]
        if digest is None:
            return None
        entry = self.entries[i]
        command = cubin_command(tokens(entry), Path(_OUT), self.cuda_arch, self.flagsets[j])
        return outcome_key(command, entry.get("directory") or "", self.tools.version, digest)

    def run(self, cells: list[tuple[int, int]]) -> None:
        """Fill `outcomes` for `cells` (compiled in the order given); a cell the deadline cut stays empty."""
        keys = {cell: self._key(cell) for cell in cells}
        cached: dict[str, Outcome] = {}
        if self.cache is not None and not self.problem:
            try:
                cached = self.cache.get_many([k for k in keys.values() if k])
            except (sqlite3.Error, OSError) as exc:
                self.problem = str(exc)
        todo = []
        for cell in cells:
            found = cached.get(keys[cell] or "")
            if found is not None:
                self.outcomes[cell] = found
                self.hits += 1
            else:
                todo.append(cell)
        futures = [
            (cell, self.pool.submit(self.tools.compile, self.entries[cell[0]], self.flagsets[cell[1]], self.deadline))
            for cell in todo
        ]
        new: dict[str, Outcome] = {}
        for cell, future in futures:
            outcome = future.result()
            if outcome is None:
                continue
            self.compiles += 1
            self.outcomes[cell] = outcome
            key = keys[cell]
            if key and not outcome.transient:
                new[key] = outcome
        if self.cache is not None and not self.problem:
            try:
                self.cache.put_many(new)
            except (sqlite3.Error, OSError) as exc:
                self.problem = str(exc)
