"""The optimal-flags TOML: schema, strict reading (validated against the flag grammar, with caps on its
size), writes that lose nothing (a lock on <file>.lock, re-read and merged under it, atomic replace,
written through a symlink, a fallback copy when the write fails), the check that a tune will be able to
write it, the replacement policy for entries guarded by numerics checks, and the CMake entries that
configures apply."""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import tomllib
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import tomli_w

from .errors import CompileIQError
from .flags import validate_flags
from .portability import host_specific, resolved_token_ok

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
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_ACF_PATH = re.compile(r"^[A-Za-z0-9_.+\-]+(/[A-Za-z0-9_.+\-]+)*$")
_LANGUAGES = {"CUDA": "nvcc", "CXX": "gcc", "C": "gcc"}
_HEADER = "# Written by compileiq_cmake: tuned compiler flags. Commit it; configures apply it.\n"


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
    checks: tuple[str, ...] = ()  # what guarded the tune's results: names from CHECKS
    acf_sha256: tuple[tuple[str, str], ...] = ()  # (relative path, sha256) of each --apply-controls file
    # per-source flags on top of `flags`: ({"path": relative to the source dir, "flags": [...]}, ...)
    sources: tuple[dict, ...] = ()
    # CUDA, relocatable device code: device link-time optimization (-dlto at compile and at device link)
    device_lto: bool = False
    # host-specific flags (-march=native ...) resolved at tune time: the CPU tuned on and the ISA features they need
    tuned_cpu: str = ""
    cpu_features: tuple[str, ...] = ()
    # CUDA: "all" (the flags go to every architecture the target builds) or "tuned" (only to builds of arch alone)
    arch_scope: str = "all"

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
        raise CompileIQError(f"{where}: flags of {raw['target']!r} must be a list of strings")
    if len(flags) > MAX_FLAGS:
        raise CompileIQError(f"{where}: entry for {raw['target']!r} has {len(flags)} flags; at most {MAX_FLAGS} "
                             "are allowed: is it the right file?")
    family = _LANGUAGES[raw["language"]]
    acf = [f for f in flags if family == "nvcc" and isinstance(f, str) and f.startswith(ACF_PREFIX)]
    for flag in acf:
        if _acf_problem(flag):
            raise CompileIQError(f"{where}: {_acf_problem(flag)}")
    resolved = [f for f in flags if raw.get("tuned_cpu") and isinstance(f, str)
                and resolved_token_ok(f, tuple(raw.get("cpu_features", ())))]  # -march=native, resolved at tune time
    try:
        validate_flags(family, [f for f in flags if f not in acf and f not in resolved])
    except CompileIQError as exc:
        raise CompileIQError(f"{where}: {exc}") from None
    return tuple(flags)


def _check_portability(raw: dict, where: str) -> tuple[tuple[str, ...], str]:
    """cpu_features (a list of ISA feature names, with tuned_cpu only) and arch_scope (one of ARCH_SCOPES)."""
    features, cpu, scope = raw.get("cpu_features", []), raw.get("tuned_cpu", ""), raw.get("arch_scope", "all")
    if not isinstance(cpu, str) or not isinstance(features, list) or (features and not cpu) or not all(
            isinstance(f, str) and _CPU_FEATURE.match(f) for f in features):
        raise CompileIQError(f"{where}: tuned_cpu of {raw['target']!r} must be a string and cpu_features a list of ISA "
                             "feature names (e.g. [\"avx2\"]), given only with tuned_cpu")
    if scope not in ARCH_SCOPES or (scope != "all" and raw["language"] != "CUDA"):
        raise CompileIQError(f"{where}: arch_scope of {raw['target']!r} must be \"all\" or \"tuned\" (\"tuned\" only "
                             "for a CUDA entry)")
    return tuple(features), scope


def _check_sources(raw: dict, where: str) -> tuple[dict, ...]:
    """The per-source part: each a table with a path relative to the source dir (no '..', no absolute path)
    and its own flags, validated like the entry's; a file at most once."""
    sources = raw.get("sources", [])
    target = raw["target"]
    if not isinstance(sources, list) or not all(isinstance(x, dict) for x in sources):
        raise CompileIQError(f"{where}: sources of {target!r} must be a list of tables ([[entry.sources]])")
    if len(sources) > MAX_SOURCES:
        raise CompileIQError(f"{where}: entry for {target!r} has {len(sources)} per-source parts; at most {MAX_SOURCES}")
    family = _LANGUAGES[raw["language"]]
    out, seen = [], set()
    for x in sources:
        unknown = sorted(x.keys() - {"path", "flags"})
        if unknown or "path" not in x or "flags" not in x:
            raise CompileIQError(f"{where}: a per-source part of {target!r} needs exactly path and flags"
                                 + (f" (unknown keys {', '.join(unknown)})" if unknown else ""))
        path = x["path"]
        if not isinstance(path, str) or not _SOURCE_PATH.match(path) or ".." in path.split("/"):
            raise CompileIQError(f"{where}: refusing source path {path!r} of {target!r}: give a path relative to the "
                                 "source directory, '/'-separated, without '..'")
        if path in seen:
            raise CompileIQError(f"{where}: source {path!r} of {target!r} has two per-source parts")
        seen.add(path)
        flags = x["flags"]
        if not isinstance(flags, list) or not flags or not all(isinstance(f, str) for f in flags) or len(flags) > MAX_FLAGS:
            raise CompileIQError(f"{where}: flags of source {path!r} of {target!r} must be a non-empty list of strings")
        try:
            validate_flags(family, [f for f in flags if not (raw.get("tuned_cpu") and resolved_token_ok(
                f, tuple(raw.get("cpu_features", ()))))])
        except CompileIQError as exc:
            raise CompileIQError(f"{where}: source {path!r}: {exc}") from None
        out.append({"path": path, "flags": list(flags)})
    return tuple(out)


def _check_checks(raw: dict, where: str) -> tuple[str, ...]:
    checks = raw.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
        raise CompileIQError(f"{where}: checks of {raw['target']!r} must be a list of strings")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise CompileIQError(f"{where}: entry for {raw['target']!r} has unknown checks {', '.join(unknown)} "
                             f"(known: {', '.join(CHECKS)})")
    return tuple(checks)


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
    cpu_features, _ = _check_portability(raw, where)
    flags = _check_flags(raw, where)
    checks = _check_checks(raw, where)
    sources = _check_sources(raw, where)
    device_lto = raw.get("device_lto", False)
    if not isinstance(device_lto, bool) or (device_lto and raw["language"] != "CUDA"):
        raise CompileIQError(f"{where}: device_lto of {raw['target']!r} must be true or false, and true only for a "
                             "CUDA entry")
    try:
        return FlagsEntry(
            **{**raw, "flags": flags, "workloads": tuple(raw["workloads"]), "baseline": tuple(raw["baseline"]),
               "tuned": tuple(raw["tuned"]), "speedup_ci": tuple(raw.get("speedup_ci", (0.0, 0.0))),
               "workload_speedups": tuple(raw.get("workload_speedups", ())),
               "workload_ci": tuple(tuple(x) for x in raw.get("workload_ci", ())),
               "p_values": tuple(raw.get("p_values", ())), "contributions": tuple(raw.get("contributions", ())),
               "checks": checks, "acf_sha256": _check_acf_sha256(raw, flags, where), "sources": sources,
               "cpu_features": cpu_features}
        )
    except TypeError as exc:
        raise CompileIQError(f"{where}: malformed entry: {exc}") from None


def _load_document(path: Path) -> dict:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise CompileIQError(f"{path} is {size} bytes; a compileiq.toml holds at most {MAX_FILE_BYTES >> 20} MiB: "
                             "is it the right file?")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CompileIQError(f"{path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise CompileIQError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_entries(path: Path) -> list[FlagsEntry]:
    if not path.is_file():
        raise CompileIQError(f"{path} does not exist; run a tune first or point to the file")
    data = _load_document(path)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        raise CompileIQError(f"{path}: schema_version must be {SCHEMA_VERSION}; " + (
            f"it is {version}: written by a newer compileiq_cmake? upgrade it" if newer
            else "was it written by compileiq_cmake?"))
    unknown = sorted(data.keys() - set(_TOP_LEVEL))
    if unknown:
        raise CompileIQError(f"{path}: unknown top-level key {', '.join(repr(k) for k in unknown)}; a compileiq.toml "
                             "holds only schema_version and [[entry]] tables")
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list):
        raise CompileIQError(f"{path}: 'entry' must be an array of tables ([[entry]])")
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
        raise CompileIQError(f"{path} is a symbolic link that cannot be followed ({exc}); fix or remove it") from None


def _temp_prefix(target: Path) -> str:
    return f".compileiq-{target.name}-"


@contextmanager
def _locked(target: Path) -> Iterator[None]:
    """An exclusive flock on <target>.lock (left in place: removing it would race with other writers)."""
    fd = os.open(target.with_name(target.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # a normal file for the repository, not mkstemp's 0600


def _replace_atomically(target: Path, text: str) -> None:
    """Write a temporary file beside target and rename it over target; no temporary file is left."""
    for stray in target.parent.glob(_temp_prefix(target) + "*.toml"):  # of a writer killed under the lock
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


def _save_fallback(path: Path, exc: OSError, entry: FlagsEntry, text: str, fallback_dir: Path | None) -> CompileIQError:
    """Keep the result when path cannot be written: the document in fallback_dir; the error to raise."""
    why = f"could not write {path}: {exc.strerror or exc}"
    flags = f"the tuned flags of {entry.target} were: {' '.join(entry.flags) or '(none)'}"
    if fallback_dir is None:
        return CompileIQError(f"{why}; {flags}")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", entry.target)
    saved = fallback_dir / f"compileiq-{name}-{stamp}.toml"
    try:
        fallback_dir.mkdir(parents=True, exist_ok=True)
        saved.write_text(text)
    except OSError as exc2:
        return CompileIQError(f"{why}; saving it to {saved} failed too ({exc2.strerror or exc2}); {flags}")
    return CompileIQError(f"{why}; the entry for {entry.target} was saved to {saved}: copy that file over {path} "
                          "once the problem is fixed")


def write_entry(path: Path, entry: FlagsEntry, fallback_dir: Path | None = None, replace: bool = True) -> Replacement:
    """Merge the entry into the file (replacing one with the same target/language/arch). Under an flock on
    <file>.lock, the file is re-read, merged and atomically replaced, so concurrent writers lose nothing;
    a symlink is written through (its target is replaced). With replace=False, a numerics-checked entry
    is not replaced by an unchecked one (CompileIQError, see replacement). When the write fails (OSError,
    e.g. a full disk), the merged file is saved in fallback_dir (if given) and a CompileIQError names it."""
    _check_entry(_plain(asdict(entry)), f"{path} (entry to write)")  # never write what cannot be read back
    target = _resolve(path)
    text = _document([entry])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target):
            entries = read_entries(target) if target.exists() else []
            decision = replacement(entries, entry, replace)
            if not decision.allowed:
                raise CompileIQError(decision.message)
            text = _document([e for e in entries if e.key != entry.key] + [entry])
            _replace_atomically(target, text)
    except OSError as exc:
        raise _save_fallback(path, exc, entry, text, fallback_dir) from None
    return decision


def check_output_writable(path: Path) -> None:
    """Before a tune spends time: CompileIQError unless its entry could be written to path. An existing file
    must be a valid compileiq.toml (not half-written, empty or of another schema), and its directory (a
    symlink's target's; the nearest existing one for a new path) must let a file be created."""
    target = _resolve(path)
    if target.is_dir():
        raise CompileIQError(f"--output {path} is a directory; give a file name such as compileiq.toml")
    if target.exists():
        try:
            read_entries(target)
        except CompileIQError as exc:
            raise CompileIQError(f"{exc}; fix or remove {path} before tuning: its entry could not be added") from None
    directory = target.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    if not directory.is_dir():
        raise CompileIQError(f"cannot write {path}: {directory} is not a directory; choose another --output")
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".toml", dir=directory)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise CompileIQError(f"cannot write in {directory} ({exc.strerror or exc}), so {path} could not be written "
                             "after the tune; choose another --output or fix the permissions") from None


def _check_acf_sha256(raw: dict, flags: tuple[str, ...], where: str) -> tuple[tuple[str, str], ...]:
    """Every --apply-controls file of the flags has its sha256 recorded (and nothing else is recorded)."""
    pairs = raw.get("acf_sha256", [])
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            and re.fullmatch(r"[0-9a-f]{64}", p[1]) for p in pairs):
        raise CompileIQError(f"{where}: acf_sha256 of {raw.get('target', '?')!r} must be a list of [path, sha256]")
    recorded = {p[0] for p in pairs}
    used = {f[len(ACF_PREFIX):] for f in flags if f.startswith(ACF_PREFIX)}
    if recorded != used:
        raise CompileIQError(f"{where}: entry for {raw.get('target', '?')!r}: every --apply-controls file needs its "
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
    from .portability import HOST_PREFIX

    return bool(e.flags) and not e.device_lto and not e.sources and all(f.startswith(HOST_PREFIX) for f in e.flags)


def _cpu_arguments(e: FlagsEntry, host) -> list[str]:
    """TUNED_CPU, HOST_SPECIFIC <flags>, HOST_LACKS <features>, HOST_CHECK <how or why not> of an entry whose
    flags are specific to the CPU it was tuned on (none otherwise)."""
    from .cmake_project import cmake_quote

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
    from .cmake_project import cmake_quote

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
