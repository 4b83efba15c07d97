"""The optimal-flags TOML: schema, strict reading (validated against the flag grammar, with caps on its
size), writes that lose nothing (a lock on <file>.lock, re-read and merged under it, atomic replace,
written through a symlink, a fallback copy when the write fails), the check that a tune will be able to
write it, the replacement policy for entries guarded by numerics checks, and the CMake entries that
configures apply."""

from __future__ import annotations

import difflib
import fcntl
import functools
import math
import os
import re
import tempfile
import time
import tomllib
import types
import typing
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import tomli_w

from ..model.events import as_stream
from ..model.errors import CompileIQError, ResultFileError
from ..flags import validate_flags
from ..system.writable import check_creatable
from ..flags.portability import host_specific, resolved_token_ok
from ..flags.portability import HOST_PREFIX
from ..project.cmake_project import cmake_quote

SCHEMA_VERSION = 1
MAX_FLAGS = 256  # per entry
MAX_SOURCES = 1024  # per-source parts per entry
_SOURCE_PATH = re.compile(r"^[A-Za-z0-9_.+\-]+(/[A-Za-z0-9_.+\-]+)*$")  # relative, '/'-separated, no spaces
MAX_FILE_BYTES = 4 << 20
CHECKS = ("pass_regex", "verify", "compare_output", "compare_file")  # what guarded a tune's results
NUMERICS_CHECKS = ("compare_output", "compare_file")
ACF_PREFIX = "--apply-controls="
ARCH_SCOPES = ("all", "tuned")
_CPU_FEATURE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_TOP_LEVEL = ("schema_version", "entry")
_TARGET_NAME = re.compile(r"^[A-Za-z0-9_.+\-]+(::[A-Za-z0-9_.+\-]+)*$")
_BUILD_TYPE = re.compile(r"^[A-Za-z0-9_]*$")  # a CMake configuration name, or empty
_ARCH = re.compile(r"^([0-9]{2,3}[af]?)?$")
_COMPILER_ID = re.compile(r"^[A-Za-z]+$")
_SHA256_OR_EMPTY = re.compile(r"^([0-9a-f]{64})?$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_ACF_PATH = re.compile(r"^[A-Za-z0-9_.+\-]+(/[A-Za-z0-9_.+\-]+)*$")
_LANGUAGES = {"CUDA": "nvcc", "CXX": "gcc", "C": "gcc"}
LOCK_WAIT_SECONDS = 120.0  # how long a write waits for another writer's lock on <file>.lock
_HEADER = "# Written by compileiq_cmake: tuned compiler flags. Commit it; configures apply it.\n"


# The schema: the dataclasses below declare every key of an [[entry]] (and of its sub-tables) with its type;
# field metadata adds what a value must satisfy: "pattern" (a str), "one_of" (a str), "min"/"above"/"max" (a
# number, or each number of an array), "finite": False (a number may be inf, e.g. an interval's end), "row"
# (the dataclass of each table of an array of tables kept as dicts). _table() checks a TOML table against
# one of them; a new key is a new field here, checked with nothing more to write.


@dataclass(frozen=True)
class ContributionRow:
    """One [[entry.contributions]] table: what keeping the flags is worth (ablation)."""

    flags: tuple[str, ...]
    speedup: float = field(metadata={"above": 0})
    ci: tuple[float, float] = field(metadata={"min": 0, "finite": False})
    kept: bool
    reason: str


@dataclass(frozen=True)
class SourceRow:
    """One [[entry.sources]] table: a source file's own flags on top of the entry's (see _check_sources)."""

    path: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class FlagsEntry:
    """Tuned flags of one target for one CUDA architecture (or one host compiler)."""

    target: str = field(metadata={"pattern": _TARGET_NAME})
    language: str = field(metadata={"one_of": tuple(_LANGUAGES)})
    arch: str = field(metadata={"pattern": _ARCH})
    compiler_id: str = field(metadata={"pattern": _COMPILER_ID})
    compiler_version: str = field(metadata={"pattern": _VERSION})
    flags: tuple[str, ...]
    build_type: str = field(metadata={"pattern": _BUILD_TYPE})
    device: str  # GPU name, or the host CPU for host targets
    compute_capability: str
    metric: str
    lower_is_better: bool
    workloads: tuple[str, ...]
    baseline: tuple[float, ...]
    tuned: tuple[float, ...]
    speedup: float = field(metadata={"above": 0})
    trials: int = field(metadata={"min": 1})
    date: str
    tool_version: str
    sources_sha256: str
    replay: bool = False
    # 95% interval of the geometric-mean speedup
    speedup_ci: tuple[float, float] = field(default=(0.0, 0.0), metadata={"min": 0, "finite": False})
    workload_speedups: tuple[float, ...] = field(default=(), metadata={"above": 0})
    workload_ci: tuple[tuple[float, float], ...] = field(default=(), metadata={"min": 0, "finite": False})
    p_values: tuple[float, ...] = field(default=(), metadata={"min": 0, "max": 1})
    # ablation: what keeping each flag is worth
    contributions: tuple[dict, ...] = field(default=(), metadata={"row": ContributionRow})
    checks: tuple[str, ...] = ()  # what guarded the tune's results: names from CHECKS
    acf_sha256: tuple[tuple[str, str], ...] = ()  # (relative path, sha256) of each --apply-controls file
    # per-source flags on top of `flags`: ({"path": relative to the source dir, "flags": [...]}, ...)
    sources: tuple[dict, ...] = field(default=(), metadata={"row": SourceRow})
    # CUDA, relocatable device code: device link-time optimization (-dlto at compile and at device link)
    device_lto: bool = False
    # how the tune measured, for `check --remeasure`: the benchmark command (paths in the build tree relative
    # to it, e.g. "./bin/nbody": it runs in a tree of the project as its working directory), its PASS_REGEX
    # and VERIFY command; () and "" in entries written before they were recorded
    benchmark: tuple[str, ...] = ()
    pass_regex: str = ""
    verify: tuple[str, ...] = ()
    # the project headers the target's compiles include (relative to the source dir): sources_sha256 covers them
    headers: tuple[str, ...] = ()
    flags_sha256: str = field(default="", metadata={"pattern": _SHA256_OR_EMPTY})  # CMAKE_<LANG>_FLAGS and CMAKE_<LANG>_FLAGS_<CONFIG> of the tune (cmake/CompileIQ.cmake)
    # host-specific flags (-march=native ...) resolved at tune time: the CPU tuned on and the ISA features they need
    tuned_cpu: str = ""
    cpu_features: tuple[str, ...] = ()
    # CUDA: "all" (the flags go to every architecture the target builds) or "tuned" (only to builds of arch alone)
    arch_scope: str = field(default="all", metadata={"one_of": ARCH_SCOPES})

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.target, self.language, self.arch or self.compiler_id)

    @property
    def compiler_major_minor(self) -> str:
        return ".".join(self.compiler_version.split(".")[:2])


def numerics_checked(entry: FlagsEntry) -> bool:
    """Whether the tune that wrote the entry compared the program's numbers with the baseline's."""
    return any(c in NUMERICS_CHECKS for c in entry.checks)


def _acf_problem(flag: str) -> str:
    """Why an --apply-controls= flag is refused ("" when it is fine): its file must be a relative path
    inside the source tree (relative to the compileiq.toml), never absolute or escaping with '..'."""
    rel = flag[len(ACF_PREFIX):]
    if rel and _ACF_PATH.match(rel) and ".." not in PurePosixPath(rel).parts:
        return ""
    return (f"refusing flag {flag!r}: --apply-controls must name a relative path inside the source tree "
            "(e.g. --apply-controls=controls/fast.acf), not an absolute path or one with '..'")


def _check_flags(raw: dict, where: str) -> tuple[str, ...]:
    flags = raw["flags"]
    if not isinstance(flags, list):
        raise ResultFileError(f"{where}: flags of {raw['target']!r} must be a list of strings")
    if len(flags) > MAX_FLAGS:
        raise ResultFileError(f"{where}: entry for {raw['target']!r} has {len(flags)} flags; at most {MAX_FLAGS} "
                              "are allowed: is it the right file?")
    family = _LANGUAGES[raw["language"]]
    acf = [f for f in flags if family == "nvcc" and isinstance(f, str) and f.startswith(ACF_PREFIX)]
    for flag in acf:
        if _acf_problem(flag):
            raise ResultFileError(f"{where}: {_acf_problem(flag)}")
    resolved = [f for f in flags if raw.get("tuned_cpu") and isinstance(f, str)
                and resolved_token_ok(f, tuple(raw.get("cpu_features", ())))]  # -march=native, resolved at tune time
    try:
        validate_flags(family, [f for f in flags if f not in acf and f not in resolved])
    except CompileIQError as exc:
        raise ResultFileError(f"{where}: {exc}") from None
    return tuple(flags)


def _check_portability(raw: dict, where: str) -> tuple[tuple[str, ...], str]:
    """cpu_features (a list of ISA feature names, with tuned_cpu only) and arch_scope (one of ARCH_SCOPES)."""
    features, cpu, scope = raw.get("cpu_features", []), raw.get("tuned_cpu", ""), raw.get("arch_scope", "all")
    if not isinstance(cpu, str) or not isinstance(features, list) or (features and not cpu) or not all(
            isinstance(f, str) and _CPU_FEATURE.match(f) for f in features):
        raise ResultFileError(f"{where}: tuned_cpu of {raw['target']!r} must be a string and cpu_features a list of ISA "
                              "feature names (e.g. [\"avx2\"]), given only with tuned_cpu")
    if scope not in ARCH_SCOPES or (scope != "all" and raw["language"] != "CUDA"):
        raise ResultFileError(f"{where}: arch_scope of {raw['target']!r} must be \"all\" or \"tuned\" (\"tuned\" only "
                              "for a CUDA entry)")
    return tuple(features), scope


def _check_sources(raw: dict, where: str) -> tuple[dict, ...]:
    """The per-source part: each a table with a path relative to the source dir (no '..', no absolute path)
    and its own flags, validated like the entry's; a file at most once."""
    sources = raw.get("sources", [])
    target = raw["target"]
    if not isinstance(sources, list) or not all(isinstance(x, dict) for x in sources):
        raise ResultFileError(f"{where}: sources of {target!r} must be a list of tables ([[entry.sources]])")
    if len(sources) > MAX_SOURCES:
        raise ResultFileError(f"{where}: entry for {target!r} has {len(sources)} per-source parts; at most {MAX_SOURCES}")
    family = _LANGUAGES[raw["language"]]
    out, seen = [], set()
    for x in sources:  # keys and types: checked by the schema (SourceRow)
        path = x["path"]
        if not isinstance(path, str) or not _SOURCE_PATH.match(path) or ".." in path.split("/"):
            raise ResultFileError(f"{where}: refusing source path {path!r} of {target!r}: give a path relative to the "
                                  "source directory, '/'-separated, without '..'")
        if path in seen:
            raise ResultFileError(f"{where}: source {path!r} of {target!r} has two per-source parts")
        seen.add(path)
        flags = x["flags"]
        if not isinstance(flags, list) or not flags or not all(isinstance(f, str) for f in flags) or len(flags) > MAX_FLAGS:
            raise ResultFileError(f"{where}: flags of source {path!r} of {target!r} must be a non-empty list of strings")
        try:
            validate_flags(family, [f for f in flags if not (raw.get("tuned_cpu") and resolved_token_ok(
                f, tuple(raw.get("cpu_features", ()))))])
        except CompileIQError as exc:
            raise ResultFileError(f"{where}: source {path!r}: {exc}") from None
        out.append({"path": path, "flags": list(flags)})
    return tuple(out)


def _check_headers(raw: dict, where: str) -> tuple[str, ...]:
    headers = raw.get("headers", [])

    def relative(h: object) -> bool:
        path = PurePosixPath(h) if isinstance(h, str) else None
        return (path is not None and bool(h) and not path.is_absolute() and ".." not in path.parts
                and not any(c in h for c in ";\n\\$"))

    if not isinstance(headers, list) or not all(relative(h) for h in headers):
        raise ResultFileError(f"{where}: headers of {raw.get('target', '?')!r} must be a list of paths relative to "
                              "the source directory (no '..', not absolute)")
    return tuple(headers)


def _check_checks(raw: dict, where: str) -> tuple[str, ...]:
    checks = raw.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
        raise ResultFileError(f"{where}: checks of {raw['target']!r} must be a list of strings")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise ResultFileError(f"{where}: entry for {raw['target']!r} has unknown checks {', '.join(unknown)} "
                              f"(known: {', '.join(CHECKS)})")
    return tuple(checks)


def _check_benchmark(raw: dict, where: str) -> None:
    """Beyond the schema's types: the recorded benchmark and VERIFY commands are bounded, PASS_REGEX compiles."""
    for key in ("benchmark", "verify"):
        if len(raw.get(key, [])) > MAX_FLAGS:
            raise ResultFileError(f"{where}: {key} of {raw['target']!r} must be a list of at most {MAX_FLAGS} strings "
                                  "(the command and its arguments)")
    pass_regex = raw.get("pass_regex", "")
    try:
        re.compile(pass_regex if isinstance(pass_regex, str) else None)
    except (re.error, TypeError) as exc:
        raise ResultFileError(f"{where}: pass_regex of {raw['target']!r} must be a regex ({exc})") from None


@functools.cache
def _types(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number_rule(meta: typing.Mapping) -> str:
    bounds = [f"above {meta['above']}" if "above" in meta else "", f"at least {meta['min']}" if "min" in meta else "",
              f"at most {meta['max']}" if "max" in meta else ""]
    return " ".join(b for b in bounds if b)


def _in_range(number: float, meta: typing.Mapping) -> bool:
    return (("above" not in meta or number > meta["above"]) and ("min" not in meta or number >= meta["min"])
            and ("max" not in meta or number <= meta["max"]))


def _value(value: object, hint: object, meta: typing.Mapping, what: str, name: str) -> object:
    """value (from TOML) checked against a schema type and its metadata; the typed value (arrays -> tuples)."""
    def wrong(expected: str) -> ResultFileError:
        return ResultFileError(f"{what}: {name} must be {expected}, not {_short(value)}")

    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: TOML has no None, so X
        hint = next(a for a in typing.get_args(hint) if a is not type(None))

    if hint is bool:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if hint is int or hint is float:
        finite = hint is int or meta.get("finite", True)
        expected = f"{'a whole number' if hint is int else 'a finite number' if finite else 'a number'} {_number_rule(meta)}"
        if isinstance(value, bool) or not isinstance(value, int if hint is int else (int, float)) \
                or math.isnan(value) or (finite and not math.isfinite(value)) or not _in_range(value, meta):
            raise wrong(expected.strip())
        return float(value) if hint is float else value
    if hint is str:
        if not isinstance(value, str):
            raise wrong("a string")
        if "pattern" in meta and not meta["pattern"].match(value):
            raise ResultFileError(f"{what}: refusing {name} = {value!r}: not a valid {name.replace('_', ' ')}")
        if "one_of" in meta and value not in meta["one_of"]:
            raise ResultFileError(f"{what}: {name} {value!r} is not one of {', '.join(meta['one_of'])}")
        return value
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list):
            raise wrong("an array")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(v, args[0], meta, what, f"{name}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise wrong(f"an array of {len(args)} values")
        return tuple(_value(v, t, meta, what, f"{name}[{i}]") for i, (v, t) in enumerate(zip(value, args)))
    if hint is dict:
        if not isinstance(value, dict):
            raise wrong("a table")
        return _plain(_table(value, meta["row"], f"{what}: {name}")) if "row" in meta else value
    if is_dataclass(hint):
        if not isinstance(value, dict):
            raise wrong("a table")
        return hint(**_table(value, hint, f"{what}: {name}"))
    return value  # a type the schema does not describe further


def _table(raw: dict, cls: type, what: str) -> dict[str, object]:
    """A TOML table checked against the schema dataclass cls: unknown keys named first (with the known key
    they resemble), then missing ones, then each value's type and range; the typed values by key."""
    known = [f.name for f in fields(cls)]
    unknown = sorted(raw.keys() - set(known))
    if unknown:
        close = {k: difflib.get_close_matches(k, known, 1) for k in unknown}
        named = [repr(k) + (f" (did you mean {close[k][0]!r}?)" if close[k] else "") for k in unknown]
        raise ResultFileError(f"{what} has unknown key{'s' if len(unknown) > 1 else ''} {', '.join(named)}"
                              + ("" if all(close.values()) else f" (known: {', '.join(known)})"))
    missing = [f.name for f in fields(cls)
               if f.name not in raw and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise ResultFileError(f"{what} lacks {', '.join(missing)}")
    hints = _types(cls)
    return {f.name: _value(raw[f.name], hints[f.name], f.metadata, what, f.name) for f in fields(cls) if f.name in raw}


def _check_entry(raw: object, where: str) -> FlagsEntry:
    if not isinstance(raw, dict):
        raise ResultFileError(f"{where}: an [[entry]] must be a table")
    target = raw.get("target", "?")
    typed = _table(raw, FlagsEntry, f"{where}: entry for {_short(target)}")
    cpu_features, _ = _check_portability(raw, where)
    flags = _check_flags(raw, where)
    checks = _check_checks(raw, where)
    sources = _check_sources(raw, where)
    _check_benchmark(raw, where)
    if typed.get("device_lto") and raw["language"] != "CUDA":
        raise ResultFileError(f"{where}: device_lto of {raw['target']!r} must be true or false, and true only for a "
                              "CUDA entry")
    return FlagsEntry(**{**typed, "flags": flags, "checks": checks, "acf_sha256": _check_acf_sha256(raw, flags, where),
                         "sources": sources, "headers": _check_headers(raw, where),
                         "cpu_features": cpu_features})


def _load_document(path: Path) -> dict:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ResultFileError(f"{path} is {size} bytes; a compileiq.toml holds at most {MAX_FILE_BYTES >> 20} MiB: "
                              "is it the right file?")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ResultFileError(f"{path} nests arrays or tables too deeply to be read; a compileiq.toml nests a few "
                              "levels: is it the right file?") from None
    except OSError as exc:
        raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_entries(path: Path) -> list[FlagsEntry]:
    if not path.is_file():
        raise ResultFileError(f"{path} does not exist; run a tune first or point to the file")
    data = _load_document(path)
    version = data.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:  # not `true`, which equals 1 in Python
        newer = type(version) is int and version > SCHEMA_VERSION
        raise ResultFileError(f"{path}: schema_version must be {SCHEMA_VERSION}; " + (
            f"it is {version}: written by a newer compileiq_cmake? upgrade it" if newer
            else f"it is {_short(version)}: was it written by compileiq_cmake?"))
    unknown = sorted(data.keys() - set(_TOP_LEVEL))
    if unknown:
        raise ResultFileError(f"{path}: unknown top-level key {', '.join(repr(k) for k in unknown)}; a compileiq.toml "
                              "holds only schema_version and [[entry]] tables")
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list):
        raise ResultFileError(f"{path}: 'entry' must be an array of tables ([[entry]])")
    return [_check_entry(raw, str(path)) for raw in raw_entries]


@dataclass(frozen=True)
class Replacement:
    """What writing a new entry does to the entry with the same key (target, language, arch)."""

    replaces: FlagsEntry | None
    allowed: bool
    message: str  # one line: old vs new (flags, speedup, checks), or why it is not replaced


def _describe(e: FlagsEntry) -> str:
    return (f"flags '{' '.join(e.flags) or '(the project own)'}', speedup {e.speedup:.2f}x, "
            f"checked by {', '.join(e.checks) or 'nothing recorded'}")


def replacement(existing: list[FlagsEntry], new: FlagsEntry, replace: bool) -> Replacement:
    """Whether `new` replaces an entry of `existing`: an entry whose tune compared the program's numbers
    (numerics_checked) is replaced by one whose tune did not only with replace=True (--replace)."""
    old = next((e for e in existing if e.key == new.key), None)
    where = f"{new.target} ({new.language} {new.arch or new.compiler_id})"
    if old is None:
        return Replacement(None, True, f"new entry for {where}")
    change = f"{where} (old: {_describe(old)}; new: {_describe(new)})"
    if numerics_checked(old) and not numerics_checked(new) and not replace:
        checked = ", ".join(c for c in old.checks if c in NUMERICS_CHECKS)
        return Replacement(old, False, (
            f"not replacing the entry for {change}: the old one was checked for numerics ({checked}) and this tune "
            "was not; tune with --compare-output or --compare-file, or pass --replace to replace it anyway"))
    return Replacement(old, True, f"replacing the entry for {change}")


def _plain(value):
    """Tuples to lists, recursively (TOML arrays)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _document(entries: list[FlagsEntry]) -> str:
    return _HEADER + tomli_w.dumps({"schema_version": SCHEMA_VERSION, "entry": [_plain(asdict(e)) for e in entries]})


def _resolve(path: Path) -> Path:
    """The file a write must replace: a symlink's target (written through the link), else path."""
    if not path.is_symlink():
        return path
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:
        raise ResultFileError(f"{path} is a symbolic link that cannot be followed ({exc}); fix or remove it") from None


def _temp_prefix(target: Path) -> str:
    return f".compileiq-{target.name}-"


def _lock_path(target: Path) -> Path:
    return target.with_name(target.name + ".lock")


@contextmanager
def _locked(target: Path, wait: float, log: Callable[[str], None] | None) -> Iterator[None]:
    """An exclusive flock on <target>.lock (left in place: removing it would race with other writers). Held
    by another process: says so once and waits up to `wait` seconds, then CompileIQError."""
    lock = _lock_path(target)
    if lock.is_dir():
        raise ResultFileError(f"the lock file {lock} is a directory; remove it (compileiq_cmake creates it as a file)")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise ResultFileError(f"cannot open the lock file {lock}: {exc.strerror or exc}") from None
    try:
        deadline, said = time.monotonic() + wait, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ResultFileError(f"{lock} stayed locked by another process for {wait:.0f} s (a writer that "
                                          f"hangs? 'fuser {lock}' names it)") from None
                if log is not None and not said:
                    as_stream(log).info(f"waiting for another process's lock on {lock} (at most {wait:.0f} s)",
                                        lock=str(lock), wait=wait)
                    said = True
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # a normal file for the repository, not mkstemp's 0600


def _replace_atomically(target: Path, text: str) -> None:
    """Write a temporary file beside target and rename it over target; no temporary file is left."""
    own = re.compile(re.escape(_temp_prefix(target)) + r"[a-z0-9_]+\.toml")  # mkstemp's random part: no "." or "-"
    for stray in target.parent.glob(_temp_prefix(target) + "*.toml"):  # of a writer killed under the lock
        if own.fullmatch(stray.name):  # not the temporary file of compileiq.toml-x.toml's writer
            stray.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".toml", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            os.fchmod(fh.fileno(), _file_mode())
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _failure(path: Path, exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"could not write {path}: {exc.strerror or exc}"
    if isinstance(exc, CompileIQError):
        return f"could not add the entry to {path}: {exc}"
    return f"could not write {path}: {type(exc).__name__}: {exc}"


def _save_fallback(path: Path, exc: Exception, entry: FlagsEntry, text: str, fallback_dir: Path | None) -> ResultFileError:
    """Keep the result when path cannot be written: the document in fallback_dir; the error to raise."""
    why = _failure(path, exc)
    flags = f"the tuned flags of {entry.target} were: {' '.join(entry.flags) or '(none)'}"
    if fallback_dir is None or not text:
        return ResultFileError(f"{why}; {flags}")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", entry.target)
    saved = fallback_dir / f"compileiq-{name}-{stamp}.toml"
    try:
        fallback_dir.mkdir(parents=True, exist_ok=True)
        saved.write_text(text)
    except OSError as exc2:
        return ResultFileError(f"{why}; saving it to {saved} failed too ({exc2.strerror or exc2}); {flags}")
    return ResultFileError(f"{why}; the entry for {entry.target} was saved to {saved}: copy that file over {path} "
                           "(or merge its [[entry]]) once the problem is fixed")


def write_entry(path: Path, entry: FlagsEntry, fallback_dir: Path | None = None, replace: bool = True,
                log: Callable[[str], None] | None = None, lock_wait: float | None = None) -> Replacement:
    """Merge the entry into the file (replacing one with the same target/language/arch). Under an flock on
    <file>.lock (another holder: `log` says so, and the write waits up to lock_wait seconds, default
    LOCK_WAIT_SECONDS), the file is re-read, merged and atomically replaced, so concurrent writers lose
    nothing; a symlink is written through (its target is replaced). With replace=False, a numerics-checked
    entry is not replaced by an unchecked one (see replacement). Whatever fails (the file cannot be written,
    a full disk, the file was damaged meanwhile, an entry refused), the document is saved in fallback_dir (if
    given; the merged one, else this entry alone) and a CompileIQError names it."""
    text = ""
    try:
        text = _document([entry])
        _check_entry(_plain(asdict(entry)), f"{path} (entry to write)")  # never write what cannot be read back
        target = _resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target, LOCK_WAIT_SECONDS if lock_wait is None else lock_wait, log):
            entries = read_entries(target) if target.exists() else []
            decision = replacement(entries, entry, replace)
            if not decision.allowed:
                raise ResultFileError(decision.message)
            text = _document([e for e in entries if e.key != entry.key] + [entry])
            _replace_atomically(target, text)
    except Exception as exc:  # every failure: the result is kept, and the message says where
        raise _save_fallback(path, exc, entry, text, fallback_dir) from None
    return decision


def check_output_writable(path: Path) -> None:
    """Before a tune spends time: CompileIQError unless its entry could be written to path. An existing file
    must be a valid compileiq.toml (not half-written, empty or of another schema), and its directory (a
    symlink's target's; the nearest existing one for a new path) must let a file be created."""
    target = _resolve(path)
    if target.is_dir():
        raise ResultFileError(f"--output {path} is a directory; give a file name such as compileiq.toml")
    if target.exists():
        try:
            read_entries(target)
        except CompileIQError as exc:
            raise ResultFileError(f"{exc}; fix or remove {path} before tuning: its entry could not be added") from None
    lock = _lock_path(target)
    if lock.is_dir():
        raise ResultFileError(f"the lock file {lock} is a directory, so {path} could not be written after the tune; "
                              "remove it")
    check_creatable(target, "--output")


def _check_acf_sha256(raw: dict, flags: tuple[str, ...], where: str) -> tuple[tuple[str, str], ...]:
    """Every --apply-controls file of the flags has its sha256 recorded (and nothing else is recorded)."""
    pairs = raw.get("acf_sha256", [])
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            and re.fullmatch(r"[0-9a-f]{64}", p[1]) for p in pairs):
        raise ResultFileError(f"{where}: acf_sha256 of {raw.get('target', '?')!r} must be a list of [path, sha256]")
    recorded = {p[0] for p in pairs}
    used = {f[len(ACF_PREFIX):] for f in flags if f.startswith(ACF_PREFIX)}
    if recorded != used:
        raise ResultFileError(f"{where}: entry for {raw.get('target', '?')!r}: every --apply-controls file needs its "
                              "sha256 in acf_sha256, and only those")
    return tuple((p[0], p[1]) for p in pairs)


def _resolved_acf(entry: FlagsEntry, base: Path) -> tuple[tuple[str, ...], str]:
    """The entry's flags with each --apply-controls path made absolute (relative to the TOML's directory;
    nvcc runs in the build tree), or the reason the entry cannot be applied (a missing or changed file)."""
    import hashlib

    digests = dict(entry.acf_sha256)
    flags = []
    for flag in entry.flags:
        if not flag.startswith(ACF_PREFIX):
            flags.append(flag)
            continue
        rel = flag[len(ACF_PREFIX):]
        path = base / rel
        if not path.is_file():
            return (), f"its advanced control file {rel} does not exist"
        if hashlib.sha256(path.read_bytes()).hexdigest() != digests.get(rel):
            return (), f"its advanced control file {rel} changed since the tune (sha256 differs)"
        flags.append(ACF_PREFIX + str(path.resolve()))
    return tuple(flags), ""


def _host_side_only(e: FlagsEntry) -> bool:
    """A CUDA entry whose flags all go to the host compiler (-Xcompiler=): they change no device code."""
    return bool(e.flags) and not e.device_lto and not e.sources and all(f.startswith(HOST_PREFIX) for f in e.flags)


def _cpu_arguments(e: FlagsEntry, host) -> list[str]:
    """TUNED_CPU, HOST_SPECIFIC <flags>, HOST_LACKS <features>, HOST_CHECK <how or why not> of an entry whose
    flags are specific to the CPU it was tuned on (none otherwise)."""
    specific = host_specific(e.flags) + [f for p in e.sources for f in host_specific(p["flags"])]
    if not specific and not e.tuned_cpu:
        return []
    args = ["TUNED_CPU", cmake_quote(e.tuned_cpu or "an unrecorded CPU"), "HOST_SPECIFIC",
            *(cmake_quote(f) for f in dict.fromkeys(specific))]
    if not e.cpu_features:
        return args + ["HOST_CHECK", cmake_quote("the entry records no ISA features to compare")]
    have, how = host(e) if host is not None else (None, "no compiler was asked")
    if have is None:
        return args + ["HOST_CHECK", cmake_quote(f"this host's ISA features are unknown ({how})")]
    lacks = [f for f in e.cpu_features if f not in have]
    return args + ["HOST_CHECK", cmake_quote(how), *(["HOST_LACKS", *lacks] if lacks else ["HOST_HAS_FEATURES"])]


def cmake_entries(entries: list[FlagsEntry], base: Path | None = None,
                  host: Callable[[FlagsEntry], tuple[frozenset[str] | None, str]] | None = None) -> str:
    """CMake code with one _compileiq_entry() call per (validated) entry; replays are never applied.
    `base`: the TOML's directory, against which --apply-controls paths are resolved and checked. `host`: for
    an entry tuned on a recorded CPU, this host's ISA features (None: unknown) and how they were found."""
    lines = ["# generated by compileiq_cmake from a validated compileiq.toml"]
    for e in entries:
        if e.replay:
            lines.append(f"message(STATUS {cmake_quote('compileiq: entry for ' + e.target + ' comes from a replay; not applied')})")
            continue
        flags, problem = _resolved_acf(e, base or Path.cwd()) if e.acf_sha256 else (e.flags, "")
        if problem:
            lines.append(f"message(WARNING {cmake_quote(f'compileiq: flags for {e.target} not applied: {problem}; re-run the tune')})")
            continue
        e = replace(e, flags=flags)
        args = [
            "TARGET", cmake_quote(e.target), "LANGUAGE", e.language, "ARCH", cmake_quote(e.arch),
            "COMPILER_ID", e.compiler_id, "COMPILER_VERSION", e.compiler_major_minor,
            "COMPILER_VERSION_FULL", cmake_quote(e.compiler_version), "SOURCES_SHA256", cmake_quote(e.sources_sha256),
            *(["HEADERS", *(cmake_quote(h) for h in e.headers)] if e.headers else []),
            *(["FLAGS_SHA256", cmake_quote(e.flags_sha256)] if e.flags_sha256 else []),
            "DATE", cmake_quote(e.date), "CONFIG", cmake_quote(e.build_type), *(["DEVICE_LTO"] if e.device_lto else []),
            *(["ARCH_SCOPE", e.arch_scope] if e.arch_scope != "all" else []),
            *(["HOST_SIDE_ONLY"] if _host_side_only(e) else []),
            *_cpu_arguments(e, host),
            "FLAGS", *(cmake_quote(f) for f in e.flags),
        ]
        lines.append("_compileiq_entry(" + " ".join(args) + ")")
        for part in e.sources:
            lines.append("_compileiq_source_flags(" + " ".join([
                "TARGET", cmake_quote(e.target), "LANGUAGE", e.language, "ARCH", cmake_quote(e.arch),
                "CONFIG", cmake_quote(e.build_type), "SOURCE", cmake_quote(part["path"]),
                "FLAGS", *(cmake_quote(f) for f in part["flags"])]) + ")")
        if e.sources:
            lines.append(f"_compileiq_source_flags_done(TARGET {cmake_quote(e.target)} LANGUAGE {e.language} "
                         f"ARCH {cmake_quote(e.arch)} COUNT {len(e.sources)})")
    return "\n".join(lines) + "\n"
