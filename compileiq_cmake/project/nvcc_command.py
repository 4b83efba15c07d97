"""nvcc command lines as CMake wrote them (compile_commands.json entries): their tokens, the project's own
flags in one canonical spelling (the catalogue's), and the CUDA architectures a command builds.

nvcc accepts most options in a short and a long form, with the value after ``=`` or as the next token,
and ptxas options one by one or comma-joined: ``-use_fast_math`` and ``--use_fast_math``, ``-Xptxas -O3``,
``-Xptxas=-O3,-v`` and ``--ptxas-options=-O3``, ``-maxrregcount 64`` and ``--maxrregcount=64`` are the
same flags. Everything that reasons about the project's flags sees them through `normalize`."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# short form -> (canonical form, takes a value). Canonical forms are the catalogue's (flags/nvcc.toml).
_OPTIONS: dict[str, tuple[str, bool]] = {}


def _option(canonical: str, value: bool, *spellings: str) -> None:
    for s in (canonical, *spellings):
        _OPTIONS[s] = (canonical, value)


_option("--use_fast_math", False, "-use_fast_math")
_option("--ftz", True, "-ftz")
_option("--prec-div", True, "-prec-div")
_option("--prec-sqrt", True, "-prec-sqrt")
_option("--fmad", True, "-fmad")
_option("--restrict", False, "-restrict")
_option("--extra-device-vectorization", False, "-extra-device-vectorization")
_option("-maxrregcount", True, "--maxrregcount")
_option("--Ofast-compile", True, "-Ofc")
_option("--jump-table-density", True, "-jtd")
_option("--nvvm-version", True)
_option("-G", False, "--device-debug")
_option("-lineinfo", False, "--generate-line-info")
_option("-dc", False, "--device-c")
_option("-rdc", True, "--relocatable-device-code")
_option("-dlto", False, "--dlink-time-opt")
_option("-nodinline", False, "--no-device-inline")
_option("-arch", True, "--gpu-architecture")
_option("-gencode", True, "--generate-code")
_option("-code", True, "--gpu-code")
_option("-Xptxas", True, "--ptxas-options")
_option("-Xcicc", True)
_option("-Xnvlink", True, "--linker-options")
_option("-Xcompiler", True, "--compiler-options")
_option("-ccbin", True, "--compiler-bindir")
_option("-o", True, "--output-file")
_option("-x", True, "--x")
_option("-std", True, "--std")
_option("-MF", True, "--dependency-output")
_option("-MT", True, "--dependency-target-name")
_option("-isystem", True, "--system-include")
_option("--options-file", True, "-optf")

# Options whose values are comma-separated lists of separate options (one canonical token each).
_SPLIT_VALUES = {"-Xptxas", "-Xnvlink", "-Xcompiler"}
# Options that are not the project's flags: where the output goes, what the input is.
_NOT_FLAGS = {"-o", "-MF", "-MT", "-x"}
_ALONE_NOT_FLAGS = {
    "-c",
    "--compile",
    "-MD",
    "-MMD",
    "-MP",
    "-M",
    "-MM",
    "--generate-dependencies-with-compile",
    "--generate-nonsystem-dependencies-with-compile",
}
_ARCH_OPTIONS = {"-arch", "-gencode", "-code"}


FLAGS_FILE_NAME = "compileiq_trial_flags.optf"  # a variant tree's trial flags, read by nvcc (--options-file)
_OPTIONS_FILE = "--options-file="
# the tree's trial flags file, or one source file's (source_flags_file_name): only those are read in place
_TRIAL_FILE = re.compile(r"/compileiq_trial_flags(\.[0-9a-f]{12})?\.optf$")


def source_flags_file_name(path: str) -> str:
    """The name of the file of one source file's trial flags in a variant tree (`path` relative to the source
    directory, as in a per-file token): stable across runs, so that a tree's fragment stays as it was."""
    return f"compileiq_trial_flags.{hashlib.sha256(path.encode()).hexdigest()[:12]}.optf"


def tokens(entry: dict[str, Any]) -> list[str]:
    """The command of a compile_commands.json entry as a list of arguments; a variant tree's trial flags files
    (`--options-file=<tree>/FLAGS_FILE_NAME`, a source file's `source_flags_file_name`) are replaced by the
    flags they hold, as nvcc reads them."""
    out: list[str] = []
    for tok in _raw_tokens(entry):
        if _names_flags_file(tok):
            out += trial_flags(Path(tok[len(_OPTIONS_FILE) :]))
        else:
            out.append(tok)
    return out


def _raw_tokens(entry: dict[str, Any]) -> list[str]:
    """The command of a compile_commands.json entry as written (a trial flags file not read)."""
    return list(entry["arguments"]) if entry.get("arguments") else shlex.split(entry.get("command", ""))


def _names_flags_file(tok: str) -> bool:
    return tok.startswith(_OPTIONS_FILE) and _TRIAL_FILE.search(tok) is not None


def trial_flags(path: Path) -> list[str]:
    """The flags a trial flags file holds (none when it is missing)."""
    try:
        return shlex.split(path.read_text())
    except OSError:
        return []


def flags_files_read(entry: dict[str, Any]) -> list[Path]:
    """The trial flags files a compile reads (its tree's, its source file's)."""
    return [Path(t[len(_OPTIONS_FILE) :]) for t in _raw_tokens(entry) if _names_flags_file(t)]


def _split(tok: str, following: str | None) -> tuple[str, str | None, bool]:
    """(canonical option, value, whether the value was the next token) of one token; value None = no value."""
    if tok.startswith("-") and "=" in tok:
        name, value = tok.split("=", 1)
        if name in _OPTIONS:
            return _OPTIONS[name][0], value, False
    if tok in _OPTIONS:
        canonical, takes = _OPTIONS[tok]
        if takes and following is not None:
            return canonical, following, True
        return canonical, None, False
    return tok, None, False


def _options(command: list[str]) -> Iterator[tuple[str, str, str | None]]:
    """(token as written, canonical option, value or None) of each argument after the compiler, an option's
    value taken from the next argument where the option is written without '='."""
    i = 1
    while i < len(command):
        tok = command[i]
        name, value, consumed = _split(tok, command[i + 1] if i + 1 < len(command) else None)
        i += 2 if consumed else 1
        yield tok, name, value


def normalize(command: list[str]) -> list[str]:
    """The flags of an nvcc command (compiler, source, output and dependency options left out), each in its
    canonical spelling with the value after '=': ['--use_fast_math', '-Xptxas=-O3', '-maxrregcount=64', ...].
    Order is kept; repeats are removed."""
    out: list[str] = []
    for tok, name, value in _options(command):
        if tok in _ALONE_NOT_FLAGS or name in _NOT_FLAGS:
            continue
        if not tok.startswith("-"):
            continue  # the source file (or a stray value)
        if value is None:
            out.append(name)
        elif name in _SPLIT_VALUES:
            out.extend(f"{name}={v}" for v in value.split(",") if v)
        else:
            out.append(f"{name}={value}")
    return list(dict.fromkeys(out))


def output_file(entry: dict[str, Any]) -> Path | None:
    """The object file a compile command writes (absolute), if it names one."""
    command = tokens(entry)
    for i, tok in enumerate(command[1:], start=1):
        value = None
        if tok in ("-o", "--output-file") and i + 1 < len(command):
            value = command[i + 1]
        elif (tok.startswith("-o") and not tok.startswith("-odir") and len(tok) > 2) or tok.startswith(
            "--output-file="
        ):
            value = tok.split("=", 1)[1] if tok.startswith("--output-file=") else tok[2:]
        if value:
            return Path(entry.get("directory", ".")) / value
    return None


def project_flags(entries: list[dict[str, Any]]) -> list[str]:
    """The project's own nvcc flags over several compile commands (one target's CUDA sources), canonical."""
    out: list[str] = []
    for entry in entries:
        out.extend(normalize(tokens(entry)))
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class CudaArchitectures:
    """The architectures compile commands build, and the options that said so."""

    archs: tuple[str, ...]  # "90", "80", "90a": real (sm_) and virtual (compute_) alike, sorted
    options: tuple[str, ...]  # e.g. ("-arch=sm_90",)
    special: str = ""  # "native", "all" or "all-major" when -arch said so

    def describe(self) -> str:
        if self.special:
            return f"-arch={self.special}"
        return ", ".join(f"sm_{a}" for a in self.archs) or "nvcc's default architecture"

    def builds(self, arch: str) -> bool:
        return arch in self.archs or self.special in ("all", "all-major")


_ARCH_NUMBER = re.compile(r"(?:sm|compute|lto)_(\d+[a-z]?)")


def architectures(command: list[str]) -> CudaArchitectures:
    """The CUDA architectures one nvcc command builds (-arch, --gpu-architecture, -gencode/--generate-code,
    -code, in any spelling)."""
    archs: set[str] = set()
    options: list[str] = []
    special = ""
    for _, name, value in _options(command):
        if name not in _ARCH_OPTIONS or value is None:
            continue
        options.append(f"{name}={value}")
        if name == "-arch" and value in ("native", "all", "all-major"):
            special = value
        archs |= set(_ARCH_NUMBER.findall(value))
    return CudaArchitectures(archs=tuple(sorted(archs)), options=tuple(dict.fromkeys(options)), special=special)


def target_architectures(entries: list[dict[str, Any]]) -> CudaArchitectures:
    """The union over the compile commands of one target's CUDA sources."""
    parts = [architectures(tokens(e)) for e in entries]
    return CudaArchitectures(
        archs=tuple(sorted({a for p in parts for a in p.archs})),
        options=tuple(dict.fromkeys(o for p in parts for o in p.options)),
        special=next((p.special for p in parts if p.special), ""),
    )
