"""Loading a flag space, filtering it for the installed compiler and the user's include/exclude lists,
the interaction rules of a catalogue (``[[rule]]``: canonical_flags), and the flag grammar that every flag read
back from a TOML must satisfy."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import build_flags
from ..model.errors import CompileIQError
from ..model.records import FlagSet

_DATA_DIR = Path(__file__).resolve().parent
_SAFE_TOKEN = re.compile(r"^--?[A-Za-z0-9_][A-Za-z0-9_=.,+:\-]*$")
_ACF_TOKEN = re.compile(
    r"^(-Xptxas=)?--apply-controls=/[A-Za-z0-9_.+/\-]+$"
)  # an Advanced Control File (absolute path)
UNSAFE_GROUP = "unsafe_numerics"
EXPERIMENTAL_GROUP = "experimental"
HOST_SPECIFIC_GROUP = "cpu_specific"  # flags whose code runs only on CPUs like the tuning host's (-march=native)
GROUPS = (UNSAFE_GROUP, EXPERIMENTAL_GROUP, HOST_SPECIFIC_GROUP)
# The host side of CUDA translation units: the host compiler's catalogue (gcc.toml), each token passed by nvcc
# as -Xcompiler=<token>, each dimension named host_<name> (host_side.py decides when they are searched).
HOST_PREFIX = "-Xcompiler="
HOST_GROUP = "host_side"
HOST_SHARE = 0.5  # host-side dimensions join a CUDA tune when host code takes this share of a run (tune.host_side)


def host_side_named(include: tuple[str, ...]) -> bool:
    """Whether --include-flags names the host side of a CUDA target (the group or one host_<name>)."""
    return any(n == HOST_GROUP or n.startswith("host_") for n in include)


# Dimensions added by the tune itself (not in the catalogue file) that --include/--exclude-flags may name.
BUILD_MODE_DIMENSIONS = {"nvcc": {"device_lto", HOST_GROUP}}


@dataclass(frozen=True)
class Dimension:
    name: str
    help: str
    values: tuple[tuple[str, ...], ...]  # values[0] == () : the project's own flags
    unsafe_numerics: bool = False
    relaxes_numerics: bool = False  # approximate arithmetic: its single-flag changes are measured first
    experimental: bool = False
    archs: tuple[int, ...] = ()  # sm numbers it applies to; () = every architecture
    build_mode: bool = False  # not a compile flag (device LTO, build_flags): measured first among the singles
    cpu_specific: bool = False  # its code needs the tuning host's CPU (-march=native): tune --portable drops it
    measured_first: bool = False  # its singles come right after the build modes' (an unoptimized build's -O level)
    # the project's build is unlike the prior's observations in it (an unoptimized target's -O level: the
    # observations are of optimized builds): marked first, it stays first whatever the prior predicts of it
    unlike_observed: bool = False
    leading: int = 0  # its values 1..leading come first among the singles, in this order (ACFs that cut spills)
    ablated_first: bool = False  # opaque (an Advanced Controls file): a winner's own ablation step for it comes first

    def labels(self) -> list[str]:
        return ["default"] + [" ".join(v) for v in self.values[1:]]


@dataclass(frozen=True)
class FlagSpace:
    family: str
    dimensions: tuple[Dimension, ...]
    dropped: tuple[str, ...] = ()  # "name: reason"

    @property
    def size(self) -> int:
        n = 1
        for d in self.dimensions:
            n *= len(d.values)
        return n

    def baseline(self) -> FlagSet:
        return self.flagset({d.name: 0 for d in self.dimensions})

    def flagset(self, choice: dict[str, int]) -> FlagSet:
        pairs = tuple((d.name, int(choice.get(d.name, 0))) for d in self.dimensions)
        flags: list[str] = []
        for d, (_, i) in zip(self.dimensions, pairs, strict=False):
            flags.extend(d.values[i])
        if self.family == "nvcc":  # interaction rules: redundant tokens dropped, repairs added
            flags = _canonical_by_file(flags)
        return FlagSet(choices=tuple(p for p in pairs if p[1]), flags=tuple(flags))

    def flagset_from_flags(self, flags: list[str]) -> FlagSet:
        """Map flags (e.g. from a store) back to choices; unknown flags raise CompileIQError."""
        remaining = list(flags)
        choice: dict[str, int] = {}
        for d in self.dimensions:
            for i, value in enumerate(d.values[1:], start=1):
                if value and all(tok in remaining for tok in value):
                    choice[d.name] = i
                    for tok in value:
                        remaining.remove(tok)
                    break
        remaining = [
            tok
            for tok in remaining  # added by canonical_flags (to a file's flags too)
            if build_flags.parse_token(tok)[1] not in rule_tokens(self.family)
        ]
        if remaining:
            raise CompileIQError(f"flags {remaining} are not part of the {self.family} flag space")
        return self.flagset(choice)


def _canonical_by_file(flags: list[str]) -> list[str]:
    """canonical_flags of the target's tokens, and of each file's (`[path]flag`, the hot-file focus) apart:
    the rules read plain flags, so a file's are unwrapped, ruled and wrapped again."""
    groups: dict[str, list[str]] = {}
    for token in flags:
        path, flag = build_flags.parse_token(token)
        groups.setdefault(path, []).append(flag)
    out: list[str] = []
    for path, group in groups.items():
        out += [build_flags.source_token(path, f) if path else f for f in canonical_flags(group)]
    return out


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def family_for_compiler(language: str, compiler_id: str) -> str:
    if language == "CUDA":
        if compiler_id != "NVIDIA":
            raise CompileIQError(
                f"CUDA compiler '{compiler_id}' is not supported; configure the project with nvcc "
                "(-DCMAKE_CUDA_COMPILER=nvcc)"
            )
        return "nvcc"
    if compiler_id in ("GNU", "Clang", "AppleClang"):
        return "gcc"
    raise CompileIQError(f"{language} compiler '{compiler_id}' has no flag space; use GCC or Clang")


def _read_family(family: str) -> dict[str, Any]:
    path = _DATA_DIR / f"{family}.toml"
    with path.open("rb") as fh:
        return tomllib.load(fh)


@dataclass(frozen=True)
class Rule:
    kind: str  # "drop" or "repair"
    when: tuple[str, ...]
    drop: tuple[str, ...] = ()
    add: tuple[str, ...] = ()
    reason: str = ""


def rules(family: str = "nvcc") -> tuple[Rule, ...]:
    """The interaction rules of a family's packaged catalogue (immutable data: parsed once per process)."""
    return _rules(family)


@functools.cache
def _rules(family: str) -> tuple[Rule, ...]:
    out = []
    for r in _read_family(family).get("rule", ()):
        if r["kind"] not in ("drop", "repair"):
            raise ValueError(f"{family}.toml: unknown rule kind {r['kind']!r}")
        out.append(
            Rule(
                kind=r["kind"],
                when=tuple(r["when"]),
                drop=tuple(r.get("drop", ())),
                add=tuple(r.get("add", ())),
                reason=r.get("reason", ""),
            )
        )
    return tuple(out)


def canonical_flags(flags: tuple[str, ...] | list[str], family: str = "nvcc") -> tuple[str, ...]:
    """The flags as they must reach nvcc, and the identity of the point for the search cache: duplicates
    removed (first kept), redundant or fatal tokens dropped (``--ftz=true`` etc. under ``--use_fast_math``,
    ptxas ``-O`` under ``--Ofast-compile``), repair tokens appended (``--restrict`` after
    ``--extra-device-vectorization``). Two flag sets with the same result build the same code."""
    out = list(dict.fromkeys(flags))
    for rule in rules(family):
        if rule.kind == "drop" and any(t in out for t in rule.when):
            out = [t for t in out if t not in rule.drop]
        elif rule.kind == "repair" and all(t in out for t in rule.when):
            out.extend(t for t in rule.add if t not in out)
    return tuple(out)


def load_space(
    family: str,
    compiler_id: str,
    compiler_version: str,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    arch: str = "",
) -> FlagSpace:
    """The family's space for this compiler (and CUDA architecture, e.g. ``"90"``, when given).

    `include` keeps only the named dimensions (``unsafe_numerics`` names that group); experimental
    dimensions are left out unless named or included with the group name ``experimental`` (alone it adds
    them to the default set). `exclude` drops named dimensions or a whole group."""
    data = _read_family(family)
    names = {d["name"] for d in data["dimension"]} | BUILD_MODE_DIMENSIONS.get(family, set())
    if family == "nvcc":
        names |= {f"host_{d['name']}" for d in _read_family("gcc")["dimension"]}
    for name in (*include, *exclude):
        if name not in names and name not in GROUPS:
            raise CompileIQError(
                f"unknown flag dimension '{name}' for {family}; known: {', '.join(sorted(names))}, {', '.join(GROUPS)}"
            )
    version = _version_tuple(compiler_version)
    kept: list[Dimension] = []
    dropped: list[str] = []
    for d in data["dimension"]:
        name = d["name"]
        why = _left_out(d, data["compilers"], compiler_id, version, include, exclude, arch)
        if why:
            dropped.append(f"{name}: {why}")
            continue
        values = tuple(tuple(v) for v in d["values"])
        if values[0] != ():
            raise ValueError(f"{family}.toml: dimension {name} must start with the empty default")
        kept.append(
            Dimension(
                name=name,
                help=d.get("help", ""),
                values=values,
                unsafe_numerics=bool(d.get("unsafe_numerics", False)),
                relaxes_numerics=bool(d.get("relaxes_numerics", False)),
                experimental=bool(d.get("experimental", False)),
                archs=tuple(int(a) for a in d.get("archs", ())),
                cpu_specific=bool(d.get("cpu_specific", False)),
            )
        )
    if not kept and not (set(include) & BUILD_MODE_DIMENSIONS.get(family, set()) or host_side_named(include)):
        # (a dimension the tune adds itself, device_lto or the host side, may be all that is asked for)
        raise CompileIQError("the flag space is empty after --include-flags/--exclude-flags; allow more flags")
    return FlagSpace(family=family, dimensions=tuple(kept), dropped=tuple(dropped))


def _left_out(
    d: dict[str, Any],
    compilers: list[str],
    compiler_id: str,
    version: tuple[int, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    arch: str,
) -> str:
    """Why load_space leaves a catalogue dimension out ("" when it is kept): the include and exclude lists,
    the compiler, its version, the CUDA architecture."""
    name = d["name"]
    unsafe = bool(d.get("unsafe_numerics", False))
    experimental = bool(d.get("experimental", False))
    archs = tuple(int(a) for a in d.get("archs", ()))
    selective = tuple(n for n in include if n != EXPERIMENTAL_GROUP)
    if (
        selective
        and name not in selective
        and not (UNSAFE_GROUP in selective and unsafe)
        and not (experimental and EXPERIMENTAL_GROUP in include)
    ):
        return "not in the include list"
    if experimental and name not in include and EXPERIMENTAL_GROUP not in include:
        return f"experimental (include it by name or with '{EXPERIMENTAL_GROUP}')"
    if (
        name in exclude
        or (unsafe and UNSAFE_GROUP in exclude)
        or (experimental and EXPERIMENTAL_GROUP in exclude)
        or (bool(d.get("cpu_specific", False)) and HOST_SPECIFIC_GROUP in exclude)
    ):
        return "excluded"
    if compiler_id not in d.get("compilers", compilers):
        return f"not supported by {compiler_id}"
    if "min_version" in d and version < _version_tuple(d["min_version"]):
        return f"needs {compiler_id} >= {d['min_version']}"
    if "max_version" in d and version[: len(_version_tuple(d["max_version"]))] > _version_tuple(d["max_version"]):
        return f"needs {compiler_id} <= {d['max_version']}"
    if arch and archs and int(re.sub(r"\D", "", arch) or 0) not in archs:
        return f"does not apply to sm_{arch}"
    return ""


@functools.cache
def known_tokens(family: str) -> frozenset[str]:
    data = _read_family(family)
    tokens = frozenset(tok for d in data["dimension"] for v in d["values"] for tok in v) | rule_tokens(family)
    if family == "nvcc":  # the host side of CUDA translation units
        tokens |= {HOST_PREFIX + t for t in known_tokens("gcc")}
    return tokens


def numerics_traits(family: str) -> dict[str, tuple[bool, bool]]:
    """(unsafe_numerics, relaxes_numerics) of each dimension name of the family's catalogue ({} when the
    family has none)."""
    try:
        data = _read_family(family)
    except FileNotFoundError:
        return {}
    return {
        d["name"]: (bool(d.get("unsafe_numerics", False)), bool(d.get("relaxes_numerics", False)))
        for d in data["dimension"]
    }


@functools.cache
def rule_tokens(family: str) -> frozenset[str]:
    """Tokens that only interaction rules add (catalogue.canonical_flags), never a dimension."""
    return frozenset(tok for r in _read_family(family).get("rule", ()) for tok in r.get("tokens", ()))


def validate_flags(family: str, flags: list[Any]) -> tuple[str, ...]:
    """The flag grammar: every flag is a string token of the family's catalogue. Anything else (CMake code
    such as ``")`` or ``${...}``, a space, an unknown flag) raises CompileIQError naming the flag."""
    tokens = known_tokens(family)
    for flag in flags:
        if family == "nvcc" and isinstance(flag, str) and _ACF_TOKEN.match(flag) and "/../" not in flag:
            continue
        if not isinstance(flag, str) or not _SAFE_TOKEN.match(flag):
            raise CompileIQError(f"refusing flag {flag!r}: not a plain compiler flag (possible CMake code injection)")
        if flag not in tokens:
            raise CompileIQError(f"refusing flag {flag!r}: not a known {family} flag of compileiq_cmake")
    return tuple(flags)
