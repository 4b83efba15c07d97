"""The optimal-flags TOML: schema, atomic write (tomli-w), read with validation against the flag grammar,
and the CMake entries that configures apply."""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import tomli_w

from .errors import CompileIQError
from .flags import validate_flags

SCHEMA_VERSION = 1
_TARGET_NAME = re.compile(r"^[A-Za-z0-9_.+\-]+(::[A-Za-z0-9_.+\-]+)*$")
_BUILD_TYPE = re.compile(r"^[A-Za-z0-9_]*$")  # a CMake configuration name, or empty
_ARCH = re.compile(r"^([0-9]{2,3}[af]?)?$")
_COMPILER_ID = re.compile(r"^[A-Za-z]+$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_LANGUAGES = {"CUDA": "nvcc", "CXX": "gcc", "C": "gcc"}


@dataclass(frozen=True)
class FlagsEntry:
    """Tuned flags of one target for one CUDA architecture (or one host compiler)."""

    target: str
    language: str
    arch: str
    compiler_id: str
    compiler_version: str
    flags: tuple[str, ...]
    build_type: str
    device: str  # GPU name, or the host CPU for host targets
    compute_capability: str
    metric: str
    lower_is_better: bool
    workloads: tuple[str, ...]
    baseline: tuple[float, ...]
    tuned: tuple[float, ...]
    speedup: float
    trials: int
    date: str
    tool_version: str
    sources_sha256: str
    replay: bool = False
    speedup_ci: tuple[float, float] = (0.0, 0.0)  # 95% interval of the geometric-mean speedup
    workload_speedups: tuple[float, ...] = ()
    workload_ci: tuple[tuple[float, float], ...] = ()
    p_values: tuple[float, ...] = ()
    contributions: tuple[dict, ...] = ()  # ablation: what keeping each flag is worth

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.target, self.language, self.arch or self.compiler_id)

    @property
    def compiler_major_minor(self) -> str:
        return ".".join(self.compiler_version.split(".")[:2])


def _check_entry(raw: object, where: str) -> FlagsEntry:
    if not isinstance(raw, dict):
        raise CompileIQError(f"{where}: an [[entry]] must be a table")
    names = {f.name for f in fields(FlagsEntry)}
    optional = {f.name for f in fields(FlagsEntry) if f.default is not MISSING}
    missing = sorted(names - raw.keys() - optional)
    if missing:
        raise CompileIQError(f"{where}: entry for {raw.get('target', '?')!r} lacks {', '.join(missing)}")
    unknown = sorted(raw.keys() - names)
    if unknown:
        raise CompileIQError(f"{where}: entry for {raw.get('target', '?')!r} has unknown keys {', '.join(unknown)}")
    for key, pattern in (("target", _TARGET_NAME), ("arch", _ARCH), ("compiler_id", _COMPILER_ID),
                         ("compiler_version", _VERSION), ("build_type", _BUILD_TYPE)):
        value = raw[key]
        if not isinstance(value, str) or not pattern.match(value):
            raise CompileIQError(f"{where}: refusing {key} = {value!r}: not a valid {key.replace('_', ' ')}")
    language = raw["language"]
    if language not in _LANGUAGES:
        raise CompileIQError(f"{where}: language {language!r} is not one of CUDA, CXX, C")
    if not isinstance(raw["flags"], list):
        raise CompileIQError(f"{where}: flags of {raw['target']!r} must be a list of strings")
    flags = validate_flags(_LANGUAGES[language], raw["flags"])
    try:
        return FlagsEntry(
            **{**raw, "flags": flags, "workloads": tuple(raw["workloads"]), "baseline": tuple(raw["baseline"]),
               "tuned": tuple(raw["tuned"]), "speedup_ci": tuple(raw.get("speedup_ci", (0.0, 0.0))),
               "workload_speedups": tuple(raw.get("workload_speedups", ())),
               "workload_ci": tuple(tuple(x) for x in raw.get("workload_ci", ())),
               "p_values": tuple(raw.get("p_values", ())), "contributions": tuple(raw.get("contributions", ()))}
        )
    except TypeError as exc:
        raise CompileIQError(f"{where}: malformed entry: {exc}") from None


def read_entries(path: Path) -> list[FlagsEntry]:
    if not path.is_file():
        raise CompileIQError(f"{path} does not exist; run a tune first or point to the file")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CompileIQError(f"{path} is not valid TOML: {exc}") from None
    if data.get("schema_version") != SCHEMA_VERSION:
        raise CompileIQError(f"{path}: schema_version must be {SCHEMA_VERSION}; was it written by compileiq_cmake?")
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list):
        raise CompileIQError(f"{path}: 'entry' must be an array of tables ([[entry]])")
    return [_check_entry(raw, str(path)) for raw in raw_entries]


def _plain(value):
    """Tuples to lists, recursively (TOML arrays)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_entry(path: Path, entry: FlagsEntry) -> None:
    """Merge the entry into the file (replacing one with the same target/language/arch) atomically."""
    entries = read_entries(path) if path.exists() else []
    merged = [e for e in entries if e.key != entry.key] + [entry]
    document = {
        "schema_version": SCHEMA_VERSION,
        "entry": [_plain(asdict(e)) for e in merged],
    }
    text = "# Written by compileiq_cmake: tuned compiler flags. Commit it; configures apply it.\n"
    text += tomli_w.dumps(document)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".compileiq-", suffix=".toml", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # a normal file for the repository, not mkstemp's 0600
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmake_entries(entries: list[FlagsEntry]) -> str:
    """CMake code with one _compileiq_entry() call per (validated) entry; replays are never applied."""
    from .cmake_project import cmake_quote

    lines = ["# generated by compileiq_cmake from a validated compileiq.toml"]
    for e in entries:
        if e.replay:
            lines.append(f"message(STATUS {cmake_quote('compileiq: entry for ' + e.target + ' comes from a replay; not applied')})")
            continue
        args = [
            "TARGET", cmake_quote(e.target), "LANGUAGE", e.language, "ARCH", cmake_quote(e.arch),
            "COMPILER_ID", e.compiler_id, "COMPILER_VERSION", e.compiler_major_minor,
            "CONFIG", cmake_quote(e.build_type), "FLAGS", *(cmake_quote(f) for f in e.flags),
        ]
        lines.append("_compileiq_entry(" + " ".join(args) + ")")
    return "\n".join(lines) + "\n"
