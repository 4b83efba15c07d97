"""The headers a target's compiles really include: each compile command of the project's own build (from
compile_commands.json) run as the compiler's dependency scan (-M), its make-rule output read. With the
target's sources they make the identity of the code a tune measured (sources_sha256: the trial store's
key and the TOML entry's staleness hash, which the apply at configure re-computes with
_compileiq_sources_sha256 in cmake/CompileIQ.cmake)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .nvcc_command import tokens

# options of a compile command that name its output or its own dependency file: left out of the scan
_WITH_VALUE = {"-o", "-MF", "-MT", "-MQ", "--output-file", "--dependency-output", "--dependency-target-name"}
_ALONE = {
    "-c",
    "--compile",
    "-MD",
    "-MMD",
    "-MP",
    "--generate-dependencies-with-compile",
    "--generate-nonsystem-dependencies-with-compile",
}
_RULE_COLON = re.compile(r":(?:\s|$)")
_WORD = re.compile(r"(?:\\.|[^\s\\])+")


@dataclass(frozen=True)
class HeaderScan:
    headers: tuple[str, ...]  # inside the source directory, relative to it, sorted; the sources themselves not
    problems: tuple[tuple[str, str], ...]  # (source file, why) of each compile command that could not be scanned


def scan_command(arguments: list[str]) -> list[str]:
    """A compile command turned into its dependency scan: output and dependency-file options out, -M in
    (-MG too for gcc and clang: a header generated at build time is listed, not an error)."""
    nvcc = any(Path(a).name.startswith("nvcc") for a in arguments[:2])  # [launcher] compiler ...
    out: list[str] = []
    skip = False
    for arg in arguments:
        if skip:
            skip = False
            continue
        if arg in _WITH_VALUE:
            skip = True
        elif arg in _ALONE or ("=" in arg and arg.split("=", 1)[0] in _WITH_VALUE):
            continue
        elif not nvcc and arg.startswith(("-o", "-MF", "-MT", "-MQ")):  # gcc/clang: -ofile, -MFfile
            continue
        else:
            out.append(arg)
    return out + (["-M"] if nvcc else ["-M", "-MG"])


def parse_make_rule(text: str) -> list[str]:
    """The prerequisites of the make rules in `text` (a depfile or -M output), unescaped."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    found: list[str] = []
    for line in text.splitlines():
        colon = _RULE_COLON.search(line)
        if colon is None:
            continue
        for word in _WORD.findall(line[colon.end() :]):
            found.append(re.sub(r"\\(.)", r"\1", word).replace("$$", "$"))
    return found


def _scan_one(entry: dict[str, Any], timeout: float) -> tuple[list[str], str]:
    """(prerequisites as absolute paths, "" or the reason the scan failed) of one compile_commands.json entry."""
    cwd = entry.get("directory") or "."
    try:
        proc = subprocess.run(
            scan_command(tokens(entry)), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], str(exc)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        return [], (lines[0] if lines else f"exit status {proc.returncode}")[:300]
    return [os.path.join(cwd, p) for p in parse_make_rule(proc.stdout)], ""


def scan_headers(
    entries: list[dict[str, Any]], source_dir: Path, build_dirs: tuple[Path, ...], timeout: float = 300.0
) -> HeaderScan:
    """The headers the compile commands `entries` include that belong to the project: files inside
    `source_dir` and not inside any of `build_dirs` (generated files follow from the configure); system and
    installed headers are left out (the compiler version and the flags stand for them)."""
    root = Path(os.path.realpath(source_dir))
    builds = tuple(Path(os.path.realpath(b)) for b in build_dirs)
    sources = {os.path.realpath(os.path.join(e.get("directory") or ".", e["file"])) for e in entries}
    with ThreadPoolExecutor(max_workers=max(1, min(len(entries), os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda e: _scan_one(e, timeout), entries))
    headers: set[str] = set()
    problems: list[tuple[str, str]] = []
    for entry, (found, problem) in zip(entries, results, strict=True):
        if problem:
            problems.append((entry["file"], problem))
        for p in found:
            real = Path(os.path.realpath(p))
            if str(real) in sources or not real.is_relative_to(root) or any(real.is_relative_to(b) for b in builds):
                continue
            if real.is_file():
                headers.add(real.relative_to(root).as_posix())
    return HeaderScan(tuple(sorted(headers)), tuple(problems))


def sources_sha256(source_lines: list[str], source_dir: Path, headers: tuple[str, ...]) -> str:
    """_compileiq_sources_sha256 of cmake/CompileIQ.cmake: sha256 over the sorted lines "<path>\\t<sha256>"
    of the sources (`source_lines`, as compileiq_variant.cmake wrote them) and of the headers."""
    lines = list(source_lines)
    for rel in headers:
        path = source_dir / rel
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        lines.append(f"{rel}\t{digest}")
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
