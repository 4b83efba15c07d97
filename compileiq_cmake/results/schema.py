"""The optimal-flags TOML's schema: the declarative dataclasses of an [[entry]] (FlagsEntry, its row tables),
each field's type with what its value must satisfy in its metadata, checked by the one checker of a TOML table
against them (schema_types._table), and the rules no field's metadata can express (they relate fields, bound a
list's length or check flags against the flag grammar): check_entry applies both."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..flags import validate_flags
from ..flags.acf import acf_path
from ..flags.portability import resolved_token_ok
from ..model.errors import CompileIQError, ResultFileError
from ..model.spec import OBJECTIVES
from .schema_types import _table, short_repr

SCHEMA_VERSION = 1
MAX_FLAGS = 256  # per entry
MAX_SOURCES = 1024  # per-source parts per entry
_RELATIVE_PATH = re.compile(r"^[A-Za-z0-9_.+\-]+(/[A-Za-z0-9_.+\-]+)*$")  # relative, '/'-separated, no spaces
CHECKS = ("pass_regex", "verify", "compare_output", "compare_file")  # what guarded a tune's results
NUMERICS_CHECKS = ("compare_output", "compare_file")
ACF_PREFIX = "--apply-controls="  # the nvcc-type spelling; ptxas controls are "-Xptxas=" + this (flags.acf)
ARCH_SCOPES = ("all", "tuned")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CPU_FEATURE = re.compile(r"^(?:[a-z]|3dnow)[a-z0-9_.\-]*$")
_ONE_LINE = re.compile(r"^[^\x00-\x1f\x7f]{0,200}$")  # printable, one line (what check's records are made of)
_TARGET_NAME = re.compile(r"^[A-Za-z0-9_.+\-]+(::[A-Za-z0-9_.+\-]+)*$")
_BUILD_TYPE = re.compile(r"^[A-Za-z0-9_]*$")  # a CMake configuration name, or empty
_ARCH = re.compile(r"^([0-9]{2,3}[af]?)?$")
_COMPILER_ID = re.compile(r"^[A-Za-z]+$")
_SHA256_OR_EMPTY = re.compile(r"^([0-9a-f]{64})?$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_LANGUAGES = {"CUDA": "nvcc", "CXX": "gcc", "C": "gcc"}


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
    baseline: tuple[float, ...] = field(metadata={"above": 0})  # medians: a time or a rate is positive
    tuned: tuple[float, ...] = field(metadata={"above": 0})
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
    checks: tuple[str, ...] = field(default=(), metadata={"one_of": CHECKS})  # what guarded the tune's results
    acf_sha256: tuple[tuple[str, str], ...] = ()  # (relative path, sha256) of each --apply-controls file
    # the ptxas version the --apply-controls files were tuned with (ptxas rejects another version's files; the
    # apply leaves them out, said, and applies the rest); "" in entries written before it was recorded
    acf_ptxas: str = field(default="", metadata={"pattern": re.compile(r"^([0-9]+(\.[0-9]+){1,2})?$")})
    # per-source flags on top of `flags`: ({"path": relative to the source dir, "flags": [...]}, ...)
    sources: tuple[dict, ...] = field(default=(), metadata={"row": SourceRow})
    # CUDA, relocatable device code: device link-time optimization of the CUDA code only (LTO IR of `arch` at
    # compile, -dlto at the device link; cmake/CompileIQ.cmake, _compileiq_device_lto)
    device_lto: bool = False
    # device LTO of a STATIC or OBJECT library: the consumers whose device link the tune measured (only they
    # get -dlto; the library's other consumers link its machine code)
    device_link: tuple[str, ...] = field(default=(), metadata={"pattern": _TARGET_NAME})
    # how the tune measured, for `check --remeasure`: the benchmark command (paths in the build tree relative
    # to it, e.g. "./bin/nbody": it runs in a tree of the project as its working directory), its PASS_REGEX
    # and VERIFY command; () and "" in entries written before they were recorded
    benchmark: tuple[str, ...] = ()
    pass_regex: str = ""
    verify: tuple[str, ...] = ()
    # the project headers the target's compiles include (relative to the source dir): sources_sha256 covers them
    headers: tuple[str, ...] = ()
    flags_sha256: str = field(
        default="", metadata={"pattern": _SHA256_OR_EMPTY}
    )  # CMAKE_<LANG>_FLAGS and CMAKE_<LANG>_FLAGS_<CONFIG> of the tune (cmake/CompileIQ.cmake)
    # host-specific flags (-march=native ...) resolved at tune time: the CPU tuned on and the ISA features they need
    tuned_cpu: str = field(default="", metadata={"pattern": _ONE_LINE})
    cpu_features: tuple[str, ...] = field(default=(), metadata={"pattern": _CPU_FEATURE})  # ISA feature names
    # CUDA: "all" (the flags go to every architecture the target builds) or "tuned" (only to builds of arch alone)
    arch_scope: str = field(default="all", metadata={"one_of": ARCH_SCOPES})
    # what the tune's --time-limit left untested (fewer finalists or rounds, flags not ablated), one phrase each
    untested: tuple[str, ...] = ()
    # the written flags no ablation step showed to matter (the box left their step out;
    # decide.validation.untested_flags)
    untested_flags: tuple[str, ...] = ()
    # where speedup and its intervals come from: "confirmation" (rounds of the winner measured after every
    # decision, used for nothing else), "deciding rounds" (no time was left for a confirmation: the rounds
    # that accepted it, a little optimistic), "validation and confirmation" (entries of issue 51's second pass: a
    # confirmation too short to show it faster alone, pooled with the rounds that accepted it; no longer written:
    # such a confirmation now goes on with fresh rounds), "" (entries written before it was recorded)
    speedup_from: str = field(
        default="", metadata={"one_of": ("", "confirmation", "deciding rounds", "validation and confirmation")}
    )
    # provenance (measure/provenance.py): where the tune measured, beyond the device's name; "" = not read
    driver_version: str = field(default="", metadata={"pattern": _ONE_LINE})
    cuda_driver: str = field(default="", metadata={"pattern": _ONE_LINE})
    host_compiler: str = field(
        default="", metadata={"pattern": _ONE_LINE}
    )  # CUDA: the compiler nvcc hands host code to
    gpu_clocks: str = field(default="", metadata={"pattern": _ONE_LINE})
    power_limit: str = field(default="", metadata={"pattern": _ONE_LINE})
    ecc: str = field(default="", metadata={"pattern": _ONE_LINE})
    host_cpu: str = field(default="", metadata={"pattern": _ONE_LINE})
    # what the tune minimized: "time" (the metric: baseline, tuned and speedup are the metric's) or "energy"
    # (joules per run from the GPU's counter: baseline and tuned are joules, speedup is the energy ratio)
    objective: str = field(default="time", metadata={"one_of": OBJECTIVES})

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.target, self.language, self.arch or self.compiler_id)

    @property
    def identity(self) -> tuple:
        """What the entry was tuned on: its key (target, language, architecture), the sources with the headers
        they include, the project's own compile flags, the compiler's version, the build type and the device
        (what a rerun that changed nothing keeps; a change of any of them makes the entry stale)."""
        return identity_of(
            self.target,
            self.language,
            self.arch,
            self.compiler_id,
            self.sources_sha256,
            self.flags_sha256,
            self.compiler_version,
            self.build_type,
            self.device,
            self.objective,
        )

    @property
    def compiler_major_minor(self) -> str:
        return ".".join(self.compiler_version.split(".")[:2])


def identity_of(
    target: str,
    language: str,
    arch: str,
    compiler_id: str,
    sources_sha256: str,
    flags_sha256: str,
    compiler_version: str,
    build_type: str,
    device: str,
    objective: str = "time",
) -> tuple:
    """FlagsEntry.identity of an entry with these fields (a tune asks it of what it would write); the objective
    counts where it is not time (entries written before it existed keep their identity)."""
    return (
        (target, language, arch or compiler_id),
        sources_sha256,
        flags_sha256,
        compiler_version,
        build_type,
        device,
        *((objective,) if objective != "time" else ()),
    )


def duplicate_entries(entries: list[FlagsEntry]) -> dict[tuple[str, str, str], list[FlagsEntry]]:
    """The keys (target, language, architecture or compiler) that more than one entry has, with those entries
    in the file's order. One rule for them everywhere (the configure, check, show, the writer): none of them
    applies, and a tune of the target replaces them all (duplicates_line says so)."""
    by_key: dict[tuple[str, str, str], list[FlagsEntry]] = {}
    for e in entries:
        by_key.setdefault(e.key, []).append(e)
    return {k: v for k, v in by_key.items() if len(v) > 1}


def duplicates_line(entries: list[FlagsEntry], group: list[FlagsEntry], file: str = "compileiq.toml") -> str:
    """One line naming every entry of one duplicated key (its place in the file, flags, build type, date), that
    none of them applies and how to fix it."""
    first = group[0]
    where = f"{first.target} ({first.language} {'sm_' + first.arch if first.arch else first.compiler_id})"
    places = [next(i for i, e in enumerate(entries, 1) if e is g) for g in group]
    each = "; ".join(
        f"#{i}: {' '.join(e.flags) or '(no flags)'}, {e.build_type or 'every build type'}, {e.date or 'undated'}"
        for i, e in zip(places, group, strict=True)
    )
    return (
        f"{file} has {len(group)} entries for {where} ({each}): none of them applies (one set of flags per target "
        "and language); delete all but one, or re-run the tune, which replaces them"
    )


def numerics_checked(entry: FlagsEntry) -> bool:
    """Whether the tune that wrote the entry compared the program's numbers with the baseline's."""
    return any(c in NUMERICS_CHECKS for c in entry.checks)


def _acf_problem(flag: str) -> str:
    """Why an --apply-controls= flag is refused ("" when it is fine): its file must be a relative path
    inside the source tree (relative to the compileiq.toml), never absolute or escaping with '..'."""
    rel = acf_path(flag) or ""
    if rel and _RELATIVE_PATH.match(rel) and ".." not in PurePosixPath(rel).parts:
        return ""
    return (
        f"refusing flag {flag!r}: --apply-controls must name a relative path inside the source tree "
        "(e.g. --apply-controls=controls/fast.acf), not an absolute path or one with '..'"
    )


def _check_flags(typed: dict, where: str) -> None:
    """At most MAX_FLAGS; --apply-controls files relative (_acf_problem); the others valid flags of the entry's
    compiler family, but for the host-specific tokens resolved at tune time (-march=native ...)."""
    flags, target = typed["flags"], typed["target"]
    if len(flags) > MAX_FLAGS:
        raise ResultFileError(
            f"{where}: entry for {target!r} has {len(flags)} flags; at most {MAX_FLAGS} "
            "are allowed: is it the right file?"
        )
    family = _LANGUAGES[typed["language"]]
    acf = [f for f in flags if family == "nvcc" and acf_path(f) is not None]
    for flag in acf:
        if _acf_problem(flag):
            raise ResultFileError(f"{where}: {_acf_problem(flag)}")
    try:
        validate_flags(family, [f for f in flags if f not in acf and not _resolved(f, typed)])
    except CompileIQError as exc:
        raise ResultFileError(f"{where}: {exc}") from None


def _resolved(flag: str, typed: dict) -> bool:
    """Whether flag is a host-specific token (-march=native ...) resolved at tune time for the entry's CPU."""
    return bool(typed.get("tuned_cpu")) and resolved_token_ok(flag, typed.get("cpu_features", ()))


def _check_portability(typed: dict, where: str) -> None:
    """cpu_features given only with tuned_cpu; arch_scope "tuned" only for CUDA."""
    if typed.get("cpu_features") and not typed.get("tuned_cpu"):
        raise ResultFileError(
            f"{where}: tuned_cpu of {typed['target']!r} must be a string and cpu_features a list of ISA "
            'feature names (e.g. ["avx2"]), given only with tuned_cpu'
        )
    if typed.get("arch_scope", "all") != "all" and typed["language"] != "CUDA":
        raise ResultFileError(
            f'{where}: arch_scope of {typed["target"]!r} must be "all" or "tuned" ("tuned" only for a CUDA entry)'
        )


def _check_sources(typed: dict, where: str) -> None:
    """The per-source parts (keys and types: SourceRow): at most MAX_SOURCES, each path relative to the
    source dir (no '..', no absolute path) and a file at most once, its own flags non-empty and validated
    like the entry's."""
    sources, target = typed.get("sources", ()), typed["target"]
    if len(sources) > MAX_SOURCES:
        raise ResultFileError(
            f"{where}: entry for {target!r} has {len(sources)} per-source parts; at most {MAX_SOURCES}"
        )
    family = _LANGUAGES[typed["language"]]
    seen = set()
    for x in sources:
        path, flags = x["path"], x["flags"]
        for flag in flags:
            if family == "nvcc" and acf_path(flag) is not None and _acf_problem(flag):
                raise ResultFileError(f"{where}: source {path!r}: {_acf_problem(flag)}")
        if not _RELATIVE_PATH.match(path) or ".." in path.split("/"):
            raise ResultFileError(
                f"{where}: refusing source path {path!r} of {target!r}: give a path relative to the "
                "source directory, '/'-separated, without '..'"
            )
        if path in seen:
            raise ResultFileError(f"{where}: source {path!r} of {target!r} has two per-source parts")
        seen.add(path)
        if not flags or len(flags) > MAX_FLAGS:
            raise ResultFileError(
                f"{where}: flags of source {path!r} of {target!r} must be a non-empty list of strings"
            )
        try:
            validate_flags(family, [f for f in flags if not _resolved(f, typed)])
        except CompileIQError as exc:
            raise ResultFileError(f"{where}: source {path!r}: {exc}") from None


def _check_headers(typed: dict, where: str) -> None:
    def relative(h: str) -> bool:
        path = PurePosixPath(h)
        return bool(h) and not path.is_absolute() and ".." not in path.parts and not any(c in h for c in ";\n\\$")

    if not all(relative(h) for h in typed.get("headers", ())):
        raise ResultFileError(
            f"{where}: headers of {typed['target']!r} must be a list of paths relative to "
            "the source directory (no '..', not absolute)"
        )


def _check_benchmark(typed: dict, where: str) -> None:
    """The recorded benchmark and VERIFY commands are bounded, PASS_REGEX compiles."""
    for key in ("benchmark", "verify"):
        if len(typed.get(key, ())) > MAX_FLAGS:
            raise ResultFileError(
                f"{where}: {key} of {typed['target']!r} must be a list of at most {MAX_FLAGS} strings "
                "(the command and its arguments)"
            )
    try:
        re.compile(typed.get("pass_regex", ""))
    except re.error as exc:
        raise ResultFileError(f"{where}: pass_regex of {typed['target']!r} must be a regex ({exc})") from None


def _check_acf_sha256(typed: dict, where: str) -> None:
    """Every --apply-controls file of the flags has its sha256 recorded (and nothing else is recorded)."""
    pairs = typed.get("acf_sha256", ())
    if not all(_SHA256.fullmatch(digest) for _, digest in pairs):
        raise ResultFileError(f"{where}: acf_sha256 of {typed['target']!r} must be a list of [path, sha256]")
    recorded = {path for path, _ in pairs}
    flags = [*typed["flags"], *(f for x in typed.get("sources", ()) for f in x["flags"])]
    used = {acf_path(f) for f in flags if acf_path(f) is not None}
    if recorded != used:
        raise ResultFileError(
            f"{where}: entry for {typed['target']!r}: every --apply-controls file needs its "
            "sha256 in acf_sha256, and only those"
        )


def check_entry(raw: object, where: str) -> FlagsEntry:
    """An [[entry]] table read from TOML, checked against the schema (FlagsEntry's fields) and then by the rules
    it cannot express; the entry."""
    if not isinstance(raw, dict):
        raise ResultFileError(f"{where}: an [[entry]] must be a table")
    typed = _table(raw, FlagsEntry, f"{where}: entry for {short_repr(raw.get('target', '?'))}")
    _check_portability(typed, where)
    _check_flags(typed, where)
    _check_sources(typed, where)
    _check_benchmark(typed, where)
    if typed.get("device_lto") and typed["language"] != "CUDA":
        raise ResultFileError(
            f"{where}: device_lto of {typed['target']!r} must be true or false, and true only for a CUDA entry"
        )
    if typed.get("device_link") and not typed.get("device_lto"):
        raise ResultFileError(
            f"{where}: device_link of {typed['target']!r} names the consumers device-linked with "
            "device LTO: only an entry with device_lto = true has it"
        )
    _check_acf_sha256(typed, where)
    _check_headers(typed, where)
    return FlagsEntry(**typed)
