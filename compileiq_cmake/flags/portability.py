"""Host-specific flags (`-march=native`, `-mtune=native`, `-mcpu=native`, also as `-Xcompiler=...`): what the
compiler makes of them on this machine, so that a compileiq.toml records the resolved flags and the CPU they were
tuned on instead of a word that means another instruction set on every machine; and the ISA features of a host,
for the configure-time comparison.

GCC: `<cc> -Q --help=target` lists the target options (`-march= znver3`, `-mavx2 [enabled]`); `-march=native` is
rewritten to `-march=<cpu>` plus the `-m<isa>` / `-mno-<isa>` options in which native differs from `-march=<cpu>`
(a CPU newer than the compiler knows, or a virtual machine that hides features), plus the cache sizes the driver
detected (`--param=l1-cache-size=...`, from `<cc> -### -march=native`): the same target options and parameters as
native, so the same code. Clang: `<cc> -### -march=native` names `-target-cpu` and `-target-feature +x/-x`.
The ISA features of a host: the options `-march=native` enables beyond the compiler's default, by its names
(`avx2`, `avx512f`, ...).
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..model.errors import CompileIQError
from .space import HOST_PREFIX

_NATIVE = re.compile(r"^-m(arch|tune|cpu)=native$")
_CPU_NAME = r"[A-Za-z0-9][A-Za-z0-9_.+\-]*"
_FEATURE = r"(?:[a-z]|3dnow)[a-z0-9_.\-]*"  # an ISA extension's switch name (avx2, sse4.2, avx512f, 3dnow)
# -m<name> switches that change the ABI or the code model, not the instruction set: never written by a
# resolution, so never accepted as one (a TOML naming them as "ISA features" would slip them onto the line)
_NOT_ISA = re.compile(
    r"^(red-zone|general-regs-only|soft-float|hard-float|fp-ret-in-387|80387|387|ieee-fp|"
    r"long-double-\w+|stackrealign|rtd|regparm.*|sseregparm|align-.*|accumulate-outgoing-args|"
    r"push-args|ms-bitfields|cmodel.*|abi.*|pc\d+|fpmath.*|tls-.*|stack-.*|indirect-.*|"
    r"function-return.*|omit-leaf-frame-pointer|vzeroupper|direct-extern-access|fentry.*|"
    r"record-mcount|nop-mcount|mcount.*|large-data-threshold.*|force-drap|inline-.*|"
    r"memcpy-strategy.*|memset-strategy.*|branch-cost.*|dump-tune-features|tune-ctrl.*|"
    r"no-.*|x32|lp64|ilp32|fp16-format.*|float-abi.*|unaligned-access|strict-align|"
    r"harden-sls.*|cet-switch|manual-endbr|needed|noreturn-no-callee-saved-registers)$"
)
CACHE_PARAMS = ("l1-cache-size", "l1-cache-line-size", "l2-cache-size")
# The tokens a resolution writes (validated against the entry's record by results/schema.py)
RESOLVED_CPU = re.compile(rf"^-m(arch|tune|cpu)=({_CPU_NAME})$")
RESOLVED_ISA = re.compile(rf"^-m(no-)?({_FEATURE})$")
RESOLVED_PARAM = re.compile(rf"^--param=({'|'.join(CACHE_PARAMS)})=[0-9]+$")
TIMEOUT = 30
_T = TypeVar("_T")


def _core(flag: str) -> str:
    return flag[len(HOST_PREFIX) :] if flag.startswith(HOST_PREFIX) else flag


def is_native(flag: str) -> bool:
    """-march/-mtune/-mcpu=native, also as -Xcompiler=..."""
    return bool(_NATIVE.match(_core(flag)))


@dataclass(frozen=True)
class Resolution:
    flags: tuple[str, ...]  # the flags with each native one replaced by what the compiler picked
    cpu: str  # the tuning CPU (model name)
    features: tuple[str, ...]  # the ISA features the resolved flags need (the compiler's names), sorted
    note: str = ""  # why a native flag could not be resolved (then kept as it is)


@dataclass
class Answers:
    """What compilers said about this host, each question asked once: a tune's entry resolves the flags of
    its target and of every per-file part with one (the same compiler, the same native flags), so the
    compiler is not asked again per part. A question that failed fails alike when asked again."""

    _asked: dict[tuple[str, ...], object] = field(default_factory=dict)

    def ask(self, key: tuple[str, ...], question: Callable[[], _T]) -> _T:
        if key not in self._asked:
            try:
                self._asked[key] = question()
            except CompileIQError as exc:
                self._asked[key] = exc
        answer = self._asked[key]
        if isinstance(answer, CompileIQError):
            raise CompileIQError(str(answer))
        return answer  # type: ignore[return-value]


def _run(compiler: str, args: list[str]) -> str:
    try:
        proc = subprocess.run([compiler, *args], capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileIQError(f"cannot run {compiler}: {exc}") from None
    if proc.returncode != 0:
        raise CompileIQError(f"{compiler} {' '.join(args)} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return proc.stdout + proc.stderr


def gcc_target_options(compiler: str, args: list[str]) -> tuple[dict[str, str], frozenset[str]]:
    """({'-march=': 'znver3', ...}, {'avx2', ...}): the valued target options and the enabled switches."""
    values: dict[str, str] = {}
    enabled = set()
    for line in _run(compiler, [*args, "-Q", "--help=target"]).splitlines():
        m = re.match(r"^\s+(-m\S+?=)\s+(\S+)\s*$", line)
        if m:
            values[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^\s+-m(\S+)\s+\[enabled\]\s*$", line)
        if m:
            enabled.add(m.group(1))
    return values, frozenset(enabled)


def _cc1_tokens(compiler: str, args: list[str]) -> list[str]:
    """The compiler proper's command line as the driver would run it (-###)."""
    text = _run(compiler, ["-###", *args, "-x", "c", "-c", "/dev/null", "-o", "/dev/null"])
    for line in text.splitlines():
        if "cc1" in line or "-cc1" in line:
            try:
                return shlex.split(line)
            except ValueError:
                continue
    return []


def clang_target(tokens: list[str]) -> tuple[str, str, frozenset[str]]:
    """(target cpu, tune cpu, enabled features) of a clang -cc1 command line."""
    cpu = tune = ""
    features: set[str] = set()
    for i, tok in enumerate(tokens[:-1]):
        value = tokens[i + 1]
        if tok == "-target-cpu":
            cpu = value
        elif tok == "-tune-cpu":
            tune = value
        elif tok == "-target-feature" and value[:1] in "+-":
            (features.add if value[0] == "+" else features.discard)(value[1:])
    return cpu, tune, frozenset(features)


def _is_clang(compiler_id: str) -> bool:
    return "Clang" in compiler_id


def enabled_switches(compiler: str, compiler_id: str, args: list[str]) -> frozenset[str]:
    """Every ISA switch (feature) the compiler enables with `args`, by its own names (not a difference)."""
    if _is_clang(compiler_id):
        return clang_target(_cc1_tokens(compiler, args))[2]
    return gcc_target_options(compiler, args)[1]


def host_features(compiler: str, compiler_id: str) -> frozenset[str]:
    """The ISA features of this host by the compiler's names: what -march=native enables beyond its default."""
    if _is_clang(compiler_id):
        return clang_target(_cc1_tokens(compiler, ["-march=native"]))[2] - clang_target(_cc1_tokens(compiler, []))[2]
    return gcc_target_options(compiler, ["-march=native"])[1] - gcc_target_options(compiler, [])[1]


def _resolve_one(kind: str, compiler: str, compiler_id: str) -> list[str]:
    """The tokens that replace -m<kind>=native (kind: arch, tune, cpu)."""
    option = f"-m{kind}="
    if _is_clang(compiler_id):
        cpu, tune, native = clang_target(_cc1_tokens(compiler, [f"{option}native"]))
        name = tune if kind == "tune" else cpu
        if not name or name == "native":
            raise CompileIQError(f"{compiler} does not say which CPU {option}native picks")
        if kind == "tune":
            return [option + name]
        named = clang_target(_cc1_tokens(compiler, [option + name]))[2]
        return (
            [option + name] + [f"-m{f}" for f in sorted(native - named)] + [f"-mno-{f}" for f in sorted(named - native)]
        )
    values, native = gcc_target_options(compiler, [f"{option}native"])
    name = values.get(option, "")
    if not name or name == "native" or not re.fullmatch(_CPU_NAME, name):
        raise CompileIQError(f"{compiler} does not say which CPU {option}native picks")
    if kind == "tune":
        return [option + name]
    named_values, named = gcc_target_options(compiler, [option + name])
    tokens = (
        [option + name] + [f"-m{f}" for f in sorted(native - named)] + [f"-mno-{f}" for f in sorted(named - native)]
    )
    tune = values.get("-mtune=", "")
    if kind == "arch" and tune and tune != named_values.get("-mtune=") and re.fullmatch(_CPU_NAME, tune):
        # a CPU the compiler does not know by name: -march=native tunes for "generic", -march=<name> for <name>
        # (other vector widths, other code): the native tuning is kept
        tokens.append(f"-mtune={tune}")
    cc1 = _cc1_tokens(compiler, [f"{option}native"])
    for i, tok in enumerate(cc1[:-1]):  # the cache sizes the driver detected
        if tok == "--param" and cc1[i + 1].split("=", 1)[0] in CACHE_PARAMS:
            tokens.append(f"--param={cc1[i + 1]}")
    return tokens


def resolve(
    flags: tuple[str, ...], compiler: str, compiler_id: str, cpu: str, answers: Answers | None = None
) -> Resolution | None:
    """None when no flag is host-specific; else the flags with each native one resolved (kept as it is, with a
    note, when the compiler cannot say), the CPU model and the ISA features the flags need. `answers`: what the
    compiler said to earlier calls (each question asked once)."""
    if not any(is_native(f) for f in flags):
        return None
    answers = answers if answers is not None else Answers()
    out: list[str] = []
    notes = []
    for flag in flags:
        if not is_native(flag):
            out.append(flag)
            continue
        prefix = HOST_PREFIX if flag.startswith(HOST_PREFIX) else ""
        native = _NATIVE.match(_core(flag))
        assert native is not None  # (is_native)
        kind: str = native.group(1)
        try:
            out.extend(
                prefix + t
                for t in answers.ask(
                    ("native", compiler, kind), functools.partial(_resolve_one, kind, compiler, compiler_id)
                )
            )
        except CompileIQError as exc:
            notes.append(f"{flag} kept as it is ({exc})")
            out.append(flag)
    try:
        features = tuple(sorted(answers.ask(("features", compiler), lambda: host_features(compiler, compiler_id))))
    except CompileIQError as exc:
        features = ()
        notes.append(f"the ISA features of this CPU are not recorded ({exc})")
    return Resolution(tuple(dict.fromkeys(out)), cpu, features, "; ".join(notes))


def resolved_token_ok(flag: str, features: tuple[str, ...]) -> bool:
    """Whether a flag outside the catalogue is one a resolution writes: -march/-mtune/-mcpu=<cpu>, -m<isa> of
    a recorded feature, -mno-<isa>, a detected cache size (each also as -Xcompiler=...)."""
    core = _core(flag)
    if RESOLVED_CPU.match(core) or RESOLVED_PARAM.match(core):
        return True
    m = RESOLVED_ISA.match(core)
    if not m or _NOT_ISA.match(m.group(2)):
        return False
    return m.group(1) == "no-" or m.group(2) in features


def host_specific(flags: tuple[str, ...] | list[str]) -> list[str]:
    """The flags that make a build specific to a CPU: native ones, and resolved -march/-mcpu/-m<isa> ones."""
    return [f for f in flags if is_native(f) or (RESOLVED_CPU.match(_core(f)) and not _core(f).startswith("-mtune="))]


def compiler_kind(compiler: str) -> str:
    """ "Clang" or "GNU", from the compiler's --version."""
    return "Clang" if "clang" in _run(compiler, ["--version"]).lower() else "GNU"


class HostEntry(Protocol):
    """What HostFeatures reads of a flags-file entry (results.schema.FlagsEntry)."""

    @property
    def language(self) -> str: ...

    @property
    def flags(self) -> tuple[str, ...]: ...

    @property
    def sources(self) -> tuple[dict[str, Any], ...]: ...

    @property
    def cpu_features(self) -> tuple[str, ...]: ...


class HostFeatures:
    """This host's ISA features for the configure-time comparison, per entry language: asked of the
    project's compiler of that language (CUDA: the host compiler nvcc uses), once per compiler; or given
    (`override`, COMPILEIQ_HOST_CPU_FEATURES: simulates a host, for tests)."""

    def __init__(self, compilers: dict[str, str], override: str | None = None):
        self.compilers = compilers
        self.override = override
        self._asked: dict[str, tuple[frozenset[str] | None, str]] = {}

    def _simulated(self) -> bool:
        """Whether the host is simulated (override, or COMPILEIQ_HOST_CPU_FEATURES: the same, for check)."""
        import os

        if self.override is None and os.environ.get("COMPILEIQ_HOST_CPU_FEATURES") is not None:
            self.override = os.environ["COMPILEIQ_HOST_CPU_FEATURES"]
        return self.override is not None

    def _compiler(self, entry: HostEntry) -> str:
        """The compiler to ask for an entry: the project's of its language (CUDA: nvcc's host compiler, else
        g++ or c++ on PATH); "" when there is none."""
        import shutil

        return self.compilers.get("CUDA_HOST" if entry.language == "CUDA" else entry.language) or (
            shutil.which("g++") or shutil.which("c++") or "" if entry.language == "CUDA" else ""
        )

    def __call__(self, entry: HostEntry) -> tuple[frozenset[str] | None, str]:
        if self._simulated() and self.override is not None:
            return (
                frozenset(x for x in re.split(r"[;,\s]+", self.override) if x),
                "COMPILEIQ_HOST_CPU_FEATURES: a simulated host",
            )
        compiler = self._compiler(entry)
        if not compiler:
            return None, f"no {entry.language} compiler to ask"
        if compiler not in self._asked:
            try:
                have = enabled_switches(compiler, compiler_kind(compiler), ["-march=native"])
                self._asked[compiler] = (have, f"as {compiler} -march=native sees this host")
            except CompileIQError as exc:
                self._asked[compiler] = (None, str(exc))
        return self._asked[compiler]

    def needs(self, entry: HostEntry) -> frozenset[str]:
        """The ISA switches the entry's resolved host-specific flags enable, asked of the applying compiler
        (the same compiler as __call__'s -march=native): compared with what -march=native enables on this
        host, independent of either compiler's default (a default of x86-64-v3 neither hides a lack nor makes
        one up). A simulated host (override) or a compiler that cannot say: the recorded cpu_features."""
        if self._simulated():
            return frozenset(entry.cpu_features)
        compiler = self._compiler(entry)
        flags = [
            _core(f)
            for f in [*entry.flags, *(x for p in entry.sources for x in p["flags"])]
            if RESOLVED_CPU.match(_core(f)) or RESOLVED_ISA.match(_core(f))
        ]
        if not compiler or not flags:
            return frozenset(entry.cpu_features)
        try:
            return enabled_switches(
                compiler, compiler_kind(compiler), [f for f in flags if not f.startswith("-mtune=")]
            )
        except CompileIQError:
            return frozenset(entry.cpu_features)
